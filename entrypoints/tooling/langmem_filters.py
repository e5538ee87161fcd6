"""search_memory's `filter`: field conditions with $eq $ne $in $gt $gte $lt $lte (decision 17), planned once per call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from agent_memory.domain.model import ScoredMemory
from agent_memory.entrypoints.timestamps import not_a_timestamp, parse_iso
from agent_memory.entrypoints.tooling.tool_errors import invalid as _invalid

__all__ = ["FILTER_HELP", "FilterPlan", "plan_filter"]

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
    "relevance": (lambda hit: hit.relevance, _NUMBER),
    "similarity": (lambda hit: hit.similarity, _NUMBER),
    "score": (lambda hit: hit.score, _NUMBER),
}

# equality filters the service applies itself (SearchMemories fields), so fewer results are fetched
_PUSHDOWN = {"type": "type", "category": "type", "agent": "agent", "personality": "personality", "project": "project"}

Check = Callable[[ScoredMemory], bool]


@frozen
class FilterPlan:
    """What the service filters itself (pushdown) and the checks every hit must pass."""

    pushdown: Mapping[str, Any]
    checks: tuple[Check, ...]
    residual: bool

    def matches(self, hit: ScoredMemory) -> bool:
        return all(check(hit) for check in self.checks)


def plan_filter(raw: Mapping[str, Any] | None) -> FilterPlan:
    """Every condition becomes a check; plain equalities the service knows are also pushed down."""
    if raw is None:
        return FilterPlan({}, (), residual=False)
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
    return FilterPlan(pushdown, tuple(checks), residual)


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
            raise _invalid(not_a_timestamp(value, f"The {key!r} filter value") + ".") from None
    if kind == _NUMBER and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == _BOOL and isinstance(value, bool):
        return value
    if kind == _TEXT and isinstance(value, str):
        return value
    raise _invalid(f"The filter on {key!r} needs a {kind} value, got {value!r}.")


FILTER_HELP = (
    'Optional field conditions, e.g. {"category": "preference"} (category is the memory\'s type), '
    '{"tags": "work"} (has the tag), {"project": {"$in": ["a", "b"]}}, {"created_at": {"$gte": "2026-01-01T00:00:00Z"}}. '
    "Operators: $eq $ne $in $gt $gte $lt $lte. Fields: " + ", ".join(_FIELDS) + "."
)
