"""The MCP tools, one module per family; each registers its tools on a server."""
