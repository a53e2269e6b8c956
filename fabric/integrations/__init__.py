"""Where agent frameworks plug in: MCP (mcp.py)."""
