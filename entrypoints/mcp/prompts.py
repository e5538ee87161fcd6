"""The MCP door's prompts: `recall` brings the memories on a topic into the conversation, `remember` says how to
store a fact well; each runs its commands through the dispatcher as its caller's tenant, like a tool.

A prompt the client names wrongly, or calls without a required argument or with one it does not take, is an MCP
error saying so (`prompt_problem`); a use case's failure is one whose text is the tool error's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import Field
from returns.result import Failure, Result, Success

from agent_memory.domain import commands as c
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import CategorySummary, SearchResults
from agent_memory.entrypoints.error_table import row

RECALL_LIMIT = 8  # enough context to answer from, few enough to read at a glance

StoreArg = Annotated[str | None, Field(description="The store to use; omit for the default store.")]


def prompt_problem(prompt: Prompt | None, name: str, arguments: Mapping[str, Any] | None) -> str | None:
    """'INVALID_INPUT: …' for an unknown prompt, a missing required argument or one it does not take; else None."""
    if prompt is None:
        return f"INVALID_INPUT: there is no prompt {name!r}; prompts/list names them (recall, remember)."
    given = set(arguments or {})
    takes = {argument.name: argument.required for argument in prompt.arguments or []}
    missing = sorted(argument for argument, required in takes.items() if required and argument not in given)
    unknown = sorted(given - set(takes))
    if not missing and not unknown:
        return None
    problems = [f"{name} needs {', '.join(missing)}"] if missing else []
    problems += [f"{name} does not take {', '.join(unknown)}"] if unknown else []
    return f"INVALID_INPUT: {'; '.join(problems)}; it takes {', '.join(sorted(takes))}."


def _succeeded(outcome: Result[Any, DomainError], error_text: Callable[[DomainError], str]) -> Any:
    match outcome:
        case Success(value):
            return value
        case Failure(error):
            raise MCPError(INVALID_PARAMS if row(error).http_status < 500 else INTERNAL_ERROR, error_text(error))
    raise MCPError(INTERNAL_ERROR, "STORAGE_ERROR: the operation returned no result.")  # pragma: no cover


def recall_text(topic: str, store: str, found: SearchResults) -> str:
    """The recall prompt's message: the best matching memories, compact, and how to use them."""
    if not found.results:
        return (
            f'No memory in store {store!r} matches "{topic}". Go on without recalled context; '
            "add_memory keeps what turns out worth remembering."
        )
    facts = [
        {"path": str(hit.memory.path or hit.memory.id), "content": hit.memory.content, "confidence": hit.confidence}
        for hit in found.results
    ]
    return (
        f'Memories from long-term memory that may bear on "{topic}" (store {store!r}, best match first; '
        "confidence, 0 to 1, is how far each still holds):\n"
        f"{json.dumps(facts, ensure_ascii=False, indent=1)}\n"
        "Use them as context for what follows, trusting higher confidence more; say so where they conflict with "
        "what you are told now. get_memory shows one in full, update_memory corrects one that is out of date."
    )


def remember_text(fact: str, store: str, categories: tuple[CategorySummary, ...]) -> str:
    """The remember prompt's message: the fact, the store's top categories and the conventions to follow."""
    where = f" with store {store!r}" if store else ""
    if categories:
        known = "\n".join(
            f"   - {each.path} ({each.memory_count} memories)" + (f": {each.description}" if each.description else "")
            for each in categories
        )
        reuse = f"3. Reuse the top category that fits; the store has:\n{known}\n"
    else:
        reuse = "3. The store has no categories yet: start one with a plain plural noun ('preferences', 'projects').\n"
    return (
        f"Store this in long-term memory: {fact}\n\n"
        "How to store it well:\n"
        "1. First call search_memories with a few of its keywords: if a memory already says this, or something "
        f"this replaces, change that one with update_memory{where} instead of adding a duplicate.\n"
        f"2. Otherwise call add_memory{where} with a path 'category/slug' or 'category/sub/slug': lowercase words "
        "joined by '-', the slug naming the subject in two to four words, e.g. 'preferences/editor-theme'.\n"
        f"{reuse}"
        "4. Write the content as one self-contained statement that makes sense without this conversation. Set "
        "type ('preference', 'decision', 'fact', …) and tags where they help find it, and expires_at when it "
        "stops being true on a known date."
    )


def add_prompts(
    server: MCPServer[Any],
    service: Callable[[], MemoryService],
    default_store: str,
    run: Callable[[Callable[[], str]], str],
    error_text: Callable[[DomainError], str],
) -> None:
    """Register the prompts on `server`; `service()` is the caller's service, `run` the door's call lock."""

    @server.prompt(
        name="recall",
        title="Recall memories on a topic",
        description=f"The {RECALL_LIMIT} memories that best match a topic (path, content, confidence), "
        "as context for the conversation.",
    )
    def recall(
        topic: Annotated[str, Field(description="What to recall, in natural language or keywords.")],
        store: StoreArg = None,
    ) -> str:
        chosen = store or default_store
        search = c.SearchMemories(query=topic, store=chosen, limit=RECALL_LIMIT, mode="hybrid")
        return run(lambda: recall_text(topic, chosen, _succeeded(dispatch(service(), search), error_text)))

    @server.prompt(
        name="remember",
        title="Remember a fact",
        description="How to store a fact well: check for an existing memory first, then a path in one of the "
        "store's top categories (named in the message), and self-contained content.",
    )
    def remember(
        fact: Annotated[str, Field(description="The fact, preference or decision to keep.")],
        store: StoreArg = None,
    ) -> str:
        top = c.ListMemories(store=store or default_store, limit=1)

        def step() -> str:
            listed = dispatch(service(), top)
            if isinstance(listed, Failure) and listed.failure().code is ErrorCode.STORE_NOT_FOUND:
                return remember_text(fact, store or "", ())  # add_memory makes the store
            return remember_text(fact, store or "", _succeeded(listed, error_text).subcategories)

        return run(step)
