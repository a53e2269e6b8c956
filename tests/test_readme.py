"""The README as a newcomer follows it: every Python snippet imports only what the install line of
its section installs (`pip install -e .`, or `pip install "fabric-memory[extra]"` where the section
names one)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata, util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sections() -> list[tuple[str, str]]:
    """(heading, text) of each `## ` section of the README."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2]))


def snippet_modules(code: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def requirement_name(req: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def installed_closure(names: set[str]) -> set[str]:
    """These distributions and everything they require (extras left out), as installed here."""
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        todo += [requirement_name(r) for r in requires if "extra ==" not in r]
    return seen


def owner(module: str) -> str | None:
    """The installed distribution whose files hold `module` (a namespace package such as `langgraph`
    is shared by several: the submodule decides)."""
    spec = util.find_spec(module)
    origin = Path(spec.origin).resolve() if spec and spec.origin else None
    for name in metadata.packages_distributions().get(module.split(".")[0], []):
        dist = metadata.distribution(name)
        for f in dist.files or []:
            if origin is not None and Path(dist.locate_file(f)).resolve() == origin:
                return dist.metadata["Name"].lower().replace("_", "-")
    return None


def test_every_python_snippet_imports_only_what_its_section_installs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {requirement_name(r) for r in project["dependencies"]}
    checked = 0
    for heading, text in sections():
        extras = set(re.findall(r'fabric-memory\[(\w+)\]', text))
        allowed = installed_closure(base | {requirement_name(r) for e in extras
                                            for r in project["optional-dependencies"][e]})
        for code in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL):
            checked += 1
            for module in sorted(snippet_modules(code)):
                top = module.split(".")[0]
                if top == "fabric" or top in sys.stdlib_module_names:
                    continue
                dist = owner(module)
                assert dist in allowed, (
                    f"README section {heading!r} imports {module} (from {dist}), which "
                    f"{'pip install ' + repr(sorted(extras)) if extras else 'the base install'} does not install")
    assert checked >= 3  # the library, AsyncFabric and LangGraph snippets


def test_the_library_table_gives_each_call_as_its_signature_is():
    """Every `name(arg, kw=default, ...)` in the README's table of Fabric calls names parameters the
    method has, with the defaults it has (`drain(org=None)` was documented; its default is "default")."""
    import inspect

    from fabric import Fabric

    text = dict(sections())["The library"]
    rows = re.findall(r"^\| `(\w+)\((.*?)\)`", text, flags=re.MULTILINE)
    assert len(rows) >= 15
    for name, args in rows:
        params = inspect.signature(getattr(Fabric, name)).parameters
        for arg in (a.strip() for a in args.split(",")):
            if arg in ("", "*", "**settings"):
                continue
            pname, _, default = (part.strip() for part in arg.partition("="))
            assert pname in params, f"{name}() has no parameter {pname}"
            if default and default != "...":
                assert params[pname].default == ast.literal_eval(default), f"{name}({pname}=...) default"
