"""Filters on an item's value and namespace match conditions, matched as LangGraph's own stores match them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from langgraph.store.base import ListNamespacesOp, MatchCondition

from agent_memory.entrypoints.langgraph.labels import from_product

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    return not wanted or all(_compare(_field(value, field), expected) for field, expected in wanted.items())


def _field(value: Mapping[str, Any], field: str) -> Any:
    """A value's field; a dotted name ('user.level') not in it reads the nested field, as LangGraph's SQL stores do."""
    if field in value or "." not in field:
        return value.get(field)
    found: Any = value
    for part in field.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(str(name).startswith("$") for name in expected):
            return all(_operator(actual, name, operand) for name, operand in expected.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def _operator(actual: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(actual == operand)
    if name == "$ne":
        return bool(actual != operand)
    left, right = _number(actual), _number(operand)
    if left is None or right is None:
        return False  # a missing or non-numeric field never satisfies an order comparison
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[name]


def _number(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        number = float(raw)
    except ValueError:
        return None
    return None if math.isnan(number) else number


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(wanted in ("*", actual) for actual, wanted in pairs)


def prefix_pushdown(op: ListNamespacesOp) -> tuple[str, ...]:
    """The longest fixed prefix a condition of the listing names (what the product's listing can narrow to)."""
    pushdown: tuple[str, ...] = ()
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            fixed = []
            for label in condition.path:
                if label == "*":
                    break
                fixed.append(label)
            pushdown = max(pushdown, tuple(fixed), key=len)
    return pushdown


def chosen_namespaces(op: ListNamespacesOp, namespaces: set[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The (product) namespaces every condition matches, cut at max_depth, as LangGraph labels, one page of them."""
    conditions = tuple(op.match_conditions or ())
    chosen = [ns for ns in namespaces if all(namespace_matches(condition, ns) for condition in conditions)]
    if op.max_depth is not None:
        chosen = list({ns[: op.max_depth] for ns in chosen})
    return sorted(from_product(ns) for ns in chosen)[op.offset : op.offset + op.limit]


__all__ = ["OPERATORS", "chosen_namespaces", "matches", "namespace_matches", "prefix_pushdown"]
