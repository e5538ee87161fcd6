"""Store names as the backends spell them: the rule, the catalog's collection of a store and back, not found."""

from __future__ import annotations

from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import DEFAULT_STORE, check_store_name

STORE_SEPARATOR = "--"  # store names never contain "--" (domain.model.STORE_NAME), so this is reversible


def is_store_name(text: str) -> bool:
    """Whether `text` is a store name exactly as written (no spaces to trim, nothing to refuse)."""
    try:
        return check_store_name(text) == text
    except InvalidValue:
        return False


def collection_of(catalog: str, store: str) -> str:
    """The collection (or alias, or folder) holding a store: the catalog's own name for the default store."""
    return catalog if store == DEFAULT_STORE else f"{catalog}{STORE_SEPARATOR}{store}"


def store_of(catalog: str, collection: str) -> str | None:
    """The store a collection name belongs to; None for internal collections and other catalogs'."""
    if collection == catalog:
        return DEFAULT_STORE
    prefix = f"{catalog}{STORE_SEPARATOR}"
    if not collection.startswith(prefix):
        return None
    store = collection[len(prefix) :]
    return store if is_store_name(store) else None


def store_not_found(name: str) -> DomainError:
    """STORE_NOT_FOUND for a store that is not there, saying how to make it."""
    return DomainError(
        ErrorCode.STORE_NOT_FOUND,
        f"Store '{name}' does not exist. Create it with `memory store create {name}` or add a memory to it.",
    )
