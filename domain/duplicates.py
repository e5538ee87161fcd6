"""Near-duplicates at the door: what a create does when its memory says what one of its scope already says."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from enum import Enum

from attrs import evolve, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector
from agent_memory.domain.views import Duplicate

# nearest memories a create reads back from its store (one query): those of a sub-namespace or under the threshold
# are dropped after it, so a few more than the answer names
NEIGHBOURS = 8
# the deepest a create asks: past it, a namespace crowded by thousands of near-copies below it goes unchecked
MAX_NEIGHBOURS = 2048
# duplicates an answer names at most, the most similar first
MOST_NAMED = 5


class DuplicatePolicy(Enum):
    """What a create does when a live memory of the same scope is a near-duplicate of the new one: keep both (the
    new one is stored, the answer names its duplicates), skip the new one (the answer is the existing memory), or
    update the existing one with the new text (the answer is that memory, changed)."""

    KEEP = "keep"
    SKIP = "skip"
    UPDATE = "update"


DUPLICATE_POLICIES = tuple(policy.value for policy in DuplicatePolicy)
# what the answer says was done, by policy, when a duplicate was found
ACTIONS = {DuplicatePolicy.KEEP: "kept", DuplicatePolicy.SKIP: "skipped", DuplicatePolicy.UPDATE: "updated"}


def parse_duplicate_policy(raw: str | None, default: DuplicatePolicy) -> Result[DuplicatePolicy, DomainError]:
    """The policy a create asks for (None: the setting's), or INVALID_INPUT naming the three."""
    if raw is None:
        return Success(default)
    try:
        return Success(DuplicatePolicy(raw.strip().lower()))
    except ValueError:
        return Failure(
            invalid_input(
                f"on_duplicate must be one of {', '.join(DUPLICATE_POLICIES)}, got {raw!r}: keep stores the new "
                "memory beside its near-duplicates, skip stores nothing and answers with the existing memory, "
                "update changes the existing memory's content to the new text."
            )
        )


def same_scope(memory: Memory) -> MemoryFilter:
    """The live memories a new one may duplicate: its namespace (and those below, dropped by `in_scope`), agent,
    personality and project; soft-deleted ones never count, expired ones are dropped by `in_scope` too."""
    return MemoryFilter(
        namespace=memory.namespace, agent=memory.agent, personality=memory.personality, project=memory.project
    )


def in_scope(new: Memory, other: Memory) -> bool:
    """Whether `other` lives where `new` will: the same namespace exactly, the same agent, personality and project,
    live (neither deleted nor expired when `new` is made)."""
    return (
        other.namespace == new.namespace
        and (other.agent, other.personality, other.project) == (new.agent, new.personality, new.project)
        and not other.deleted
        and not other.is_expired(new.created_at)
    )


Query = Callable[[int], Result[list[tuple[Memory, float]], DomainError]]


def nearest(
    query: Query, threshold: float, limit: int = NEIGHBOURS, counts: Callable[[Memory], bool] | None = None
) -> Result[list[tuple[Memory, float]], DomainError]:
    """A store's nearest memories (`query(limit)`, most similar first), asked again four times deeper while every
    one it gave reaches the threshold: memories of the namespaces below, or of other agents, may crowd out the
    ones that count (the store's filter takes a namespace as a prefix). Not deeper once MOST_NAMED of those that
    `counts` keeps reach it: an answer names at most MOST_NAMED, the most similar, so a deeper query would only add
    less similar ones (a scope crowded by near-copies otherwise asked 32 and 128 deep, issue 47)."""

    def enough(found: list[tuple[Memory, float]]) -> Result[list[tuple[Memory, float]], DomainError]:
        if len(found) < limit or found[-1][1] < threshold or limit >= MAX_NEIGHBOURS:
            return Success(found)
        if counts is not None and sum(1 for memory, _ in found if counts(memory)) >= MOST_NAMED:
            return Success(found)
        return nearest(query, threshold, limit * 4, counts)

    return query(limit).bind(enough)


def cosine(left: Vector, right: Vector) -> float:
    """The cosine similarity of two vectors (0 when either is all zeros)."""
    return normed_cosine(left, math.hypot(*left), right, math.hypot(*right))


def normed_cosine(left: Vector, left_norm: float, right: Vector, right_norm: float) -> float:
    """`cosine` with both norms known (a batch's vectors are compared pairwise: each norm is taken once). The dot
    product runs in C (map and sum over the floats), not a generator: a batch of 200 creates in one scope makes
    19,900 pairs, which cost seconds the other way."""
    if len(left) != len(right):
        raise ValueError(f"Vectors of {len(left)} and {len(right)} dimensions cannot be compared.")
    norms = left_norm * right_norm
    return sum(map(operator.mul, left, right)) / norms if norms else 0.0


@frozen
class Candidate:
    """A memory a new one may duplicate, with its similarity to the new one: one stored, or one of the same batch."""

    memory: Memory
    similarity: float


def duplicates_of(candidates: Sequence[Candidate], threshold: float) -> tuple[Candidate, ...]:
    """The candidates at or over the threshold, most similar first, at most MOST_NAMED."""
    found = sorted((c for c in candidates if c.similarity >= threshold), key=lambda c: -c.similarity)
    return tuple(found[:MOST_NAMED])


def named(candidates: Sequence[Candidate]) -> tuple[Duplicate, ...]:
    """What an answer says of each duplicate: its id, path and similarity."""
    return tuple(
        Duplicate(
            id=c.memory.id,
            path=None if c.memory.path is None else str(c.memory.path),
            similarity=round(c.similarity, 4),
        )
        for c in candidates
    )


# a batch's memory is compared with at most this many of the batch's memories before it in its scope: the pairs
# cost pure arithmetic, so a batch of 10,000 in one scope stays linear (each compare costs about what embedding one
# short text does, bench/duplicates.py)
IN_BATCH_WINDOW = 512

# a store's nearest memories to a new one's vector (domain.duplicates.nearest), told which of them count toward
# the answer (those `nearest` may stop at)
Neighbours = Callable[[Memory, Vector, Callable[[Memory], bool]], Result[list[tuple[Memory, float]], DomainError]]


@frozen
class Fresh:
    """A memory a create will make, and the policy its caller chose for its near-duplicates."""

    memory: Memory
    policy: DuplicatePolicy


@frozen
class Answer:
    """What one create answers with: the memory it names (the new one, or the existing one it skipped to or
    updated), the duplicates found and what was done ("" when none was found)."""

    memory_id: str
    duplicates: tuple[Duplicate, ...] = ()
    action: str = ""


class BatchPlan:
    """A batch's writes to one store once its near-duplicates are settled: the memories to add (with their
    vectors), the stored memories to change (as they were, as they will be, and their new vectors), and each
    create's answer in the batch's order. Built by `plan_batch`; read by the writer."""

    def __init__(self) -> None:
        self.added: dict[str, tuple[Memory, Vector]] = {}
        self.changed: dict[str, tuple[Memory, Memory, Vector]] = {}
        self.answers: list[Answer] = []
        self.skipped_to: dict[str, Memory] = {}  # stored memories a create skipped to, unchanged
        self._norms: dict[str, float] = {}  # the norm of each added memory's vector, taken once

    def final(self, memory_id: str) -> Memory:
        """A memory the batch names, as the batch leaves it."""
        if memory_id in self.added:
            return self.added[memory_id][0]
        if memory_id in self.changed:
            return self.changed[memory_id][1]
        return self.skipped_to[memory_id]

    def _batch_candidates(self, new: Memory, vector: Vector) -> list[Candidate]:
        mine = [(memory, vec) for memory, vec in self.added.values() if in_scope(new, memory)][-IN_BATCH_WINDOW:]
        norm = math.hypot(*vector)
        return [Candidate(memory, normed_cosine(vector, norm, vec, self._norm(memory.id, vec))) for memory, vec in mine]

    def _norm(self, memory_id: str, vector: Vector) -> float:
        known = self._norms.get(memory_id)
        if known is None:
            known = self._norms[memory_id] = math.hypot(*vector)
        return known

    def counts(self, new: Memory) -> Callable[[Memory], bool]:
        """Whether a stored memory found near `new` is a candidate as found: of its scope and not changed earlier in
        this batch (a changed one is compared by its new vector: its place in the store's order says nothing)."""
        return lambda memory: in_scope(new, memory) and memory.id not in self.changed

    def _stored_candidates(self, new: Memory, vector: Vector, found: list[tuple[Memory, float]]) -> list[Candidate]:
        """The store's neighbours in the new memory's scope, as this batch has changed them so far."""
        candidates = []
        for memory, similarity in found:
            if not in_scope(new, memory):
                continue
            if memory.id in self.changed:  # updated earlier in this batch: its new text is what counts
                _, after, vec = self.changed[memory.id]
                candidates.append(Candidate(after, cosine(vector, vec)))
            else:
                candidates.append(Candidate(memory, similarity))
        return candidates

    def settle(self, fresh: Fresh, vector: Vector, found: list[tuple[Memory, float]], threshold: float) -> None:
        """Decide one create: add it, or skip to / update its most similar duplicate, by its policy."""
        new = fresh.memory
        duplicates = duplicates_of(
            [*self._stored_candidates(new, vector, found), *self._batch_candidates(new, vector)], threshold
        )
        if not duplicates or fresh.policy is DuplicatePolicy.KEEP:
            self.added[new.id] = (new, vector)
            self.answers.append(Answer(new.id, named(duplicates), ACTIONS[fresh.policy] if duplicates else ""))
            return
        target = duplicates[0].memory
        if fresh.policy is DuplicatePolicy.UPDATE:
            after = evolve(target, content=new.content, updated_at=new.updated_at)
            if target.id in self.added:
                self.added[target.id] = (after, vector)
                self._norms.pop(target.id, None)  # its vector is the new text's now
            else:
                before = self.changed[target.id][0] if target.id in self.changed else target
                self.changed[target.id] = (before, after, vector)
        elif target.id not in self.added and target.id not in self.changed:
            self.skipped_to[target.id] = target
        self.answers.append(Answer(target.id, named(duplicates), ACTIONS[fresh.policy]))


def plan_batch(
    batch: Sequence[Fresh], vectors: Sequence[Vector], neighbours: Neighbours, threshold: float | None
) -> Result[BatchPlan, DomainError]:
    """Settle a batch's near-duplicates in its order: each create against its store's nearest live memories of its
    scope (one `neighbours` query each) and the batch's creates before it. Without a threshold (a model with no
    calibrated one) nothing is a duplicate and every memory is added."""
    plan = BatchPlan()
    for fresh, vector in zip(batch, vectors, strict=True):
        if threshold is None:
            plan.added[fresh.memory.id] = (fresh.memory, vector)
            plan.answers.append(Answer(fresh.memory.id))
            continue
        match neighbours(fresh.memory, vector, plan.counts(fresh.memory)):
            case Success(found):
                plan.settle(fresh, vector, found, threshold)
            case Failure(error):
                return Failure(error)
    return Success(plan)
