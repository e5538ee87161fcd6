"""The files backend's read cache: a cold read gives what parsing gives, whatever happened to the files or the cache."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import filelock
import pytest
from attrs import evolve

from agent_memory.adapters.files.directory import Batch, StoreFiles
from agent_memory.adapters.files.frontmatter import serialize_frontmatter
from agent_memory.adapters.files.readcache import CACHE_FILE, ReadCache, digest_of
from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.domain.paths import MemoryPath

T0 = datetime(2026, 11, 1, 8, 30, 15, 123456, tzinfo=UTC)
ID_A = "00000000-0000-4000-8000-00000000000a"
ID_B = "00000000-0000-4000-8000-00000000000b"
RICH = Memory(
    id=ID_A,
    content="First line.\r\n\n---\nünïcode, trailing newlines\n\n",
    created_at=T0,
    updated_at=T0,
    store="default",
    path=MemoryPath(("travel", "lisbon")),
    namespace=("team", "alice"),
    agent="scout",
    project="bench",
    type="fact",
    global_=True,
    tags=("travel", "chat"),
    source="chat log",
    citations=("https://example.com",),
    thread="session-1",
    decay_policy=DecayPolicy.REINFORCEABLE,
    last_reinforced_at=T0,
    expires_at=datetime(2027, 1, 1, tzinfo=UTC),
)
PLAIN = Memory(id=ID_B, content="Second memory.\n", created_at=T0, updated_at=T0, store="default")
PLACES = {ID_A: ("travel", "lisbon.md"), ID_B: ("_unfiled", f"{ID_B}.md")}


def fresh(directory: Path) -> StoreFiles:
    """The store as a new process sees it: nothing parsed in memory yet."""
    return StoreFiles("default", directory, filelock.FileLock(str(directory / ".lock")))


def place(directory: Path, memory_id: str) -> Path:
    return directory.joinpath(*PLACES[memory_id])


def write(directory: Path, memory: Memory, text: str | None = None) -> None:
    target = place(directory, memory.id)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(serialize_frontmatter(memory) if text is None else text, encoding="utf-8", newline="")


def memories(directory: Path) -> dict[str, Memory]:
    return {memory_id: record.memory for memory_id, record in fresh(directory).records().items()}


def uncached(directory: Path) -> dict[str, Memory]:
    """What parsing every file gives (the cache moved away, then put back)."""
    cache = directory / CACHE_FILE
    kept = cache.read_bytes() if cache.exists() else None
    cache.unlink(missing_ok=True)
    files = fresh(directory)
    files.walked = True  # a second walk: the cache file is neither read nor written
    parsed = {memory_id: record.memory for memory_id, record in files.records().items()}
    if kept is not None:
        cache.write_bytes(kept)
    return parsed


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    store = tmp_path / "default"
    store.mkdir()
    write(store, RICH)
    write(store, PLAIN)
    return store


def cached_entries(directory: Path) -> set[str]:
    return set(ReadCache.load(directory, "default").entries)


def test_a_cold_read_writes_the_cache_and_the_next_one_gives_the_same_memories(directory: Path) -> None:
    first = memories(directory)
    assert cached_entries(directory) == {"travel/lisbon.md", f"_unfiled/{ID_B}.md"}
    second = memories(directory)
    assert second == first == uncached(directory)
    assert second[ID_A] == RICH


def test_a_hand_edit_of_the_same_size_and_time_in_place_is_read(directory: Path) -> None:
    memories(directory)
    target = place(directory, ID_B)
    before = os.stat(target)
    edited = serialize_frontmatter(PLAIN).replace("updated_at: 2026-11-01", "updated_at: 2026-11-02")
    assert len(edited) == before.st_size
    with open(target, "r+", encoding="utf-8", newline="") as handle:  # same inode
        handle.write(edited)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert memories(directory)[ID_B].updated_at == datetime(2026, 11, 2, 8, 30, 15, 123456, tzinfo=UTC)


def test_a_deleted_file_is_gone_and_leaves_the_cache(directory: Path) -> None:
    memories(directory)
    place(directory, ID_B).unlink()
    assert set(memories(directory)) == {ID_A}
    assert cached_entries(directory) == {"travel/lisbon.md"}


def test_a_file_damaged_after_it_was_cached_is_reported_not_served(directory: Path) -> None:
    memories(directory)
    place(directory, ID_B).write_text("no frontmatter here\n", encoding="utf-8")
    files = fresh(directory)
    assert set(files.records()) == {ID_A}
    assert list(files.damaged) == [PLACES[ID_B]]
    assert "MISSING_FRONTMATTER" in files.damaged[PLACES[ID_B]]


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # cut short
        lambda raw: b"\x00garbage\xff",
        lambda raw: raw.replace(b"2026-11-01", b"2026-11-02"),  # a changed body: its digest line no longer matches
        lambda raw: b"",
    ],
)
def test_a_damaged_cache_file_is_ignored_and_rewritten(directory: Path, damage: object) -> None:
    memories(directory)
    cache = directory / CACHE_FILE
    cache.write_bytes(damage(cache.read_bytes()))  # type: ignore[operator]
    assert memories(directory) == uncached(directory)
    assert cached_entries(directory) == {"travel/lisbon.md", f"_unfiled/{ID_B}.md"}


def test_a_cache_entry_that_is_not_a_valid_memory_is_not_trusted(directory: Path) -> None:
    memories(directory)
    cache = directory / CACHE_FILE
    _, _, body = cache.read_bytes().partition(b"\n")
    forged = body.replace(b'"agent":"scout"', b'"agent":"bad\\u0001label"').replace(b'"global_":true', b'"global_":1')
    assert forged != body
    cache.write_bytes(digest_of(forged).encode() + b"\n" + forged)
    assert memories(directory)[ID_A] == RICH


def test_a_cache_of_another_store_is_ignored(directory: Path) -> None:
    memories(directory)
    moved = directory.parent / "other"
    directory.rename(moved)
    other = StoreFiles("other", moved, filelock.FileLock(str(moved / ".lock")))
    assert {record.memory.store for record in other.records().values()} == {"other"}
    assert set(ReadCache.load(moved, "other").entries) == {"travel/lisbon.md", f"_unfiled/{ID_B}.md"}


def test_files_with_unknown_keys_are_parsed_each_time_and_keep_them(directory: Path) -> None:
    text = serialize_frontmatter(PLAIN).replace("---\n", "---\nmood: hopeful\n", 1)
    write(directory, PLAIN, text)
    memories(directory)
    assert f"_unfiled/{ID_B}.md" not in cached_entries(directory)
    assert fresh(directory).records()[ID_B].extra == {"mood": "hopeful"}


def test_a_write_by_another_process_after_the_cache_is_read(directory: Path) -> None:
    memories(directory)
    writer = fresh(directory)
    with writer.lock:
        batch = Batch(writer)
        batch.write(PLACES[ID_B], serialize_frontmatter(evolve(PLAIN, content="Rewritten.\n")))
        batch.finish()
    assert memories(directory)[ID_B].content == "Rewritten.\n"
    assert memories(directory) == uncached(directory)


def test_a_cache_that_cannot_be_written_only_costs_a_parse(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(target: Path, data: bytes) -> None:
        raise PermissionError(13, "Permission denied", str(target))

    monkeypatch.setattr("agent_memory.adapters.files.readcache.write_atomically", refuse)
    assert memories(directory) == uncached(directory)
    assert not (directory / CACHE_FILE).exists()


def test_a_walk_served_from_memory_keeps_the_cache_whole(directory: Path) -> None:
    """The catalog gives every StoreFiles of a store one in-process cache: a later object's walk is served
    from it, and must not write a cache file that lacks those files."""
    first = fresh(directory)
    first.records()
    later = StoreFiles("default", directory, first.lock, first.cache)
    assert set(later.records()) == {ID_A, ID_B}
    assert cached_entries(directory) == {"travel/lisbon.md", f"_unfiled/{ID_B}.md"}
