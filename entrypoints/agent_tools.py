"""The agent-tool door (spec 003): manage_memory and search_memory factories, namespaced per call."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import frozen
from returns.result import Failure, Result

from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.context import is_memory_id
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory, ScoredMemory
from agent_memory.domain.namespaces import ConfigurationError, resolve_namespace
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.door_words import for_door
from agent_memory.entrypoints.json_codec import memory_json, parse_iso

__all__ = [
    "ACTIONS",
    "ConfigurationError",
    "MemoryTool",
    "MemoryToolError",
    "create_manage_memory_tool",
    "create_search_memory_tool",
    "error_text",
    "run_manage",
    "run_search",
    "to_langchain_tools",
]

ACTIONS = ("create", "update", "delete")
RESPONSE_FORMATS = ("content", "content_and_artifact")
MAX_WINDOW = 1000  # limit + offset, the most a search can reach (the service's MAX_SEARCH_LIMIT)


# --- errors ------------------------------------------------------------------------------------


def error_text(error: DomainError) -> str:
    """'CODE: message (path p)' with the cause when there is one: what every tool door shows a model."""
    text = f"{error.code.value}: {error.message}"
    if error.path and error.path not in error.message:
        text += f" ({'id' if is_memory_id(error.path) else 'path'} {error.path})"
    if error.cause:
        text += f"; {error.cause}"
    return text


class MemoryToolError(ValueError):
    """A tool call the model can correct. str() is 'CODE: message', e.g. 'INVALID_INPUT: update needs an id'."""

    def __init__(self, code: ErrorCode, message: str, *, text: str | None = None) -> None:
        super().__init__(text or f"{code.value}: {message}")
        self.code = code
        self.message = message

    @classmethod
    def from_domain(cls, error: DomainError) -> MemoryToolError:
        worded = for_door(error, "python")
        return cls(worded.code, worded.message, text=error_text(worded))


def _invalid(message: str) -> MemoryToolError:
    return MemoryToolError(ErrorCode.INVALID_INPUT, message)


def _ok(result: Result[Any, DomainError]) -> Any:
    """The success value, or the domain error raised as a MemoryToolError (a ValueError)."""
    if isinstance(result, Failure):
        raise MemoryToolError.from_domain(result.failure())
    return result.value_or(None)


# --- manage ------------------------------------------------------------------------------------


def run_manage(
    service: MemoryService,
    namespace: tuple[str, ...],
    *,
    content: str | None = None,
    action: str = "create",
    id: str | None = None,
    store: str | None = None,
    permitted: Sequence[str] = ACTIONS,
    type: str | None = None,
    tags: Sequence[str] | None = None,
) -> str:
    """Create, update or delete one memory inside `namespace`; returns the spec 003 sentence. `type` (what
    search_memory's filter calls category, e.g. 'preference') and `tags` are set on create and, given, on update."""
    _check_action(action, permitted)
    if action == "create":
        if id is not None:
            raise _invalid(
                f"create makes a new memory and takes no id (got {id}): omit id, "
                "or use action='update' to change an existing memory."
            )
        if content is None:
            raise _invalid("create needs content: the text of the memory to store.")
        labels = _tags(tags)
        new = CreateMemory(content=content, namespace=namespace, store=store, type=type or "", tags=labels or ())
        view = _ok(service.create(new))
        return f"created memory {view.memory.id}"
    if id is None or not str(id).strip():
        raise _invalid(f"{action} needs the id of the memory (as returned by create or search_memory).")
    ref = str(id).strip()
    if action == "update":
        if content is None:
            raise _invalid("update needs content: the full new text of the memory.")
        command = UpdateMemory(ref=ref, content=content, namespace=namespace, store=store, type=type, tags=_tags(tags))
        view = _guarded(service.update(command), ref, namespace)
        return f"updated memory {view.memory.id}"
    deleted = _guarded(service.delete(ref, store=store, namespace=namespace), ref, namespace)  # soft (decision 13)
    return f"Deleted memory {deleted.id}"


def _tags(raw: object) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not all(isinstance(t, str) for t in raw):
        raise _invalid(f"tags must be a list of strings, got {raw!r}.")
    return tuple(raw)


def _check_action(action: str, permitted: Sequence[str]) -> None:
    if action not in ACTIONS:
        raise _invalid(f"Unknown action {action!r}: use one of {', '.join(permitted)}.")
    if action not in permitted:
        raise _invalid(f"The {action!r} action is not permitted for this tool; permitted: {', '.join(permitted)}.")


def _guarded(result: Result[Any, DomainError], ref: str, namespace: tuple[str, ...]) -> Any:
    """A memory outside the caller's namespace reads as not found: tenants never learn of each other."""
    if isinstance(result, Failure) and result.failure().code is ErrorCode.MEMORY_NOT_FOUND:
        raise MemoryToolError(
            ErrorCode.MEMORY_NOT_FOUND,
            f"No memory {ref} in namespace {list(namespace)}: use an id returned by search_memory or create.",
        )
    return _ok(result)


# --- search ------------------------------------------------------------------------------------


def run_search(
    service: MemoryService,
    namespace: tuple[str, ...],
    *,
    query: str,
    limit: int = 10,
    offset: int = 0,
    filter: Mapping[str, Any] | None = None,
    store: str | None = None,
) -> tuple[str, list[Memory]]:
    """Hybrid search within `namespace` and its sub-namespaces; (JSON list of facts, the memories)."""
    _check_window(limit, offset)
    plan = _plan_filter(filter)
    window = offset + limit
    want = window if not plan.residual else min(max(window * 4, 40), MAX_WINDOW)
    while True:
        results = _ok(service.search(_search_command(query, namespace, store, want, plan.pushdown)))
        hits = [hit for hit in results.results if plan.matches(hit)]
        if len(hits) >= window or results.count < want or want >= MAX_WINDOW:
            break
        want = min(want * 4, MAX_WINDOW)
    page = hits[offset:window]
    return json.dumps([fact_json(hit) for hit in page], ensure_ascii=False), [hit.memory for hit in page]


def _check_window(limit: object, offset: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise _invalid(f"limit must be a whole number of at least 1, got {limit!r}.")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise _invalid(f"offset must be a whole number of at least 0, got {offset!r}.")
    if limit + offset > MAX_WINDOW:
        raise _invalid(f"limit + offset must be at most {MAX_WINDOW}, got {limit + offset}.")


def _search_command(
    query: str, namespace: tuple[str, ...], store: str | None, limit: int, pushdown: Mapping[str, Any]
) -> SearchMemories:
    """Hybrid (vector + keyword) search, as spec 003 asks, with the pushed-down equalities."""
    return SearchMemories(query=query, namespace=namespace, store=store, limit=limit, mode="hybrid", **pushdown)


def fact_json(hit: ScoredMemory) -> dict[str, Any]:
    """One search_memory result: namespace, id, content, metadata, created_at, updated_at, score."""
    data = memory_json(hit.memory)
    top = {key: data.pop(key) for key in ("namespace", "id", "content", "created_at", "updated_at")}
    for hidden in ("deleted", "deleted_at"):
        data.pop(hidden, None)
    metadata = {**data, "confidence": hit.confidence, "similarity": hit.similarity}
    return {**top, "metadata": metadata, "score": hit.score}


# --- filters -----------------------------------------------------------------------------------

_TEXT, _BOOL, _NUMBER, _TIME, _LIST = "text", "true/false", "number", "timestamp", "list"
_ORDERED = (_TEXT, _NUMBER, _TIME)
_OPERATORS = ("$eq", "$ne", "$in", "$gt", "$gte", "$lt", "$lte")


def _memory_field(name: str) -> Callable[[ScoredMemory], Any]:
    return lambda hit: getattr(hit.memory, name)


# filter key -> (what it reads, its kind). "category" is an alias of "type" (spec 003's example).
_FIELDS: dict[str, tuple[Callable[[ScoredMemory], Any], str]] = {
    "id": (_memory_field("id"), _TEXT),
    "content": (_memory_field("content"), _TEXT),
    "type": (_memory_field("type"), _TEXT),
    "category": (_memory_field("type"), _TEXT),
    "agent": (_memory_field("agent"), _TEXT),
    "personality": (_memory_field("personality"), _TEXT),
    "project": (_memory_field("project"), _TEXT),
    "source": (_memory_field("source"), _TEXT),
    "store": (_memory_field("store"), _TEXT),
    "path": (lambda hit: None if hit.memory.path is None else str(hit.memory.path), _TEXT),
    "decay_policy": (lambda hit: hit.memory.decay_policy.value, _TEXT),
    "global": (_memory_field("global_"), _BOOL),
    "tags": (_memory_field("tags"), _LIST),
    "citations": (_memory_field("citations"), _LIST),
    "created_at": (_memory_field("created_at"), _TIME),
    "updated_at": (_memory_field("updated_at"), _TIME),
    "expires_at": (_memory_field("expires_at"), _TIME),
    "last_reinforced_at": (_memory_field("last_reinforced_at"), _TIME),
    "confidence": (lambda hit: hit.confidence, _NUMBER),
    "similarity": (lambda hit: hit.similarity, _NUMBER),
    "score": (lambda hit: hit.score, _NUMBER),
}

# equality filters the service applies itself (SearchMemories fields), so fewer results are fetched
_PUSHDOWN = {"type": "type", "category": "type", "agent": "agent", "personality": "personality", "project": "project"}

Check = Callable[[ScoredMemory], bool]


@frozen
class _FilterPlan:
    pushdown: Mapping[str, Any]
    checks: tuple[Check, ...]
    residual: bool

    def matches(self, hit: ScoredMemory) -> bool:
        return all(check(hit) for check in self.checks)


def _plan_filter(raw: Mapping[str, Any] | None) -> _FilterPlan:
    """Every condition becomes a check; plain equalities the service knows are also pushed down."""
    if raw is None:
        return _FilterPlan({}, (), residual=False)
    if not isinstance(raw, Mapping):
        raise _invalid('filter must be an object like {"category": "preference"} or {"tags": "work"}.')
    checks: list[Check] = []
    pushdown: dict[str, Any] = {}
    residual = False
    for key, condition in raw.items():
        if key not in _FIELDS:
            raise _invalid(f"Unknown filter field {key!r}: use one of {', '.join(_FIELDS)}.")
        read, kind = _FIELDS[key]
        operators = _operators(key, condition)
        checks.extend(_check(key, read, kind, op, value) for op, value in operators.items())
        pushed = _pushed(key, operators)
        if pushed is None or any(k in pushdown and pushdown[k] != v for k, v in pushed.items()):
            residual = True
        else:
            pushdown.update(pushed)
    return _FilterPlan(pushdown, tuple(checks), residual)


def _operators(key: str, condition: Any) -> dict[str, Any]:
    if not isinstance(condition, Mapping):
        return {"$eq": condition}
    if not condition:
        raise _invalid(f"The filter on {key!r} is an empty object: give a value or operators like {{'$gte': 1}}.")
    unknown = [op for op in condition if op not in _OPERATORS]
    if unknown:
        raise _invalid(f"Unknown filter operator {unknown[0]!r} on {key!r}: use one of {', '.join(_OPERATORS)}.")
    return dict(condition)


def _pushed(key: str, operators: Mapping[str, Any]) -> dict[str, Any] | None:
    if set(operators) != {"$eq"}:
        return None
    value = operators["$eq"]
    if key in _PUSHDOWN and isinstance(value, str):
        return {_PUSHDOWN[key]: value}
    if key == "global" and isinstance(value, bool):
        return {"global_": value}
    if key == "tags" and isinstance(value, str):
        return {"tags": (value,)}
    if key == "tags" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return {"tags": tuple(value)}
    return None


def _check(key: str, read: Callable[[ScoredMemory], Any], kind: str, op: str, value: Any) -> Check:
    if kind == _LIST:
        return _list_check(key, read, op, value)
    if op == "$in":
        if not isinstance(value, list | tuple):
            raise _invalid(f"$in on {key!r} needs a list of values.")
        options = [_coerce(key, kind, item) for item in value]
        return lambda hit: read(hit) in options
    wanted = _coerce(key, kind, value)
    if op in ("$eq", "$ne"):
        equal = op == "$eq"
        return lambda hit: (read(hit) == wanted) is equal
    if kind not in _ORDERED or wanted is None:
        raise _invalid(f"{op} compares text, numbers or timestamps; {key!r} is {kind} here.")
    return _ordered_check(read, op, wanted)


def _ordered_check(read: Callable[[ScoredMemory], Any], op: str, wanted: Any) -> Check:
    compare: dict[str, Callable[[Any, Any], bool]] = {
        "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b,
        "$lte": lambda a, b: a <= b,
    }
    test = compare[op]

    def check(hit: ScoredMemory) -> bool:
        actual = read(hit)
        return actual is not None and test(actual, wanted)

    return check


def _list_check(key: str, read: Callable[[ScoredMemory], Any], op: str, value: Any) -> Check:
    if op == "$in":
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise _invalid(f"$in on {key!r} needs a list of strings: memories having any of them match.")
        options = set(value)
        return lambda hit: bool(options.intersection(read(hit)))
    if op not in ("$eq", "$ne"):
        raise _invalid(f"{key!r} is a list: filter it with a value (membership), $eq, $ne or $in, not {op}.")
    if isinstance(value, str):
        required: tuple[str, ...] = (value,)
    elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        required = tuple(value)
    else:
        raise _invalid(f"The filter on {key!r} needs a string (or a list of strings that must all be present).")
    present = op == "$eq"
    return lambda hit: all(item in read(hit) for item in required) is present


def _coerce(key: str, kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == _TIME:
        try:
            return parse_iso(value)
        except (TypeError, ValueError):
            raise _invalid(f"The filter on {key!r} needs an ISO 8601 timestamp like 2026-01-31T12:00:00Z.") from None
    if kind == _NUMBER and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == _BOOL and isinstance(value, bool):
        return value
    if kind == _TEXT and isinstance(value, str):
        return value
    raise _invalid(f"The filter on {key!r} needs a {kind} value, got {value!r}.")


# --- the tool objects ----------------------------------------------------------------------------


@frozen
class MemoryTool:
    """A plain callable tool with the metadata agent frameworks read: name, description, args_schema.

    Call it with the tool arguments and the runtime `config` keyword, e.g.
    `tool(content="x", action="create", config={"user_id": "u-123"})`, or `tool.invoke({...}, config)`.
    """

    name: str
    description: str
    args_schema: dict[str, Any]
    func: Callable[..., Any]
    response_format: str = "content"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def invoke(self, arguments: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> Any:
        return self.func(**dict(arguments), config=config)


class _Services:
    """The service the tools use: the one given, or one built from the settings on first use."""

    _shared: MemoryService | None = None
    _lock = threading.Lock()

    def __init__(self, service: MemoryService | None) -> None:
        self._service = service

    def get(self) -> MemoryService:
        if self._service is not None:
            return self._service
        with _Services._lock:
            if _Services._shared is None:
                _Services._shared = _build_default_service()
            return _Services._shared


def _build_default_service() -> MemoryService:
    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.settings import load_settings

    built = load_settings().bind(build_service)
    if isinstance(built, Failure):
        raise ConfigurationError(f"Cannot build the memory service from the settings: {error_text(built.failure())}")
    return built.unwrap()


def _manage_description(permitted: Sequence[str], instructions: str) -> str:
    how = {
        "create": "create: give `content` and no `id`; the id is generated and returned",
        "update": "update: give the memory's `id` (from search_memory) and the full new `content`",
        "delete": "delete: give the memory's `id`",
    }
    verbs = {"create": "Create", "update": "update", "delete": "delete"}
    named = [verbs[action] if i == 0 else verbs[action].lower() for i, action in enumerate(permitted)]
    said = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
    lines = [
        f"{said[0].upper()}{said[1:]} a long-term memory (a fact, preference or piece of context) "
        "so it persists across conversations.",
        f"Permitted actions: {', '.join(permitted)} (default {permitted[0]}).",
        *(f"- {how[action]}." for action in permitted),
    ]
    if any(action in permitted for action in ("create", "update")):
        lines.append("Optionally give `type` (e.g. 'preference'; search_memory's filter calls it category) and `tags`.")
    # custom instructions replace the default guidance on when to call the tool (as in LangMem)
    lines.append(instructions or _when_to_call(permitted))
    return "\n".join(lines)


def _when_to_call(permitted: Sequence[str]) -> str:
    cases = []
    if "create" in permitted:
        cases += [
            "learn a new user preference",
            "are asked to remember something or to change your behaviour",
            "want to record important context",
        ]
    if "update" in permitted:
        cases.append("find that a stored memory is wrong or outdated (update it)")
    if "delete" in permitted:
        cases.append("are asked to forget something (delete it)")
    return "Proactively call this tool when you: " + "; ".join(f"{n}. {c}" for n, c in enumerate(cases, 1)) + "."


def _manage_schema(permitted: Sequence[str]) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "content": {
            "type": ["string", "null"],
            "description": "The memory's text. Required for create and update.",
        },
        "action": {"type": "string", "enum": list(permitted), "description": "What to do."},
    }
    properties["action"]["default"] = permitted[0]  # as in LangMem: a call without action does the first
    if any(a in permitted for a in ("create", "update")):
        properties["type"] = {
            "type": ["string", "null"],
            "description": "What kind of memory, e.g. 'preference' (search_memory's filter calls it category).",
        }
        properties["tags"] = {
            "type": ["array", "null"],
            "items": {"type": "string"},
            "description": "Labels to find the memory by (update: replaces them; [] clears).",
        }
    if any(a in permitted for a in ("update", "delete")):
        properties["id"] = {
            "type": ["string", "null"],
            "format": "uuid",
            "description": "The id of the memory to update or delete. Omit when creating.",
        }
    return {
        "type": "object",
        "properties": properties,
        "required": [],
        "additionalProperties": False,
    }


def create_manage_memory_tool(
    namespace: tuple[str, ...] | str | None = None,
    *,
    instructions: str = "",
    actions_permitted: Sequence[str] = ACTIONS,
    service: MemoryService | None = None,
    store: str | None = None,
    name: str = "manage_memory",
) -> MemoryTool:
    """A tool to create, update and delete memories in a namespace resolved from each call's config.

    `namespace` is a template like ("{user_id}", "memories"); without one, config["user_id"] gives
    ("user", id) and config["org_id"] + config["agent_id"] give ("org", org, agent) (decision 18).
    Delete is the soft delete of spec 001 (decision 13): the memory never surfaces again but stays stored.
    """
    permitted = tuple(actions_permitted)
    if not permitted:
        raise ValueError("actions_permitted is empty: permit at least one of create, update, delete.")
    unknown = [a for a in permitted if a not in ACTIONS]
    if unknown:
        raise ValueError(f"Unknown action(s) {', '.join(map(repr, unknown))} in actions_permitted: use {ACTIONS}.")
    services = _Services(service)

    def manage_memory(
        content: str | None = None,
        action: str | None = None,
        *,
        id: str | None = None,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> str:
        chosen = permitted[0] if action is None else action  # LangMem's default: the first permitted action
        _check_action(chosen, permitted)
        resolved = resolve_namespace(namespace, config)
        return run_manage(
            services.get(),
            resolved,
            content=content,
            action=chosen,
            id=id,
            store=store,
            permitted=permitted,
            type=type,
            tags=tags,
        )

    return MemoryTool(name, _manage_description(permitted, instructions), _manage_schema(permitted), manage_memory)


_FILTER_HELP = (
    'Optional field conditions, e.g. {"category": "preference"} (category is the memory\'s type), '
    '{"tags": "work"} (has the tag), {"project": {"$in": ["a", "b"]}}, {"created_at": {"$gte": "2026-01-01T00:00:00Z"}}. '
    "Operators: $eq $ne $in $gt $gte $lt $lte. Fields: " + ", ".join(_FIELDS) + "."
)


def _search_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, in natural language or keywords."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_WINDOW, "default": 10},
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Results to skip (paging)."},
            "filter": {"type": ["object", "null"], "description": _FILTER_HELP},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def create_search_memory_tool(
    namespace: tuple[str, ...] | str | None = None,
    *,
    instructions: str = "",
    response_format: str = "content",
    service: MemoryService | None = None,
    store: str | None = None,
    name: str = "search_memory",
) -> MemoryTool:
    """A tool to search memories (hybrid where the service offers it) in the namespace and those below it.

    Returns a JSON list of {namespace, id, content, metadata, created_at, updated_at, score}; with
    response_format="content_and_artifact", the tuple (that JSON, the list of domain Memory objects).
    """
    if response_format not in RESPONSE_FORMATS:
        raise ValueError(f"Unknown response_format {response_format!r}: use one of {', '.join(RESPONSE_FORMATS)}.")
    services = _Services(service)

    def search_memory(
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        filter: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> str | tuple[str, list[Memory]]:
        resolved = resolve_namespace(namespace, config)
        found = run_search(
            services.get(), resolved, query=query, limit=limit, offset=offset, filter=filter, store=store
        )
        return found if response_format == "content_and_artifact" else found[0]

    # custom instructions replace the default guidance on when to call the tool (as in LangMem)
    when = instructions or (
        "Call it to recall user preferences, facts and context from earlier conversations before answering."
    )
    description = (
        f"Search your long-term memories by meaning and keywords. {when}\nReturns a JSON list of memories "
        "with namespace, id, content, metadata, created_at, updated_at and score (higher is better)."
    )
    return MemoryTool(name, description, _search_schema(), search_memory, response_format)


# --- LangChain -----------------------------------------------------------------------------------


def to_langchain_tools(*tools: MemoryTool) -> list[Any]:
    """The tools as langchain_core StructuredTools; the runnable's config reaches them as `config`."""
    from agent_memory.entrypoints.extras import missing_extra

    absent = missing_extra("langchain", "to_langchain_tools")
    if absent is not None:
        raise ImportError(absent.message)
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import StructuredTool

    return [_structured(tool, StructuredTool, RunnableConfig) for tool in tools]


def _structured(tool: MemoryTool, structured_tool: Any, runnable_config: Any) -> Any:
    def run(config: Any = None, **arguments: Any) -> Any:
        return tool.func(**arguments, config=config)

    run.__annotations__ = {"config": runnable_config, "return": Any}
    run.__name__ = tool.name
    return structured_tool.from_function(
        func=run,
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        response_format=tool.response_format,
    )
