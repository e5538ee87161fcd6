"""One model for LangGraph items and the product's memories (decision 25): how a memory reads as an item, and
how an item's value is kept as a memory's content. No langgraph import: the agent tools read items too.

- Every live memory with a namespace is an item in that namespace. A memory `store.put` made under a key sits
  at the path `langgraph/<key as a slug>-<hash of namespace and key>`; any other memory's key is its id.
- A value `{"content": "<text>"}` (LangMem's shape) is kept as the text itself when the key can be read back
  from the path (the key is its own slug, as LangMem's UUID keys are): the content every door shows and search
  embeds is the text. Any other value (and a put's `index` or `ttl`) is kept as the JSON text
  `{"key": …, "value": {…}}`, which gives the value back exactly as JSON has it.
- A memory that is not such an envelope reads as the value `{"content": <its text>}` (a structured memory's
  JSON as the object), so LangMem's tools read the product's memories and the product's tools LangMem's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.domain.model import MAX_CONTENT_CHARS, Memory
from agent_memory.domain.paths import normalise_segment
from agent_memory.entrypoints.tooling.tool_errors import invalid

CATEGORY = "langgraph"  # the root category the items `store.put` makes sit in
ITEM_SOURCE = "langgraph"  # their source field: where they came from
STRUCTURED_SOURCE = "structured"  # the source of a memory whose content is a schema's JSON (schema=)
_SLUG_CHARS = 48  # of the key, in the path (the digest makes it unique)
_DIGEST_CHARS = 32


def item_path(namespace: Sequence[str], key: str, *, category: str = CATEGORY) -> str:
    """The memory path of one item: the category, the key as a slug, a digest of namespace and key."""
    digest = hashlib.sha256(json.dumps([list(namespace), key], ensure_ascii=False).encode()).hexdigest()
    slug = normalise_segment(key)[:_SLUG_CHARS].strip("-")
    return f"{category}/{slug}-{digest[:_DIGEST_CHARS]}" if slug else f"{category}/{digest[:_DIGEST_CHARS]}"


def readable_key(key: str) -> bool:
    """Whether the key can be read back from its item's path (it is its own slug, whole)."""
    return bool(key) and len(key) <= _SLUG_CHARS and normalise_segment(key) == key


def encoded(key: str, value: object, extras: Mapping[str, object] | None = None, *, plain: bool = False) -> str:
    """The content an item is kept as: with `plain` (its key can be read back without the content) a value
    `{"content": text}` is the text itself, anything else the JSON envelope. A value that is not a JSON object
    with string keys is refused."""
    if not isinstance(value, Mapping):
        raise invalid(f"An item's value must be a dict, got {type(value).__name__}.")
    if not all(isinstance(name, str) for name in value):
        raise invalid("An item's value must have string keys (it is kept as JSON).")
    kept = {k: v for k, v in (extras or {}).items() if v is not None}
    text = value.get("content")
    if plain and not kept and list(value) == ["content"] and isinstance(text, str) and envelope_of(text) is None:
        content = text
    else:
        try:
            content = json.dumps({"key": key, "value": dict(value)} | kept, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise invalid(f"An item's value must be JSON-serialisable: {error}.") from None
    if len(content) > MAX_CONTENT_CHARS:
        raise invalid(
            f"An item is kept as {len(content)} characters of JSON; the limit is {MAX_CONTENT_CHARS}: split the value."
        )
    return content


def envelope_of(content: str) -> dict[str, Any] | None:
    """The envelope a content holds (a string key, a dict value, maybe index and ttl), or None."""
    if not content.startswith("{"):
        return None
    try:
        found = json.loads(content)
    except ValueError:
        return None
    if isinstance(found, dict) and isinstance(found.get("key"), str) and isinstance(found.get("value"), dict):
        return found
    return None


def extras_of(memory: Memory) -> dict[str, Any]:
    """The put's `index` and `ttl` an envelope holds (empty for any other memory)."""
    found = envelope_of(memory.content) or {}
    return {name: found[name] for name in ("index", "ttl") if name in found}


def put_key(memory: Memory, *, category: str = CATEGORY) -> str | None:
    """The key `store.put` wrote the memory under (its path says so), or None for a memory keyed by its id."""
    if memory.path is None or not memory.namespace:
        return None
    path = str(memory.path)
    found = envelope_of(memory.content)
    if found is not None and path == item_path(memory.namespace, found["key"], category=category):
        return str(found["key"])
    head, _, segment = path.partition("/")
    candidate = segment[: -(_DIGEST_CHARS + 1)]
    if (
        head == category
        and readable_key(candidate)
        and path == item_path(memory.namespace, candidate, category=category)
    ):
        return candidate
    return None


def key_and_value(memory: Memory, *, category: str = CATEGORY) -> tuple[str, dict[str, Any]]:
    """The (key, value) a memory reads as (one without a namespace is no LangGraph item: the store skips those)."""
    found = envelope_of(memory.content)
    key = put_key(memory, category=category)
    if found is not None and found["key"] == (key or memory.id):
        return found["key"], found["value"]
    content: Any = memory.content
    if memory.source == STRUCTURED_SOURCE and key is None:
        with contextlib.suppress(ValueError):  # hand-edited since: read as the text it is
            content = json.loads(content)
    return key or memory.id, {"content": content}


def shown_content(value: Mapping[str, Any]) -> Any:
    """What a search hit shows as content: the value's `content`, else the value's JSON text."""
    return value["content"] if "content" in value else json.dumps(dict(value), ensure_ascii=False)


__all__ = [
    "CATEGORY",
    "ITEM_SOURCE",
    "STRUCTURED_SOURCE",
    "encoded",
    "envelope_of",
    "extras_of",
    "item_path",
    "key_and_value",
    "put_key",
    "readable_key",
    "shown_content",
]
