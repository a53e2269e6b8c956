"""Where agent frameworks plug in (optional extras): MCP (`fabric.integrations.mcp`), LangGraph
(`fabric.integrations.langgraph`)."""
