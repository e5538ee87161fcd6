"""LangGraph namespace labels to the product's and back: a lossless escaping of what the domain refuses.

LangGraph accepts any non-empty label without '.'; the domain refuses '/' (its namespaces' string form
splits on it), control characters (they would break the CLI's lines, the files' front matter and logs)
and labels of blanks only. The door keeps the domain's rule and escapes those characters as '%XX' (UTF-8
bytes), '%' itself included, so every label maps to exactly one product label and back. A label the domain
already takes and that has no '%' is unchanged, so a namespace like ('user', 'u-1') reads the same in
`memory list` as in LangGraph. The wildcard '*' of a match condition is never escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote, unquote


def _escaped(char: str) -> bool:
    return char in "%/" or ord(char) < 32 or ord(char) == 127


def to_product_label(label: str) -> str:
    if not label.strip():  # blanks only: every character escaped, so the domain sees text
        return quote(label, safe="")
    return "".join(quote(char, safe="") if _escaped(char) else char for char in label)


def from_product_label(label: str) -> str:
    return unquote(label) if "%" in label else label


def to_product(namespace: Sequence[str]) -> tuple[str, ...]:
    """The product's namespace for a LangGraph namespace (labels already checked as LangGraph checks them)."""
    return tuple(to_product_label(label) for label in namespace)


def from_product(namespace: Sequence[str]) -> tuple[str, ...]:
    """The LangGraph namespace a product namespace written by `to_product` came from."""
    return tuple(from_product_label(label) for label in namespace)


def to_product_path(path: Sequence[str]) -> tuple[str, ...]:
    """A match condition's path: its labels escaped, its wildcards '*' kept."""
    return tuple(label if label == "*" else to_product_label(label) for label in path)


__all__ = ["from_product", "from_product_label", "to_product", "to_product_label", "to_product_path"]
