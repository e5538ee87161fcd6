"""How stores lie in Chroma: collection suffixes and metadata, page sizes, and settling an interrupted rebuild."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, cast

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import NotFoundError

from agent_memory.adapters.chroma.records import MetadataDict

NEXT_SUFFIX = ".next"  # a rebuild in progress; "." never occurs in store names, so names() skips these
PREV_SUFFIX = ".prev"  # the contents a rebuild is replacing, until the swap is done
CATEGORIES_SUFFIX = ".categories"  # a store's category registry
REBUILDING = "rebuilding"  # collection-metadata flag of a .next collection that is not filled yet
COSINE: Any = {"hnsw": {"space": "cosine"}}  # a chromadb CreateCollectionConfiguration
SCAN_PAGE = 5000  # records per read of a whole collection (read at call time: tests shrink it)
FALLBACK_BATCH = 1000
SWAP_WAIT_S = 10.0  # how long an operation on a server waits for a store another client is swapping (read at call time)
SWAP_RETRY_S = 0.05  # between its attempts
# `passing` lists the store's memories with a filter's tags and path when at most this many times as many
# as the ids asked have them (read at call time: tests shrink it); more, and it checks every id's record
SELECTIVE_REACH = 4


def collection_metadata(model: str, dimension: int) -> MetadataDict:
    return {"embedding_model": model, "dimension": dimension}


def space(collection: Collection) -> str:
    """The distance space of a collection: its configuration, else legacy metadata, else Chroma's default l2."""
    configuration = cast(Mapping[str, Any], collection.configuration_json or {})  # `.configuration` warns
    for index in ("hnsw", "spann"):
        settings = configuration.get(index)
        if isinstance(settings, Mapping) and isinstance(settings.get("space"), str):
            return str(settings["space"])
    legacy = (collection.metadata or {}).get("hnsw:space")
    return str(legacy) if isinstance(legacy, str) else "l2"


def recorded_dimension(collection: Collection) -> int | None:
    recorded = (collection.metadata or {}).get("dimension")
    return recorded if isinstance(recorded, int) and not isinstance(recorded, bool) else None


def recorded_model(collection: Collection) -> str | None:
    recorded = (collection.metadata or {}).get("embedding_model")
    return recorded if isinstance(recorded, str) else None


def find(client: ClientAPI, name: str) -> Collection | None:
    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None


def drop(client: ClientAPI, name: str) -> None:
    with contextlib.suppress(NotFoundError):
        client.delete_collection(name)


def recover(client: ClientAPI, name: str) -> Collection | None:
    """Finish or undo a rebuild that stopped between its two renames (the only moment `name` is missing).

    A filled `.next` wins (the rebuild had finished writing); otherwise `.prev` goes back in place.
    """
    staged = find(client, name + NEXT_SUFFIX)
    if staged is not None and not (staged.metadata or {}).get(REBUILDING):
        staged.modify(name=name)
        return staged
    previous = find(client, name + PREV_SUFFIX)
    if previous is not None:
        previous.modify(name=name)
        return previous
    return None
