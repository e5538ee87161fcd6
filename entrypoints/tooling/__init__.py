"""What the doors that offer tools share (the agent tools, MCP, LangGraph): tool errors, LangMem's calls and filters."""
