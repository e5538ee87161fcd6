"""What the HTTP doors (REST, MCP over HTTP) share: the safety checks and uvicorn's protocol."""
