"""The plain callable tool the agent-tool factories return: a name, a description and schemas agent frameworks read."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from attrs import frozen


@frozen
class MemoryTool:
    """A plain callable tool with the metadata agent frameworks read: name, description, args_schema.

    Call it with the tool arguments and the runtime `config` keyword, e.g.
    `tool(content="x", action="create", config={"user_id": "u-123"})`, or `tool.invoke({...}, config)`.
    Inside a langchain-core run (a LangGraph node, a tool), a call without `config` reads the run's
    config, as LangMem's tools do with `get_config()`. `acall` / `ainvoke` are the native async
    variants (`coroutine` is amanage_memory / asearch_memory): they run the blocking service in a
    worker thread. `typed_schema()` builds the pydantic model `to_langchain_tools` validates with.
    """

    name: str
    description: str
    args_schema: dict[str, Any]
    func: Callable[..., Any]
    coroutine: Callable[..., Awaitable[Any]]
    typed_schema: Callable[[], type[Any]]
    response_format: str = "content"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def invoke(self, arguments: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> Any:
        return self.func(**dict(arguments), config=config)

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        return await self.coroutine(*args, **kwargs)

    async def ainvoke(self, arguments: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> Any:
        return await self.coroutine(**dict(arguments), config=config)
