"""What callers ask the use cases for: plain attrs commands holding raw user input, validated by the use case."""

from __future__ import annotations

from datetime import datetime

from attrs import frozen


@frozen(kw_only=True)
class CreateMemory:
    """A new memory. decay_policy and path are strings so that every door validates them the same way."""

    content: str
    agent: str = ""
    personality: str = ""
    project: str = ""
    type: str = ""
    global_: bool = False
    decay_policy: str = "stable"
    store: str | None = None
    namespace: tuple[str, ...] = ()
    path: str | None = None
    tags: tuple[str, ...] = ()
    source: str = ""
    citations: tuple[str, ...] = ()
    thread: str = ""
    expires_at: datetime | None = None
    created_at: datetime | None = None


@frozen(kw_only=True)
class SearchMemories:
    """A search: a query, the scope filters, a page (limit hits after `offset`) and a confidence floor (None = the
    defaults)."""

    query: str
    agent: str | None = None
    personality: str | None = None
    project: str | None = None
    type: str | None = None
    global_: bool | None = None
    tags: tuple[str, ...] = ()
    namespace: tuple[str, ...] | None = None
    path_prefix: str | None = None
    limit: int | None = None
    offset: int = 0
    min_confidence: float | None = None
    store: str | None = None
    include_expired: bool = False
    mode: str = "hybrid"


@frozen(kw_only=True)
class UpdateMemory:
    """Changes to one memory (by id or path). None keeps a field; citations=() clears them (decision 12)."""

    ref: str
    store: str | None = None
    namespace: tuple[str, ...] | None = None
    content: str | None = None
    tags: tuple[str, ...] | None = None
    source: str | None = None
    citations: tuple[str, ...] | None = None
    expires_at: datetime | None = None
    clear_expiry: bool = False
    agent: str | None = None
    personality: str | None = None
    project: str | None = None
    type: str | None = None
    global_: bool | None = None
    decay_policy: str | None = None
    include_expired: bool = False  # an expired memory is refused (MEMORY_EXPIRED) unless this is set
