"""The MCP tools generated from the command table: each tool is a command, its schema the command's fields.

A `ToolSpec` is the doors' `DoorSpec` (the command a tool runs, its names for some fields, the fields it does not
show) with what only MCP presents (door defaults, the JSON it answers with, hints); the arguments, their
descriptions, bounds and choices all come from the command (domain/commands.py), and the call goes through the table
(domain/dispatch.py). Adding a field to a command adds it to its tool, and a command added to the table is a tool of
its own name, with no edit here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import field, frozen
from mcp.types import ToolAnnotations

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_doc, command_fields, command_name
from agent_memory.domain.dispatch import commands
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.door_spec import DoorSpec
from agent_memory.entrypoints.page_views import listing_page_json, page_of, search_page_json

Payload = dict[str, Any]
Render = Callable[[Any, Any, MemoryService], Payload]  # (the use case's outcome, the command, the service) → JSON

LIST_PAGE = 100  # list_memories shows this many memories when the caller gives no limit


@frozen(kw_only=True, eq=False)  # one object per tool, hashed by identity (tool_calls.argument_model caches on it)
class ToolSpec(DoorSpec):
    """One MCP tool: a door spec (the command, the tool's argument names in `names`, …) and what only MCP shows."""

    command: type[c.Asks[Any]]
    title: str
    description: str
    render: Render
    defaults: Mapping[str, Any] = field(factory=dict)  # door defaults, e.g. a listing's page size
    output: str = "view"  # the answer's kind: its schema is mcp_outputs.SCHEMAS[output]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False  # a repeat of the same call changes nothing more (MCP's idempotentHint)
    # other names the tool takes for the `ref` field (spec 002 calls get_memory and update_memory with a path)
    alternates: tuple[str, ...] = ()


def _view(outcome: Any, _command: Any, _service: MemoryService) -> Payload:
    return out.view_json(outcome)


def _listing(outcome: Any, command: Any, _service: MemoryService) -> Payload:
    return listing_page_json(outcome, command.limit, command.offset, compact=True)


def _search(outcome: Any, command: Any, _service: MemoryService) -> Payload:
    return search_page_json(page_of(command, outcome))


def _by(render: Callable[[Any], Payload]) -> Render:
    return lambda outcome, _command, _service: render(outcome)


_PATH_OR_ID = {"ref": "path_or_id"}
_PATH_OR_ID_ALTERNATES = ("path", "id")  # path_or_id, or the one spec 002 names, or the id
_SCOPES = {  # set by imports and batch writers, not by an agent's tool call
    "thread": "set by batch writers, not by an agent's tool call",
    "created_at": "set by imports, not by an agent's tool call",
}
_NAMESPACE_ONLY_TENANTS = {"namespace": "the tool acts in the namespace the server places its caller in"}

SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="add_memory",
        command=c.CreateMemory,
        title="Add a memory",
        description="Create a memory at a path ('category/…/slug'). The store and categories are created if missing. "
        "Fails with DESTINATION_EXISTS if the path is taken (use update_memory then). One memory per fact: when a "
        "live memory of the same namespace and scope already says this, the answer names it under `duplicates`; "
        "update that memory instead of adding twice, or give on_duplicate='update' (or 'skip').",
        render=_view,
        names={"global_": "global"},
        omit=_SCOPES,
        required=frozenset({"path"}),
        wording={"path": c.ADD_PATH},
    ),
    ToolSpec(
        name="get_memory",
        command=c.GetMemory,
        title="Read a memory",
        description="Read one memory (content and metadata, citations always included) by path or id. "
        "Expired memories are hidden unless include_expired is true.",
        render=_view,
        names=_PATH_OR_ID,
        read_only=True,
        idempotent=True,
        alternates=_PATH_OR_ID_ALTERNATES,
    ),
    ToolSpec(
        name="update_memory",
        command=c.UpdateMemory,
        title="Update a memory",
        description="Change a memory's content or metadata by path or id. Omitted fields are kept; "
        "tags and citations given replace the old ones ([] clears); clear_expiry removes the expiry. "
        "An expired memory is refused (MEMORY_EXPIRED) unless include_expired is true.",
        render=_view,
        names={**_PATH_OR_ID, "global_": "global"},
        destructive=True,
        idempotent=True,
        alternates=_PATH_OR_ID_ALTERNATES,
    ),
    ToolSpec(
        name="find_duplicates",
        command=c.FindDuplicates,
        title="Find a memory's near-duplicates",
        description="The live memories of a memory's namespace and scope that say what it says (the rule add_memory "
        "applies, at the embedding model's threshold), most similar first, each with id, path and similarity. "
        "Merge what they say into one with update_memory, then delete the others.",
        render=_by(out.duplicates_json),
        names=_PATH_OR_ID,
        output="duplicates",
        read_only=True,
        idempotent=True,
        alternates=_PATH_OR_ID_ALTERNATES,
    ),
    ToolSpec(
        name="delete_memory",
        command=c.DeleteMemory,
        title="Delete a memory (soft)",
        description="Soft-delete a memory by path or id: it stays stored but is hidden from every read and "
        "search (remove_memory deletes for good). Fails with MEMORY_EXPIRED for an expired memory unless "
        "include_expired is true.",
        render=_by(out.deleted_json),
        names=_PATH_OR_ID,
        destructive=True,
        output="deleted",
        idempotent=True,
        alternates=_PATH_OR_ID_ALTERNATES,
    ),
    ToolSpec(
        name="restore_memory",
        command=c.RestoreMemory,
        title="Restore a deleted memory",
        description="Undo a soft delete (delete_memory, delete_category) by path or id: the memory comes back with "
        "its id and every field. list_memories with include_deleted lists what can be restored. Fails with "
        "DESTINATION_EXISTS if a live memory has taken its path since, and MEMORY_NOT_FOUND once removed for good.",
        render=_view,
        names=_PATH_OR_ID,
        alternates=_PATH_OR_ID_ALTERNATES,
    ),
    ToolSpec(
        name="remove_memory",
        command=c.RemoveMemory,
        title="Remove a memory for good",
        description="Delete a memory for good, by path or id.",
        render=_by(out.removed_json),
        names=_PATH_OR_ID,
        destructive=True,
        output="removed",
        idempotent=True,
        alternates=_PATH_OR_ID_ALTERNATES,
    ),
    ToolSpec(
        name="move_memory",
        command=c.MoveMemory,
        title="Move a memory",
        description="Give a memory a new path. Fails with DESTINATION_EXISTS if the new path is taken, and with "
        "MEMORY_EXPIRED for an expired memory unless include_expired is true.",
        render=_view,
        names={"ref": "from", "destination": "to"},
    ),
    ToolSpec(
        name="reinforce_memory",
        command=c.ReinforceMemory,
        title="Reinforce a memory",
        description="Reset the decay of a memory with decay policy 'reinforceable' (it is being used).",
        render=_view,
        names={"ref": "id"},
    ),
    ToolSpec(
        name="list_memories",
        command=c.ListMemories,
        title="List memories",
        description="List a category's memories (recursively, newest first), one page of them, and its direct "
        "subcategories with counts and descriptions. Omit category for the whole store. Each memory is listed as "
        "path, id, tokens (a size estimate) and updated_at; read one with get_memory. total is how many there are: "
        "page with limit and offset.",
        render=_listing,
        defaults={"limit": LIST_PAGE},
        read_only=True,
        output="listing",
        idempotent=True,
    ),
    ToolSpec(
        name="get_recent_memories",
        command=c.RecentMemories,
        title="Recent memories",
        description="The most recently updated memories, newest first (limit 1–100, default 5).",
        render=_by(out.recent_json),
        read_only=True,
        output="recent",
        idempotent=True,
    ),
    ToolSpec(
        name="search_memories",
        command=c.SearchMemories,
        title="Search memories",
        description="Find memories by meaning and keywords, best first, with optional filters "
        "(agent, project, type, global, tags, namespace, category); only related hits are kept. Each hit has relevance "
        "(0 to 1, the number to read), similarity, confidence and score (the ranker's own); broad says a question "
        "that named no subject got the scope's memories by what matters. Page with limit and offset (has_more says "
        "whether more follow).",
        render=_search,
        names={"path_prefix": "category", "global_": "global"},
        read_only=True,
        output="search",
        idempotent=True,
    ),
    ToolSpec(
        name="prune_memories",
        command=c.PruneMemories,
        title="Prune expired memories",
        description="Delete every expired memory of the store for good; dry_run only lists them.",
        render=_by(out.prune_json),
        destructive=True,
        output="prune",
        idempotent=True,
    ),
    ToolSpec(
        name="reindex_store",
        command=c.ReindexStore,
        title="Re-embed a store",
        description="Re-embed every memory of the store (after an embedding-model change or hand-edited files).",
        render=_by(out.reindex_json),
        output="reindex",
        idempotent=True,
        omit={"progress": "a callback: a tool call answers once, when the store is reindexed"},
    ),
    ToolSpec(
        name="list_stores",
        command=c.ListStores,
        title="List stores",
        description="Every store with its memory count.",
        render=_by(out.stores_json),
        omit=_NAMESPACE_ONLY_TENANTS,
        read_only=True,
        output="stores",
        idempotent=True,
    ),
    ToolSpec(
        name="create_store",
        command=c.CreateStore,
        title="Create a store",
        description="Create an empty store. Fails with DESTINATION_EXISTS if it exists.",
        render=_by(lambda summary: {"name": summary.name, "memory_count": 0, "created": True}),
        output="store_created",
    ),
    ToolSpec(
        name="create_category",
        command=c.CreateCategory,
        title="Create a category",
        description="Create a category (a no-op if it exists), optionally with a description.",
        render=_by(out.category_json),
        names={"category": "path"},
        omit=_NAMESPACE_ONLY_TENANTS,
        output="category",
        idempotent=True,
    ),
    ToolSpec(
        name="set_category_description",
        command=c.DescribeCategory,
        title="Describe a category",
        description="Set a category's description (at most 500 characters).",
        render=_by(out.category_json),
        names={"category": "path"},
        omit=_NAMESPACE_ONLY_TENANTS,
        output="category",
        idempotent=True,
    ),
    ToolSpec(
        name="delete_category",
        command=c.DeleteCategory,
        title="Delete a category",
        description="Delete a category with its subcategories: its memories are soft-deleted (restore_memory brings "
        "each back; memory_count says how many). purge removes them for good instead, soft-deleted ones too.",
        render=lambda summary, command, _service: out.category_deleted_json(summary, purged=command.purge),
        names={"category": "path"},
        destructive=True,
        output="category_deleted",
        idempotent=True,
    ),
)


# table commands no tool offers, each with its reason (every other command of the table is a tool: `tool_specs`)
NOT_TOOLS: Mapping[type[c.Asks[Any]], str] = {
    c.CreateMemories: "its memories are records: an agent creates one memory per add_memory call",
    c.ExportMemories: "a whole-store dump is the operator's (`memory export`), not an agent's tool",
    c.ImportMemories: "its memories and progress are records and a callback (`memory import`)",
    c.StoreStatus: "the operator's health check (`memory status`, REST GET /status), not an agent's",
}


def tool_specs() -> tuple[ToolSpec, ...]:
    """Every tool: the specs above, then one for each command of the table (read now: a command registered after
    import is in it) that no spec presents and NOT_TOOLS does not leave out, presented as it is."""
    presented = {spec.command for spec in SPECS} | set(NOT_TOOLS)
    return (*SPECS, *(_plain_spec(kind) for kind in commands() if kind not in presented))


def _plain_spec(kind: type[c.Asks[Any]]) -> ToolSpec:
    name = command_name(kind)
    return ToolSpec(
        name=name,
        command=kind,
        title=command_doc(kind).split(". ")[0].removesuffix("."),
        description=command_doc(kind),
        render=_by(out.outcome_json),
        names={"global_": "global"} if "global_" in {a.name for a in command_fields(kind)} else {},
        output="any",
    )


# the namespaced agent tools (spec 003), written by hand: they resolve a namespace from LangMem's config keys
AGENT_TOOLS: dict[str, tuple[str, str, bool, bool]] = {  # name: (title, description, read-only, destructive)
    "manage_memory": (
        "Manage a namespaced memory",
        "Create, update or delete a long-term memory in a namespace so it persists across "
        "conversations. create: give content (the id is returned). update: give id and the full new content. "
        "delete: give id. Returns 'created memory <id>', 'updated memory <id>' or 'Deleted memory <id>'. "
        "One memory per fact: a create that repeats a memory of the namespace names it; update that one instead of "
        "adding twice, or give on_duplicate='update' (or 'skip'). "
        "Give the namespace as `namespace`, or `user_id` (→ ['user', id]), or `org_id` and `agent_id`.",
        False,
        True,
    ),
    "search_memory": (
        "Search namespaced memories",
        "Search memories in a namespace and those below it, by meaning and keywords. Returns a JSON "
        "list of {namespace, id, content, metadata, created_at, updated_at, score, key, value}. Give the namespace as "
        "`namespace`, or `user_id`, or `org_id` and `agent_id`.",
        True,
        False,
    ),
}


def tool_names() -> tuple[str, ...]:
    """The name of every tool the MCP server lists, in its order: the two sources `build_mcp_server` builds them
    from (`tool_specs`, read now, then the agent tools)."""
    return (*(spec.name for spec in tool_specs()), *AGENT_TOOLS)


def tool_annotations(title: str, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    """Every hint MCP defines; the world is closed: a tool reads and writes this server's memories only."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


__all__ = [
    "AGENT_TOOLS",
    "NOT_TOOLS",
    "SPECS",
    "ToolSpec",
    "tool_annotations",
    "tool_names",
    "tool_specs",
]
