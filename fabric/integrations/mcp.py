"""fabric as an MCP server (the `mcp` Python SDK 2.x): `fabric mcp --transport stdio|http`.

The org never comes from the model. A stdio server (one local client) and a single-org HTTP server
act for the org they were started with (`--org` / FABRIC_ORG). A multi-org HTTP server takes the
org from the bearer token of each request, matched against the operator's map of org -> token
(FABRIC_MCP_TOKENS or --tokens-file); a request with a missing or unknown token is refused with
401 before it reaches any tool, and the tools resolve the org from the same header again.

Times are ISO-8601 strings with an offset; a time without one is refused with a message that says
so. `remember` waits for the write's placement (up to a timeout) and returns the write id, its
status and the decision, never a bare "queued".
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import (
    TYPE_CHECKING, Annotated, Any, AsyncIterator, Callable, Iterable, Iterator, Literal, Mapping, TypedDict,
)
from uuid import UUID

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from pydantic import Field

from ..errors import FabricError, NotFound, PlacementParked, PlacementTimeout, ValidationError
from ..types import DecisionRecord, Memory, Placement, as_uuid, parse_time

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ..api import Fabric

log = logging.getLogger(__name__)

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                           open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                              open_world_hint=False)

Time = Annotated[str | None, Field(description="ISO-8601 time WITH a UTC offset, e.g. 2024-06-01T00:00:00Z "
                                               "or 2024-06-01T09:00:00+02:00; omitted means now")]
KnownAt = Annotated[str | None, Field(description="ISO-8601 time with offset: answer as the store believed then "
                                                  "(the audit question); omitted means now")]


class OrgRefused(FabricError):
    """A request carries no token, or one that maps to no org."""


@dataclass
class OrgResolver:
    """Maps a request to the org it may act for. `tokens` (org -> token) makes it multi-org."""

    org: str | None = None
    tokens: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.tokens and not self.org:
            raise ValidationError("org", "an MCP server needs an org (--org / FABRIC_ORG) or a token map")
        if len(set(self.tokens.values())) != len(self.tokens):
            raise ValidationError("tokens", "two orgs share a token; give every org its own")

    @property
    def multi_org(self) -> bool:
        return bool(self.tokens)

    def org_for(self, headers: Mapping[str, str] | None) -> str:
        if not self.tokens:
            return self.org  # type: ignore[return-value]
        auth = (headers or {}).get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise OrgRefused("missing bearer token: send `Authorization: Bearer <your org's token>`")
        for org, expected in self.tokens.items():
            if hmac.compare_digest(token.strip().encode(), expected.encode()):
                return org
        raise OrgRefused("unknown token: it matches no org this server was configured with")


def load_tokens(text: str | None) -> dict[str, str]:
    """A JSON object {org: token}; the operator's configuration, never the model's."""
    if not text:
        return {}
    try:
        tokens = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError("tokens", f"not JSON ({exc.msg}); expected {{\"org\": \"token\", ...}}") from None
    if not isinstance(tokens, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and len(v) >= 16
                                               for k, v in tokens.items()):
        raise ValidationError("tokens", "expected {\"org\": \"token\", ...} with tokens of 16+ characters")
    return tokens


# ---------------------------------------------------------------- JSON for the model

def _plain(value: Any) -> Any:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def memory_json(m: Memory) -> dict[str, Any]:
    out = {k: _plain(v) for k, v in m.to_dict().items() if k not in ("context", "ranks", "decision_id")}
    if m.context:
        out["context"] = [memory_json(c) for c in m.context]
    return out


def placement_json(p: Placement) -> dict[str, Any]:
    return {"write_id": str(p.write_id), "status": "duplicate" if p.decision == "duplicate" else "placed",
            "decision": p.decision, "memory_id": str(p.memory_id), "target_id": _plain(p.target_id),
            "decision_id": str(p.decision_id), "reason": p.reason, "validator": p.validator,
            "out_of_order": p.out_of_order}


def decision_json(d: DecisionRecord) -> dict[str, Any]:
    return {k: _plain(getattr(d, k)) for k in d.__dataclass_fields__}


@dataclass
class FabricTools:
    """The state the tools share: how to reach the store, and how to tell the org."""

    connect: Callable[[], Fabric]
    resolver: OrgResolver
    remember_timeout: float = 30.0
    _fab: Fabric | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def fab(self) -> Fabric:
        with self._lock:
            if self._fab is None:
                self._fab = self.connect()
            return self._fab

    def close(self) -> None:
        with self._lock:
            if self._fab is not None:
                self._fab.close()
                self._fab = None

    def org(self, ctx: Context) -> str:
        try:
            return self.resolver.org_for(ctx.headers)
        except OrgRefused as exc:
            raise ToolError(str(exc)) from None



class _AsOf(TypedDict):
    valid_at: datetime | None
    known_at: datetime | None


def _as_of(valid_at: str | None, known_at: str | None) -> _AsOf:
    """A read tool's two times, parsed: true in the world at valid_at, as the store knew it at known_at."""
    return {"valid_at": parse_time("valid_at", valid_at), "known_at": parse_time("known_at", known_at)}


def _memories(memories: Iterable[Memory]) -> dict[str, Any]:
    return {"memories": [memory_json(m) for m in memories]}


@contextmanager
def tool_errors() -> Iterator[None]:
    """fabric's errors become tool errors the model can read (and act on); nothing else leaks."""
    try:
        yield
    except ToolError:
        raise
    except ValidationError as exc:
        raise ToolError(f"invalid {exc.field}: {str(exc).split(': ', 1)[-1]} (nothing was written)") from None
    except NotFound as exc:
        raise ToolError(f"not found: {exc}") from None
    except FabricError as exc:
        raise ToolError(str(exc)) from None


def build_server(tools: FabricTools, *, name: str = "fabric") -> MCPServer:
    """The MCP server: ten tools over one fabric store, each acting for the org of its request."""

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        # Connect inside the transport (stdio has moved fd 1 off the wire by now, so a worker started
        # by the embedded default cannot write into the protocol stream).
        await anyio.to_thread.run_sync(lambda: tools.fab)
        yield

    server = MCPServer(name, instructions=(
        "fabric is a bi-temporal memory: every memory has valid time (when it was true in the world) and "
        "transaction time (when the store believed it). Use current_value for an exact (subject, relation) "
        "lookup, search_memory for free text, and valid_at / known_at for the past. Write with remember; "
        "times are ISO-8601 with a UTC offset."), lifespan=lifespan, log_level="WARNING")

    @server.tool(annotations=ADDITIVE)
    def remember(
        ctx: Context,
        content: Annotated[str, Field(description="The fact, in a sentence.")],
        subject: Annotated[str | None, Field(description="Structured key: who or what the fact is about "
                                                         "(give with relation).")] = None,
        relation: Annotated[str | None, Field(description="Structured key: the attribute, e.g. employer, "
                                                          "city (give with subject).")] = None,
        value: Annotated[str | None, Field(description="Structured key: the attribute's value.")] = None,
        valid_from: Time = None,
        valid_to: Annotated[str | None, Field(description="ISO-8601 time with offset when the fact stopped "
                                                          "being true; omitted means still true")] = None,
        source: Annotated[str | None, Field(description="Where the fact came from (provenance).")] = None,
        kind: Annotated[str | None, Field(description="Kind, e.g. fact, preference, episodic.")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Free-form JSON object kept with it.")] = None,
    ) -> dict[str, Any]:
        """Store a fact in long-term memory and wait until it is placed in the memory tree.

        Returns the write id, its status (placed, duplicate, pending if placement took longer than the
        server's timeout - check again with write_status - or parked) and the decision: new_branch,
        child_update (a refinement), contradiction_fork (it supersedes an older version, which stays in
        history) or duplicate (already known; memory_id is the memory it repeats). A fact that contradicts
        a newer one is kept as history (out_of_order) and does not replace it."""
        org = tools.org(ctx)
        with tool_errors():
            receipt = tools.fab.write(content, org=org, subject=subject, relation=relation, value=value,
                                      valid_from=parse_time("valid_from", valid_from),
                                      valid_to=parse_time("valid_to", valid_to), source=source, kind=kind,
                                      metadata=metadata)
            return _settled(tools, receipt.id, org, tools.remember_timeout)

    @server.tool(annotations=READ_ONLY)
    def write_status(ctx: Context, write_id: Annotated[str, Field(description="The id remember returned.")]
                     ) -> dict[str, Any]:
        """Where a write stands now: pending, placed, duplicate or parked, with its decision."""
        org = tools.org(ctx)
        with tool_errors():
            return _settled(tools, as_uuid("write_id", write_id), org, 0)

    @server.tool(annotations=READ_ONLY)
    def search_memory(
        ctx: Context,
        query: Annotated[str, Field(description="What to look for, in words.")],
        k: Annotated[int, Field(ge=1, le=50, description="How many memories to return.")] = 10,
        valid_at: Time = None,
        known_at: KnownAt = None,
        include_superseded: Annotated[bool, Field(description="Also return versions that were replaced.")] = False,
        context: Annotated[int, Field(ge=0, le=10, description="Add up to N neighbours on each hit's "
                                                               "branch.")] = 0,
    ) -> dict[str, Any]:
        """Find the memories that best match a question among those true at valid_at (default now) as
        known at known_at (default now), best first. Superseded (stale) versions are left out unless
        include_superseded."""
        org = tools.org(ctx)
        with tool_errors():
            return _memories(tools.fab.search(query, org=org, k=k, include_superseded=include_superseded,
                                              context=context, **_as_of(valid_at, known_at)))

    @server.tool(annotations=READ_ONLY)
    def current_value(
        ctx: Context,
        subject: Annotated[str, Field(description="Who or what, e.g. 'Ada Moreau'.")],
        relation: Annotated[str, Field(description="The attribute, e.g. 'employer'.")],
        valid_at: Time = None,
        known_at: KnownAt = None,
    ) -> dict[str, Any]:
        """The value of (subject, relation) at valid_at as known at known_at: an exact lookup, no
        similarity search. Use it to check whether a retrieved fact is stale."""
        org = tools.org(ctx)
        with tool_errors():
            m = tools.fab.current_value(subject, relation, org=org, **_as_of(valid_at, known_at))
            return {"found": m is not None, "memory": memory_json(m) if m else None}

    @server.tool(annotations=READ_ONLY)
    def memory_history(ctx: Context, memory_id: Annotated[str, Field(description="A memory id.")]
                       ) -> dict[str, Any]:
        """The supersession chain through a memory, oldest first: every version of that fact."""
        org = tools.org(ctx)
        with tool_errors():
            return _memories(tools.fab.history(memory_id, org=org))

    @server.tool(annotations=READ_ONLY)
    def belief_state(
        ctx: Context,
        valid_at: Time = None,
        known_at: KnownAt = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="At most this many memories.")] = 100,
    ) -> dict[str, Any]:
        """Everything the store held as true at valid_at, as known at known_at ("what did we know at T")."""
        org = tools.org(ctx)
        with tool_errors():
            held = tools.fab.belief_state(org=org, **_as_of(valid_at, known_at))
            return {**_memories(held[:limit]), "total": len(held)}

    @server.tool(annotations=READ_ONLY)
    def walk_memory(
        ctx: Context,
        root_id: Annotated[str, Field(description="The memory to start from (its root_id for a whole branch).")],
        max_depth: Annotated[int | None, Field(ge=0, le=1000, description="How deep to go.")] = None,
        include_superseded: Annotated[bool, Field(description="Also return replaced versions.")] = False,
        valid_at: Time = None,
        known_at: KnownAt = None,
    ) -> dict[str, Any]:
        """The branch of the memory tree under a memory: refinements below it, walked through replaced
        versions (left out of the result unless include_superseded)."""
        org = tools.org(ctx)
        with tool_errors():
            return _memories(tools.fab.walk(root_id, org=org, max_depth=max_depth,
                                            include_superseded=include_superseded, **_as_of(valid_at, known_at)))

    @server.tool(annotations=DESTRUCTIVE)
    def retract_memory(
        ctx: Context,
        memory_id: Annotated[str, Field(description="The memory that was wrong.")],
        reason: Annotated[str, Field(description="Why it was wrong (kept in the audit log).")],
    ) -> dict[str, Any]:
        """The store learns a memory was wrong: it stops being believed from now on, and what it had
        replaced is current again. Reads with known_at before now still see the old belief."""
        org = tools.org(ctx)
        with tool_errors():
            decision_id = tools.fab.retract(memory_id, org=org, reason=reason)
            return {"retracted": memory_id, "decision_id": str(decision_id)}

    @server.tool(annotations=READ_ONLY)
    def list_decisions(
        ctx: Context,
        since: Annotated[str | None, Field(description="ISO-8601 time with offset: only decisions after it")] = None,
        kind: Annotated[Literal["duplicate", "child_update", "contradiction_fork", "new_branch"] | None,
                        Field(description="Only placements of this kind.")] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
    ) -> dict[str, Any]:
        """The decision log, newest first: every placement (with the validator's reason and confidence),
        revert, retraction and replay."""
        org = tools.org(ctx)
        with tool_errors():
            rows = tools.fab.decisions(org=org, since=parse_time("since", since), kind=kind, limit=limit)
            return {"decisions": [decision_json(d) for d in rows]}

    @server.tool(annotations=DESTRUCTIVE)
    def revert_decision(
        ctx: Context,
        decision_id: Annotated[str, Field(description="A placement decision from list_decisions.")],
        reason: Annotated[str, Field(description="Why it was wrong.")] = "reverted through MCP",
    ) -> dict[str, Any]:
        """Undo a placement (say, a wrong contradiction): what it superseded is current again. Logged as a
        new event; history keeps both."""
        org = tools.org(ctx)
        with tool_errors():
            event_id = tools.fab.revert(decision_id, org=org, reason=reason)
            return {"reverted": decision_id, "decision_id": str(event_id)}

    return server


def _settled(tools: FabricTools, write_id: UUID, org: str, timeout: float) -> dict[str, Any]:
    try:
        return placement_json(tools.fab.wait(write_id, timeout, org=org))
    except PlacementTimeout as exc:
        return {"write_id": str(write_id), "status": "pending", "decision": None,
                "message": f"accepted and stored durably, not placed yet: {exc}. Check with write_status."}
    except PlacementParked as exc:
        return {"write_id": str(write_id), "status": "parked", "decision": None, "error": exc.error}


# ---------------------------------------------------------------- HTTP

class RequireOrgToken:
    """ASGI middleware: on a multi-org server, /mcp requests without a valid org token get 401."""

    def __init__(self, app: ASGIApp, resolver: OrgResolver, path: str = "/mcp"):
        self.app, self.resolver, self.path = app, resolver, path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.resolver.multi_org and scope["path"].startswith(self.path):
            from starlette.datastructures import Headers
            from starlette.responses import JSONResponse

            try:
                self.resolver.org_for(Headers(scope=scope))
            except OrgRefused as exc:
                response = JSONResponse({"error": str(exc)}, status_code=401,
                                        headers={"WWW-Authenticate": 'Bearer realm="fabric"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(server: MCPServer, tools: FabricTools, *, allowed_hosts: list[str], allowed_origins: list[str]
             ) -> ASGIApp:
    """Streamable HTTP at /mcp, GET /health, Host / Origin allow-lists, org tokens."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> JSONResponse:
        def ping() -> None:
            with tools.fab.pool.connection() as conn:
                conn.execute("SELECT 1")

        try:
            await anyio.to_thread.run_sync(ping)
        except Exception as exc:  # the probe reports, it does not crash
            return JSONResponse({"status": "unavailable", "error": type(exc).__name__}, status_code=503)
        return JSONResponse({"status": "ok"})

    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts,
                                         allowed_origins=allowed_origins)
    return RequireOrgToken(server.streamable_http_app(transport_security=security), tools.resolver)


def default_allowed(host: str, port: int) -> tuple[list[str], list[str]]:
    """Loopback names (and the bound host) with the port: what a local client sends as Host."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    if host not in ("0.0.0.0", "::"):
        names.add(f"[{host}]" if ":" in host else host)
    hosts = sorted(f"{n}:{port}" for n in names)
    return hosts, sorted(f"http://{h}" for h in hosts)
