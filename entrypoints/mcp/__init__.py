"""The MCP door: every command as an MCP tool, with resources and prompts, over stdio or HTTP."""
