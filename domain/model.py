"""The memory and its value types: frozen attrs classes whose validators make bad values unbuildable."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from attrs import field, frozen

from agent_memory.domain.errors import InvalidValue
from agent_memory.domain.paths import MemoryPath

MAX_CONTENT_CHARS = 100_000
MAX_LABEL_CHARS = 256
MAX_LIST_ITEMS = 100
# a namespace is a short tenant path (["org", "o-1", "user", "u-2"]); backends index every prefix of it,
# so its size is bounded before any storage call (6,000 labels once made an embedded Chroma unusable)
MAX_NAMESPACE_DEPTH = 16
MAX_NAMESPACE_CHARS = 512
DEFAULT_STORE = "default"
STORE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_STORE_NAME = 63


class DecayPolicy(StrEnum):
    """How a memory's confidence falls with age (decision 5)."""

    STABLE = "stable"
    CONTEXTUAL = "contextual"
    REINFORCEABLE = "reinforceable"


def parse_decay_policy(raw: str) -> DecayPolicy:
    """The policy named by a user's string; InvalidValue lists the accepted names otherwise."""
    try:
        return DecayPolicy(raw.strip().lower())
    except (ValueError, AttributeError):
        names = ", ".join(p.value for p in DecayPolicy)
        raise InvalidValue(f"Unknown decay policy {raw!r}: use one of {names}.") from None


def new_memory_id() -> str:
    return str(uuid.uuid4())


def check_memory_id(raw: str) -> str:
    """A memory id in canonical UUID form; InvalidValue for anything else."""
    try:
        return str(uuid.UUID(str(raw).strip()))
    except ValueError:
        raise InvalidValue(f"{raw!r} is not a memory id: ids are UUIDs like 3f2b…-…, as printed by create.") from None


def check_store_name(raw: str) -> str:
    name = str(raw).strip()
    if not STORE_NAME.match(name) or len(name) > MAX_STORE_NAME:
        raise InvalidValue(
            f"Invalid store name {raw!r}: use lowercase letters, digits and single '-' "
            f"(at most {MAX_STORE_NAME} characters), like 'default' or 'work-notes'."
        )
    return name


# --- attrs validators -------------------------------------------------------------------------


def _content(_i: object, _a: object, value: str) -> None:
    if not isinstance(value, str):
        raise InvalidValue(f"content must be a string, got {type(value).__name__}.")
    if not value.strip():
        raise InvalidValue("Content is empty: a memory needs some text.")
    if len(value) > MAX_CONTENT_CHARS:
        raise InvalidValue(
            f"Content is {len(value)} characters; the limit is {MAX_CONTENT_CHARS}. "
            "Split it into several smaller memories."
        )


def _label(_i: object, attribute: object, value: str) -> None:
    name = getattr(attribute, "name", "value").rstrip("_")
    if not isinstance(value, str):
        raise InvalidValue(f"{name} must be text.")
    if len(value) > MAX_LABEL_CHARS:
        raise InvalidValue(f"{name} is longer than {MAX_LABEL_CHARS} characters.")
    if any(ord(c) < 32 for c in value):
        raise InvalidValue(f"{name} contains control characters.")


def _labels(_i: object, attribute: object, value: tuple[str, ...]) -> None:
    name = getattr(attribute, "name", "value")
    if len(value) > MAX_LIST_ITEMS:
        raise InvalidValue(f"At most {MAX_LIST_ITEMS} {name} are allowed.")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise InvalidValue(f"Every entry of {name} must be a non-empty string.")
        _label(_i, attribute, item)


def _namespace(_i: object, _a: object, value: tuple[str, ...]) -> None:
    check_namespace(value)


def _aware(_i: object, attribute: object, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() != timedelta(0):
        name = getattr(attribute, "name", "timestamp")
        raise InvalidValue(f"{name} must be a UTC timestamp.")


def _store(_i: object, _a: object, value: str) -> None:
    check_store_name(value)


def _uuid(_i: object, _a: object, value: str) -> None:
    if check_memory_id(value) != value:
        raise InvalidValue(f"{value!r} is not a canonical memory id.")


def _revision(_instance: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidValue(f"A revision is a whole number from 0, got {value!r:.40}.")


def _tuple(value: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


# --- what storage and updates need to know of a field beyond its type ----------------------------------------


@frozen
class Stored:
    """How a Memory field is kept and changed, beyond its type and default (attrs metadata under STORED).

    Every backend's record, the file format, export/import and the contract suite's examples are derived from
    `attrs.fields(Memory)`; this says the two things a type cannot. `optional_in_old_records`: records written
    before the field existed have no value for it and read as its default (a field added after the first release
    says so, or those records stop loading). `clear_with`: the UpdateMemory flag that resets the field to its
    default, for a field whose empty value an update cannot give (None: an update sets it, or gives its empty
    value, like tags=[]).
    """

    optional_in_old_records: bool = False
    clear_with: str | None = None


STORED = "stored"
_ALWAYS_STORED = Stored()


def stored(*, optional_in_old_records: bool = False, clear_with: str | None = None) -> dict[str, Stored]:
    """A Memory field's metadata: `field(default=…, metadata=stored(optional_in_old_records=True))`."""
    return {STORED: Stored(optional_in_old_records, clear_with)}


def stored_rule(attribute: Any) -> Stored:
    """What a Memory attribute's metadata says of its storage (the plain rule when it says nothing)."""
    rule = attribute.metadata.get(STORED, _ALWAYS_STORED)
    return rule if isinstance(rule, Stored) else _ALWAYS_STORED


@frozen(kw_only=True)
class Memory:
    """One memory. Confidence is not a field: it is computed on every read (domain.decay)."""

    id: str = field(validator=_uuid)
    content: str = field(validator=_content)
    created_at: datetime = field(validator=_aware)
    updated_at: datetime = field(validator=_aware)
    store: str = field(default=DEFAULT_STORE, validator=_store)
    namespace: tuple[str, ...] = field(default=(), converter=_tuple, validator=_namespace)
    path: MemoryPath | None = None
    agent: str = field(default="", validator=_label)
    personality: str = field(default="", validator=_label)
    project: str = field(default="", validator=_label)
    type: str = field(default="", validator=_label)
    global_: bool = False
    tags: tuple[str, ...] = field(default=(), converter=_tuple, validator=_labels)
    source: str = field(default="", validator=_label)
    citations: tuple[str, ...] = field(default=(), converter=_tuple, validator=_labels)
    # the conversation or session the caller wrote it in ("" = an independent memory): search lets only
    # memories of one thread (and one scope) lend each other context, as the turns of a dialogue do
    thread: str = field(default="", validator=_label, metadata=stored(optional_in_old_records=True))
    decay_policy: DecayPolicy = DecayPolicy.STABLE
    last_reinforced_at: datetime | None = field(default=None, validator=_aware)
    expires_at: datetime | None = field(default=None, validator=_aware, metadata=stored(clear_with="clear_expiry"))
    deleted: bool = False
    deleted_at: datetime | None = field(default=None, validator=_aware)
    # how many times the memory was changed in place through a store that referees writers (a server engine's,
    # adapters/revision_claims.py; 0 elsewhere): a write carries the revision it read, and such a store refuses it
    # (CONFLICT) when another writer changed the memory since. Set by that store, never by a command.
    revision: int = field(default=0, validator=_revision, metadata=stored(optional_in_old_records=True))

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def decay_anchor(self) -> datetime:
        """The moment decay is measured from: last reinforcement for reinforceable memories."""
        if self.decay_policy is DecayPolicy.REINFORCEABLE and self.last_reinforced_at is not None:
            return self.last_reinforced_at
        return self.created_at


MAX_PART_CHARS = 300  # a matched part shown in a hit: its first this many characters (a window is ~600)


@frozen(kw_only=True)
class MatchedPart:
    """The part of a long memory that answered a search (a sentence or a window of it, Embedder.embed_parts): its
    text, at most MAX_PART_CHARS characters (a longer part cut at a word, ending in "…"), and where the whole part
    lies in the memory's content: `content[start:end]`."""

    text: str
    start: int
    end: int

    @classmethod
    def of(cls, content: str, start: int, end: int) -> MatchedPart:
        """The part of `content` at start … end, its text bounded."""
        text = content[start:end].strip()
        if len(text) > MAX_PART_CHARS:
            cut = text[: MAX_PART_CHARS - 1]
            text = (cut.rsplit(None, 1)[0] if " " in cut.strip() else cut).rstrip() + "…"
        return cls(text=text, start=start, end=end)


@frozen
class ScoredMemory:
    """A search hit: the memory, its similarity (1 − cosine distance), its rank score (the ranker's own: hybrid, the
    second stage's probability; keyword, bm25 / the best) and its relevance, the one figure a person reads: the
    similarity on the model's calibrated scale, 0 (as close as unrelated text gets) to 1 (as close as what answers
    a question; domain.search.relevance). `part`: when the similarity is that of one of a long memory's parts (a
    sentence or a later window) rather than of the memory's own vector, that part (None otherwise)."""

    memory: Memory
    similarity: float
    confidence: float
    score: float
    relevance: float
    part: MatchedPart | None = field(default=None, kw_only=True)


def check_namespace(raw: object) -> tuple[str, ...]:
    """A namespace from a tuple/list of labels, or a 'a/b' string; InvalidValue otherwise."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        labels = tuple(part for part in raw.split("/") if part != "")
    elif isinstance(raw, list | tuple):
        labels = tuple(raw)
    else:
        raise InvalidValue("A namespace is a list of labels, like ['user', 'u-123'].")
    if len(labels) > MAX_NAMESPACE_DEPTH:
        raise InvalidValue(
            f"A namespace has {len(labels)} labels; at most {MAX_NAMESPACE_DEPTH} are allowed (like ['user', 'u-123'])."
        )
    for label in labels:
        if not isinstance(label, str) or not label.strip() or "/" in label or any(ord(c) < 32 for c in label):
            raise InvalidValue(f"Namespace label {str(label)[:40]!r} must be non-empty text without '/'.")
        if len(label) > MAX_LABEL_CHARS:
            raise InvalidValue(f"A namespace label is longer than {MAX_LABEL_CHARS} characters.")
    if sum(len(label) + 1 for label in labels) > MAX_NAMESPACE_CHARS:
        raise InvalidValue(f"A namespace is longer than {MAX_NAMESPACE_CHARS} characters in all.")
    return labels
