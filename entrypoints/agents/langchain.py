"""The agent tools as LangChain StructuredTools: pydantic argument models, mistakes as error ToolMessages.

Imported only by `to_langchain_tools` (the `langchain` extra): nothing here loads with agent_memory.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agent_memory.domain.duplicates import DUPLICATE_POLICIES
from agent_memory.entrypoints.agents.descriptions import MAX_WINDOW, ON_DUPLICATE_HELP, default_action
from agent_memory.entrypoints.agents.memory_tool import MemoryTool
from agent_memory.entrypoints.tooling.langmem_filters import FILTER_HELP
from agent_memory.entrypoints.tooling.tool_errors import MemoryToolError

__all__ = ["manage_arguments", "search_arguments", "structured_tool"]

_STRICT = ConfigDict(extra="forbid")  # an unknown argument is an error, never dropped


def manage_arguments(permitted: Sequence[str], content_type: Any = str) -> type[BaseModel]:
    """manage_memory's arguments: `action` is one of the permitted actions, defaulting to create when permitted."""
    action_type: Any = Literal[tuple(permitted)]
    content_help = "The memory's text. Required for create and update."
    if content_type is not str:
        content_help = (
            f"The memory, as a {getattr(content_type, '__name__', 'structure')}. Required for create and update."
        )
    fields: dict[str, Any] = {
        "content": (content_type | None, Field(None, description=content_help)),
        "action": (action_type, Field(default_action(permitted), description="What to do.")),
    }
    if any(action in permitted for action in ("create", "update")):
        fields["type"] = (
            str | None,
            Field(
                None, description="What kind of memory, e.g. 'preference' (search_memory's filter calls it category)."
            ),
        )
        fields["tags"] = (
            list[str] | None,
            Field(None, description="Labels to find the memory by (update: replaces them; [] clears)."),
        )
    if "create" in permitted:
        fields["on_duplicate"] = (Literal[DUPLICATE_POLICIES] | None, Field(None, description=ON_DUPLICATE_HELP))
    if any(action in permitted for action in ("update", "delete")):
        fields["id"] = (
            str | None,
            Field(None, description="The id of the memory to update or delete. Omit when creating."),
        )
    model: type[BaseModel] = create_model("ManageMemoryArguments", __config__=_STRICT, **fields)
    return model


def search_arguments() -> type[BaseModel]:
    """search_memory's arguments, with the bounds the tool checks."""
    model: type[BaseModel] = create_model(
        "SearchMemoryArguments",
        __config__=_STRICT,
        query=(str, Field(description="What to look for, in natural language or keywords.")),
        limit=(Annotated[int, Field(ge=1, le=MAX_WINDOW, strict=True)], Field(10, description="Results to return.")),
        offset=(Annotated[int, Field(ge=0, strict=True)], Field(0, description="Results to skip (paging).")),
        filter=(dict[str, Any] | None, Field(None, description=FILTER_HELP)),
    )
    return model


def validation_text(fields: Sequence[str]) -> Any:
    """What a model reads when its arguments do not fit: each problem, and the nearest valid argument name."""

    def describe(error: ValidationError | Any) -> str:
        problems = []
        for item in error.errors():
            where = ".".join(str(part) for part in item["loc"]) or "arguments"
            if item["type"] == "extra_forbidden":
                nearest = difflib.get_close_matches(where, fields, n=1)
                hint = f", did you mean {nearest[0]!r}?" if nearest else ""
                problems.append(f"unknown argument {where!r}{hint} (arguments: {', '.join(fields)})")
            else:
                problems.append(f"{where}: {item['msg']}")
        return "INVALID_INPUT: " + "; ".join(problems) + "."

    return describe


def structured_tool(tool: MemoryTool) -> BaseTool:
    """One MemoryTool as a StructuredTool: typed arguments, the runnable's config passed on, a native coroutine."""

    def run(config: RunnableConfig, **arguments: Any) -> Any:
        try:
            return tool.func(**arguments, config=_plain(config))
        except MemoryToolError as error:
            raise ToolException(str(error)) from error

    async def arun(config: RunnableConfig, **arguments: Any) -> Any:
        try:
            return await tool.coroutine(**arguments, config=_plain(config))
        except MemoryToolError as error:
            raise ToolException(str(error)) from error

    run.__name__, arun.__name__ = tool.name, f"a{tool.name}"
    schema = tool.typed_schema()
    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=tool.name,
        description=tool.description,
        args_schema=schema,
        response_format="content_and_artifact" if tool.response_format == "content_and_artifact" else "content",
        handle_tool_error=True,  # the ToolException text, with status="error"
        handle_validation_error=validation_text(list(schema.model_fields)),
    )


def _plain(config: RunnableConfig | None) -> Mapping[str, Any] | None:
    """The part of a RunnableConfig a namespace may read: its `configurable` keys (not callbacks, tags, …)."""
    return None if config is None else {"configurable": dict(config.get("configurable") or {})}
