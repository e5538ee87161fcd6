"""The LangGraph door: a BaseStore over the service, so LangGraph and LangMem keep their tools."""
