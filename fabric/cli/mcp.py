"""`fabric mcp`: serve fabric to MCP clients over stdio or streamable HTTP (fabric/integrations/mcp.py).

The `mcp` package is an extra (`pip install "fabric-memory[mcp]"`): imported only when the command runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from ..errors import ValidationError
from .app import app, err_console, handle_errors

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@app.command("mcp")
def mcp_cmd(
    transport: str = typer.Option("stdio", "--transport", "-t", help="stdio (a local client) or http."),
    org: Optional[str] = typer.Option(None, "--org", "-o", envvar="FABRIC_ORG",
                                      help="The org every request acts for (single-org servers)."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP: address to bind."),
    port: int = typer.Option(8765, "--port", help="HTTP: port."),
    allowed_host: Optional[list[str]] = typer.Option(
        None, "--allowed-host", help="HTTP: a Host header to accept, e.g. mcp.example.com:443 (repeat; "
                                     "default: loopback names with the port). Env FABRIC_MCP_ALLOWED_HOSTS, "
                                     "comma-separated."),
    allowed_origin: Optional[list[str]] = typer.Option(
        None, "--allowed-origin", help="HTTP: an Origin to accept from browsers (repeat)."),
    tokens_file: Optional[Path] = typer.Option(
        None, "--tokens-file", exists=True, dir_okay=False,
        help='HTTP, multi-org: a JSON file {"org": "token", ...}; each request sends '
             '"Authorization: Bearer <token>" and acts for that org. Env FABRIC_MCP_TOKENS (the same JSON).'),
    remember_timeout: float = typer.Option(30.0, "--remember-timeout",
                                           help="Seconds `remember` waits for placement before answering pending."),
    metrics_port: Optional[int] = typer.Option(None, "--metrics-port",
                                               help="Serve Prometheus metrics (writes accepted, ...) on this port."),
) -> None:
    """Serve fabric's memory tools to MCP clients (Claude Desktop, Cursor, agent runtimes).

    Example: fabric mcp --org acme          |  fabric mcp --transport http --org acme --port 8765
    """
    from ..api import Fabric

    try:
        from ..integrations.mcp import FabricTools, OrgResolver, build_server, default_allowed, http_app, load_tokens
    except ModuleNotFoundError as exc:
        if exc.name != "mcp" and not (exc.name or "").startswith("mcp."):
            raise
        err_console.print('[red]the MCP server needs the mcp extra:[/] pip install "fabric-memory[mcp]"')
        raise typer.Exit(1) from None

    with handle_errors():
        if transport not in ("stdio", "http"):
            raise ValidationError("transport", f"use stdio or http, not {transport!r}")
        tokens = load_tokens(tokens_file.read_text() if tokens_file else os.environ.get("FABRIC_MCP_TOKENS"))
        if tokens and transport == "stdio":
            raise ValidationError("tokens", "a stdio server serves one local client: give --org, not tokens")
        if tokens and org:
            raise ValidationError("org", "a multi-org server takes the org from each request's token; drop --org")
        if not tokens and transport == "http" and host not in LOOPBACK:
            raise ValidationError("host", f"binding {host} without tokens would let anyone who reaches it act "
                                          f"for the org; configure FABRIC_MCP_TOKENS or --tokens-file")
        resolver = OrgResolver(org=None if tokens else (org or "default"), tokens=tokens)
        tools = FabricTools(connect=Fabric.connect, resolver=resolver, remember_timeout=remember_timeout)
        if metrics_port:  # this process's counters; the store-wide gauges are the workers'
            from .. import metrics

            metrics.serve(metrics_port)
        server = build_server(tools)
        if transport == "stdio":
            try:
                server.run("stdio")
            finally:
                tools.close()
            return
        import uvicorn

        hosts, origins = default_allowed(host, port)
        env_hosts = [h.strip() for h in os.environ.get("FABRIC_MCP_ALLOWED_HOSTS", "").split(",") if h.strip()]
        asgi = http_app(server, tools, allowed_hosts=allowed_host or env_hosts or hosts,
                        allowed_origins=allowed_origin or origins)
        tools.fab  # connect (and migrate) before the port opens  # noqa: B018
        try:
            uvicorn.run(asgi, host=host, port=port, log_level=os.environ.get("FABRIC_LOG_LEVEL", "warning").lower())
        finally:
            tools.close()
