"""The agent-tool door (spec 003): manage_memory and search_memory, plain and as LangChain tools."""
