"""The LangGraph store's `index` configuration: which fields of a value are embedded, with which embeddings,
and the cosine scores a query gets from them, as LangGraph's own stores compute them.

With an `index` (`{"dims": …, "embed": …, "fields": [...]}`), an item's score for a query is the highest cosine
between the query's embedding and the embeddings of its indexed field texts (`fields`, default the whole value
`"$"`; SqliteStore's `text_fields` is read as `fields`, and the store's `index_config` holds both; a put's `index=[...]` replaces them for that item, `index=False` leaves it unscored). `embed` is a LangChain
`Embeddings`, a function of a list of texts, or a provider string: `"agent-memory"` is this product's own
embedder (offline); any other string goes to LangChain's `init_embeddings` (langchain and the provider's package).
The texts' vectors are computed when an item is searched and kept in this process, by text, for later searches.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, ensure_embeddings, get_text_at_path, tokenize_path

from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.tooling.tool_errors import invalid, succeeded

OWN_EMBEDDER = "agent-memory"  # the provider string naming this product's embedder
_CACHED_VECTORS = 50_000  # field texts whose vectors a store keeps in memory (least recently used dropped)
Fields = list[tuple[str, Any]]  # (the field path as given, its tokens) or ("$", "$") for the whole value


class ServiceEmbeddings(Embeddings):
    """The service's own embedder as LangChain Embeddings (the `"agent-memory"` provider string)."""

    def __init__(self, service: MemoryService) -> None:
        self._service = service

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(vector) for vector in succeeded(self._service.embedder.embed_documents(texts))]

    def embed_query(self, text: str) -> list[float]:
        return list(succeeded(self._service.embedder.embed_query(text)))

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embed_query, text)


def index_config(raw: Mapping[str, Any] | None, service: MemoryService) -> tuple[IndexConfig | None, Embeddings | None]:
    """The store's `index_config` (as LangGraph's stores keep it) and its embeddings; (None, None) without one."""
    if raw is None:
        return None, None
    if not isinstance(raw, Mapping) or "embed" not in raw:
        raise invalid('index must be a dict like {"dims": 384, "embed": embeddings, "fields": ["text"]}.')
    dims = raw.get("dims")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise invalid(f"index dims must be a whole number of at least 1, got {dims!r}.")
    fields = _fields(raw)
    if isinstance(fields, str) or not all(isinstance(path, str) and path for path in fields):
        raise invalid(f"index fields must be a list of field paths like ['text', 'meta.title'], got {fields!r}.")
    embed = raw["embed"]
    embeddings = ServiceEmbeddings(service) if embed == OWN_EMBEDDER else ensure_embeddings(embed)
    config: dict[str, Any] = dict(raw)
    # under both names LangGraph's stores keep it: `fields` (InMemoryStore, PostgresStore), `text_fields` (SqliteStore)
    config["fields"] = config["text_fields"] = list(fields)
    config["__tokenized_fields"] = tokenized(fields)
    return config, embeddings  # type: ignore[return-value]


def _fields(raw: Mapping[str, Any]) -> Any:
    """The fields to embed: `fields`, or `text_fields` (SqliteStore's name for them) read as `fields`; both differing
    is refused, since one of them would be silently dropped."""
    fields, text_fields = raw.get("fields"), raw.get("text_fields")
    if fields is not None and text_fields is not None and fields != text_fields:
        raise invalid(
            f"index has both fields={fields!r} and text_fields={text_fields!r}: give `fields` only "
            "(text_fields is SqliteStore's name for it)."
        )
    return fields or text_fields or ["$"]


def tokenized(fields: Sequence[str]) -> Fields:
    return [(path, tokenize_path(path)) if path != "$" else (path, path) for path in fields]


def field_texts(value: Mapping[str, Any], fields: Fields) -> list[str]:
    """The texts of a value an index embeds, field by field (a list field gives each of its texts)."""
    texts: list[str] = []
    for _path, tokens in fields:
        texts.extend(get_text_at_path(value, tokens))
    return texts


def check_index_fields(index: object) -> None:
    """A put's `index`: None (the configured fields), False (not indexed) or a list of field paths."""
    if index is None or index is False:
        return
    if isinstance(index, str) or not isinstance(index, list | tuple) or not all(isinstance(p, str) for p in index):
        raise invalid(f"index must be False or a list of field paths like ['text'], got {index!r}.")


class VectorCache:
    """Field texts' vectors by text, computed by the configured embeddings in batches, least recently used out."""

    def __init__(self, embeddings: Embeddings) -> None:
        self._embeddings = embeddings
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    def vectors(self, texts: Sequence[str]) -> dict[str, list[float]]:
        missing = list(dict.fromkeys(text for text in texts if text not in self._vectors))
        if missing:
            for text, vector in zip(missing, self._embeddings.embed_documents(missing), strict=True):
                self._vectors[text] = list(vector)
        found = {}
        for text in texts:
            self._vectors.move_to_end(text)
            found[text] = self._vectors[text]
        while len(self._vectors) > _CACHED_VECTORS:
            self._vectors.popitem(last=False)
        return found

    def query(self, text: str) -> list[float]:
        return list(self._embeddings.embed_query(text))


def cosine(left: Sequence[float], right: Sequence[float]) -> float:
    """The cosine of two vectors (0.0 when either is all zeros), as LangGraph's in-memory store computes it."""
    norms = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return 0.0 if norms == 0 else sum(a * b for a, b in zip(left, right, strict=False)) / norms


__all__ = [
    "OWN_EMBEDDER",
    "ServiceEmbeddings",
    "VectorCache",
    "check_index_fields",
    "cosine",
    "field_texts",
    "index_config",
    "tokenized",
]
