"""Tests of the files adapter: on-disk layout, hand edits and reindex, unknown keys, safety, locking."""

from __future__ import annotations

import multiprocessing
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from attrs import evolve
from returns.result import Failure, Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.files.catalog import FilesCatalog
from agent_memory.adapters.files.format import split_frontmatter
from agent_memory.adapters.files.frontmatter import parse_frontmatter
from agent_memory.adapters.files.layout import CATEGORY_FILE, UNFILED, default_memory_id, memory_file
from agent_memory.adapters.files.store import FilesVectorStore
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import CategoryPath, MemoryPath
from agent_memory.domain.service import MemoryService

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ID = "6f1c1f0e-3b8e-4d7a-9d43-2b1e5c0a7f10"
EVERYTHING = MemoryFilter(include_deleted=True)


# --- helpers ----------------------------------------------------------------------------------


def ok(result: object) -> object:
    assert isinstance(result, Success), f"expected Success, got {result!r}"
    return result.unwrap()


def failed(result: object, code: ErrorCode) -> DomainError:
    assert isinstance(result, Failure), f"expected Failure({code}), got {result!r}"
    error = result.failure()
    assert isinstance(error, DomainError)
    assert error.code is code, error
    return error


def tree(top: Path) -> set[str]:
    """Every file and link below `top`, as paths relative to it."""
    found = set()
    for folder, folders, names in os.walk(top):
        for name in names + [f for f in folders if os.path.islink(os.path.join(folder, f))]:
            found.add(Path(folder, name).relative_to(top).as_posix())
    return found


def memory_files(store_dir: Path) -> set[str]:
    return {p for p in tree(store_dir) if p.endswith(".md") and not Path(p).name.startswith(("_", "."))}


def new_catalog(root: Path) -> FilesCatalog:
    return FilesCatalog(root=root, index=InMemoryCatalog(embedder_name="hashing-bow"))


def new_service(catalog: FilesCatalog) -> MemoryService:
    return MemoryService(catalog=catalog, embedder=HashingEmbedder(), clock=FixedClock(T0))


def memory(**changes: object) -> Memory:
    values: dict[str, object] = {"id": ID, "content": "Some text.\n", "created_at": T0, "updated_at": T0}
    return Memory(**(values | changes))  # type: ignore[arg-type]


def insert_after_first_line(path: Path, lines: str) -> None:
    text = path.read_bytes().decode()
    first, rest = text.split("\n", 1)
    path.write_bytes(f"{first}\n{lines}{rest}".encode())


def search_ids(service: MemoryService, query: str, limit: int = 3) -> list[str]:
    results = ok(service.search(SearchMemories(query=query, limit=limit)))
    return [hit.memory.id for hit in results.results]  # type: ignore[attr-defined]


HAND_WRITTEN = (
    "---\n"
    "# written by a person\n"
    "created_at: 2025-06-01T10:00:00Z\n"
    "updated_at: 2025-06-01\n"
    "tags: [gardening]\n"
    "mood: hopeful   # a key the program does not know\n"
    "---\n"
    "\nTomatoes need deep watering twice a week.\n"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "data" / "files"


@pytest.fixture
def catalog(root: Path) -> FilesCatalog:
    return new_catalog(root)


@pytest.fixture
def service(catalog: FilesCatalog) -> MemoryService:
    return new_service(catalog)


@pytest.fixture
def store(catalog: FilesCatalog) -> FilesVectorStore:
    opened = ok(catalog.open("default", create=True))
    assert isinstance(opened, FilesVectorStore)
    return opened


# --- layout -----------------------------------------------------------------------------------


def test_a_memory_with_a_path_is_a_file_at_that_path(service: MemoryService, root: Path) -> None:
    view = ok(
        service.add(CreateMemory(content="Use pytest.\n", path="Projects/Agent Memory/Design Notes", tags=("t",)))
    )
    stored = view.memory  # type: ignore[attr-defined]
    file = root / "default" / "projects" / "agent-memory" / "design-notes.md"
    assert memory_files(root / "default") == {"projects/agent-memory/design-notes.md"}
    text = file.read_bytes().decode()
    assert text.startswith(f"---\nid: {stored.id}\npath: projects/agent-memory/design-notes\n")
    assert text.endswith("---\nUse pytest.\n")
    parsed = ok(parse_frontmatter(text, store="default", path=stored.path))
    assert parsed.memory == stored  # type: ignore[attr-defined]
    assert memory_file(stored.id, stored.path) == "projects/agent-memory/design-notes.md"


def test_a_memory_without_a_path_is_a_file_in_unfiled(service: MemoryService, root: Path) -> None:
    stored = ok(service.create(CreateMemory(content="No path here"))).memory  # type: ignore[attr-defined]
    file = root / "default" / UNFILED / f"{stored.id}.md"
    assert memory_files(root / "default") == {f"{UNFILED}/{stored.id}.md"}
    assert ok(parse_frontmatter(file.read_text(), store="default")).memory == stored  # type: ignore[attr-defined]


def test_content_round_trips_byte_for_byte(store: FilesVectorStore, root: Path) -> None:
    content = "\n\n  leading blank lines\r\n---\nnot a delimiter\n\ttrailing \n\n"
    ok(store.add([memory(content=content, path=MemoryPath(("a", "b")))], [[1.0, 0.0]]))
    assert ok(store.get([ID])) == [memory(content=content, path=MemoryPath(("a", "b")))]
    assert (root / "default" / "a" / "b.md").read_bytes().decode().endswith(f"---\n{content}")


def test_two_memories_on_one_path_get_two_files(store: FilesVectorStore, root: Path) -> None:
    """The use cases keep paths unique; below them, a second memory on a taken path gets `<slug>.<id>.md`."""
    other = str(uuid.UUID(int=7, version=4))
    path = MemoryPath(("notes", "same"))
    ok(store.add([memory(path=path), memory(id=other, path=path, content="other")], [[1.0, 0.0], [0.0, 1.0]]))
    assert memory_files(root / "default") == {"notes/same.md", f"notes/same.{other}.md"}
    assert {m.id for m in ok(store.scan(MemoryFilter(path=path)))} == {ID, other}  # type: ignore[attr-defined]
    ok(store.remove([ID]))
    assert memory_files(root / "default") == {f"notes/same.{other}.md"}
    assert ok(store.get([other])) == [memory(id=other, path=path, content="other")]


def test_removing_the_last_memory_of_a_folder_removes_the_folder(service: MemoryService, root: Path) -> None:
    view = ok(service.add(CreateMemory(content="x", path="deep/er/still/note")))
    ok(service.remove(view.memory.id))  # type: ignore[attr-defined]
    assert not (root / "default" / "deep").exists()
    assert (root / "default").is_dir()


# --- hand edits and reindex -------------------------------------------------------------------


def test_a_hand_edit_shows_at_once_and_is_searchable_after_reindex(service: MemoryService, root: Path) -> None:
    views = [
        ok(service.add(CreateMemory(content=text, path=f"ops/{slug}")))
        for slug, text in [
            ("deploy", "blue green switch"),
            ("db", "postgres vacuum schedule"),
            ("cache", "redis eviction"),
        ]
    ]
    deploy = views[0].memory  # type: ignore[attr-defined]
    file = root / "default" / "ops" / "deploy.md"
    file.write_bytes(file.read_bytes().replace(b"blue green switch", b"canary rollout with feature flags"))
    assert ok(service.get(deploy.id)).memory.content == "canary rollout with feature flags"  # type: ignore[attr-defined]
    ok(service.reindex())
    results = ok(service.search(SearchMemories(query="canary rollout feature flags", limit=1))).results  # type: ignore[attr-defined]
    assert [(hit.memory.id, hit.memory.content) for hit in results] == [
        (deploy.id, "canary rollout with feature flags")
    ]
    assert results[0].similarity > 0.8


def test_a_hand_written_file_without_an_id_gets_a_stable_one_and_is_found(service: MemoryService, root: Path) -> None:
    ok(service.add(CreateMemory(content="unrelated words entirely", path="misc/other")))
    file = root / "default" / "garden" / "tomatoes.md"
    file.parent.mkdir(parents=True)
    file.write_bytes(HAND_WRITTEN.encode())
    expected_id = default_memory_id("default", "garden/tomatoes.md")

    listed = ok(service.list("garden")).memories  # type: ignore[attr-defined]
    assert [(v.memory.id, str(v.memory.path), v.memory.tags) for v in listed] == [
        (expected_id, "garden/tomatoes", ("gardening",))
    ]
    assert ok(service.get(expected_id)).memory.content == "\nTomatoes need deep watering twice a week.\n"  # type: ignore[attr-defined]

    report = ok(service.reindex())
    assert report.memory_count == 2  # type: ignore[attr-defined]
    assert search_ids(service, "watering tomatoes", 1) == [expected_id]
    first, rest = HAND_WRITTEN.split("\n", 1)
    assert file.read_bytes().decode() == f"{first}\nid: {expected_id}\n{rest}"  # only the id line was added

    ok(service.reindex())
    assert file.read_bytes().decode() == f"{first}\nid: {expected_id}\n{rest}"
    assert search_ids(service, "watering tomatoes", 1) == [expected_id]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\ufeff---\r\ncreated_at: 2025-06-01\r\nupdated_at: 2025-06-01\r\n---\r\nCRLF text\r\n", "insert"),
        ("---\n{created_at: 2025-06-01, updated_at: 2025-06-01, mood: calm}\n---\nflow style\n", "rewrite"),
        ("---\nid:\ncreated_at: 2025-06-01\nupdated_at: 2025-06-01\n---\nempty id\n", "rewrite"),
    ],
)
def test_reindex_adds_the_id_in_the_file_own_style_or_rewrites_it_whole(
    service: MemoryService, root: Path, raw: str, expected: str
) -> None:
    file = root / "default" / "hand" / "note.md"
    file.parent.mkdir(parents=True)
    file.write_bytes(raw.encode())
    before = ok(service.get("hand/note")).memory  # type: ignore[attr-defined]
    assert before.id == default_memory_id("default", "hand/note.md")
    ok(service.reindex())
    text = file.read_bytes().decode()
    if expected == "insert":
        assert text == raw.replace("---\r\n", f"---\r\nid: {before.id}\r\n", 1)
    else:
        assert text.startswith(f"---\nid: {before.id}\n")
    after = ok(parse_frontmatter(text, store="default", path=before.path))
    assert after.memory == before  # type: ignore[attr-defined]
    assert ok(service.get(before.id)).memory == before  # type: ignore[attr-defined]


def test_soft_delete_stores_and_counts(service: MemoryService, root: Path) -> None:
    stored = ok(service.add(CreateMemory(content="to forget", path="a/b", store="work"))).memory  # type: ignore[attr-defined]
    ok(service.delete(stored.id, store="work"))
    assert "deleted: true" in (root / "work" / "a" / f"b.{stored.id}.md").read_text()  # <slug>.md is for the live one
    assert not (root / "work" / "a" / "b.md").exists()
    failed(service.get(stored.id, store="work"), ErrorCode.MEMORY_NOT_FOUND)
    ok(service.create_store("empty"))
    summaries = ok(service.list_stores())
    counted = [(s.name, s.memory_count, s.deleted_count) for s in summaries]  # type: ignore[attr-defined]
    assert counted == [("empty", 0, 0), ("work", 0, 1)]  # live, as status counts, and the soft-deleted beside


def test_reindex_gives_the_path_own_file_back_to_the_live_memory(service: MemoryService, root: Path) -> None:
    """Stores written before soft-deleted memories moved aside: the deleted one held `<slug>.md`."""
    gone = ok(service.add(CreateMemory(content="first", path="notes/x"))).memory  # type: ignore[attr-defined]
    ok(service.delete(gone.id))
    live = ok(service.add(CreateMemory(content="second", path="notes/x"))).memory  # type: ignore[attr-defined]
    notes = root / "default" / "notes"
    (notes / "x.md").rename(notes / "swap")
    (notes / f"x.{gone.id}.md").rename(notes / "x.md")
    (notes / "swap").rename(notes / f"x.{live.id}.md")
    assert ok(service.get("notes/x")).memory.id == live.id  # type: ignore[attr-defined]

    ok(service.reindex())
    assert memory_files(root / "default") == {"notes/x.md", f"notes/x.{gone.id}.md"}
    assert f"id: {live.id}" in (notes / "x.md").read_text()
    assert ok(service.get("notes/x")).memory.content == "second"  # type: ignore[attr-defined]


def test_a_file_deleted_by_hand_leaves_search(service: MemoryService, root: Path) -> None:
    kept = ok(service.add(CreateMemory(content="apples and pears", path="fruit/apples"))).memory  # type: ignore[attr-defined]
    gone = ok(service.add(CreateMemory(content="bananas ripen fast", path="fruit/bananas"))).memory  # type: ignore[attr-defined]
    (root / "default" / "fruit" / "bananas.md").unlink()
    assert search_ids(service, "bananas ripen", 5) == [kept.id]  # the vanished file is dropped at once
    failed(service.get(gone.id), ErrorCode.MEMORY_NOT_FOUND)
    assert ok(service.reindex()).memory_count == 1  # type: ignore[attr-defined]
    assert search_ids(service, "bananas ripen", 5) == [kept.id]
    assert ok(service.status()).memory_count == 1  # type: ignore[attr-defined]


def test_a_file_moved_by_hand_takes_its_new_path(service: MemoryService, root: Path) -> None:
    moved = ok(service.add(CreateMemory(content="quarterly goals", path="work/goals"))).memory  # type: ignore[attr-defined]
    (root / "default" / "archive").mkdir()
    (root / "default" / "work" / "goals.md").rename(root / "default" / "archive" / "goals-2025.md")
    assert str(ok(service.get(moved.id)).memory.path) == "archive/goals-2025"  # type: ignore[attr-defined]
    ok(service.reindex())
    assert ok(service.get("archive/goals-2025")).memory.id == moved.id  # type: ignore[attr-defined]
    assert search_ids(service, "quarterly goals", 1) == [moved.id]
    text = (root / "default" / "archive" / "goals-2025.md").read_text()
    assert "path: archive/goals-2025\n" in text  # reindex corrected the recorded path


def test_files_named_by_hand_are_read_as_slugs_and_reindex_gives_them_their_place(
    service: MemoryService, root: Path
) -> None:
    file = root / "default" / "My Notes" / "Big Idea (draft).md"
    file.parent.mkdir(parents=True)
    file.write_bytes(HAND_WRITTEN.encode())
    expected_id = default_memory_id("default", "My Notes/Big Idea (draft).md")
    assert ok(service.get("my-notes/big-idea-draft")).memory.id == expected_id  # type: ignore[attr-defined]
    ok(service.reindex())
    assert memory_files(root / "default") == {"my-notes/big-idea-draft.md"}
    assert not (root / "default" / "My Notes").exists()
    assert ok(service.get("my-notes/big-idea-draft")).memory.id == expected_id  # type: ignore[attr-defined]
    assert "mood: hopeful" in (root / "default" / "my-notes" / "big-idea-draft.md").read_text()


def test_a_fresh_index_still_reads_the_files_and_reindex_makes_them_searchable(root: Path) -> None:
    first = new_service(new_catalog(root))
    stored = ok(first.add(CreateMemory(content="the wifi password is on the fridge", path="home/wifi"))).memory  # type: ignore[attr-defined]
    second = new_service(new_catalog(root))  # e.g. the index was lost
    assert ok(second.get(stored.id)).memory == stored  # type: ignore[attr-defined]
    assert ok(second.get("home/wifi")).memory == stored  # type: ignore[attr-defined]
    assert search_ids(second, "wifi password") == []
    ok(second.reindex())
    assert search_ids(second, "wifi password") == [stored.id]


# --- unknown keys -----------------------------------------------------------------------------


def test_unknown_keys_survive_update_and_move(service: MemoryService, root: Path) -> None:
    stored = ok(service.add(CreateMemory(content="first text", path="notes/keys"))).memory  # type: ignore[attr-defined]
    insert_after_first_line(root / "default" / "notes" / "keys.md", "reviewer: alice\nlinks: [a, b]\n")

    ok(service.update(UpdateMemory(ref=stored.id, tags=("reviewed",))))
    ok(service.update(UpdateMemory(ref="notes/keys", content="second text")))
    ok(service.move(stored.id, "Archive/Kept Keys"))

    assert memory_files(root / "default") == {"archive/kept-keys.md"}
    assert not (root / "default" / "notes").exists()
    text = (root / "default" / "archive" / "kept-keys.md").read_text()
    assert "reviewer: alice\n" in text and "links:\n- a\n- b\n" in text
    final = ok(service.get(stored.id)).memory  # type: ignore[attr-defined]
    assert (final.content, final.tags, str(final.path)) == ("second text", ("reviewed",), "archive/kept-keys")
    assert text.endswith("---\nsecond text")


# --- malformed files --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"just some text, no frontmatter\n", "MISSING_FRONTMATTER"),
        (b"---\ncreated_at: [unclosed\n---\ntext\n", "INVALID_FRONTMATTER"),
        (b"---\ncreated_at: 2025-01-01T00:00:00Z\n---\n\n", "INVALID_FIELD"),
        (b"---\ncreated_at: yesterday\nupdated_at: 2025-01-01\n---\ntext\n", "INVALID_TIMESTAMP"),
        (b"\xff\xfe not utf-8", None),
    ],
)
def test_a_malformed_file_is_skipped_and_named_by_status_never_failing_the_store(
    service: MemoryService, root: Path, raw: bytes, code: str | None
) -> None:
    healthy = ok(service.add(CreateMemory(content="fine", path="notes/fine"))).memory  # type: ignore[attr-defined]
    broken = root / "default" / "notes" / "broken.md"
    broken.write_bytes(raw)
    for listing in (service.list(), service.list("notes")):
        assert [view.memory.id for view in ok(listing).memories] == [healthy.id]  # type: ignore[attr-defined]
    assert ok(service.reindex()).memory_count == 1  # type: ignore[attr-defined]
    (problem,) = ok(service.status()).problems  # type: ignore[attr-defined]
    assert "'notes/broken.md'" in problem and "memory reindex" in problem
    assert code is None or code in problem
    assert broken.read_bytes() == raw  # never rewritten or removed
    assert ok(service.get(healthy.id)).memory == healthy  # type: ignore[attr-defined]
    assert ok(service.get("notes/fine")).memory == healthy  # type: ignore[attr-defined]


def test_two_files_with_one_id_never_fail_the_store(service: MemoryService, root: Path) -> None:
    """The older file keeps the id, the copy is read under an id of its own, and status names it."""
    ok(service.add(CreateMemory(content="original", path="notes/original")))
    copy = root / "default" / "notes" / "copy.md"
    copy.write_bytes((root / "default" / "notes" / "original.md").read_bytes())
    listed = ok(service.list()).memories  # type: ignore[attr-defined]
    assert sorted(str(m.memory.path) for m in listed) == ["notes/copy", "notes/original"]
    assert len({m.memory.id for m in listed}) == 2
    problems = ok(service.status()).warnings  # type: ignore[attr-defined]
    assert any("'notes/copy.md'" in p and "'notes/original.md'" in p for p in problems)


def test_a_memory_that_could_not_be_read_back_is_refused(store: FilesVectorStore, root: Path) -> None:
    """A memory whose file would not read back as itself is refused, instead of writing a file that breaks the store."""
    odd = memory()
    object.__setattr__(odd, "namespace", ("a/b",))  # a value the model once allowed and the file format refuses
    error = failed(store.add([odd], [[1.0]]), ErrorCode.INVALID_INPUT)
    assert ID in error.message and "namespace" in error.message
    assert memory_files(root / "default") == set()
    assert ok(store.count()) == 0


# --- atomic writes ----------------------------------------------------------------------------


def test_writes_leave_no_temporary_files(service: MemoryService, root: Path) -> None:
    view = ok(service.add(CreateMemory(content="one", path="a/one")))
    ok(service.create(CreateMemory(content="two")))
    ok(service.update(UpdateMemory(ref="a/one", content="uno")))
    ok(service.move("a/one", "b/one"))
    ok(service.create_category("c", description="cats"))
    ok(service.delete(view.memory.id))  # type: ignore[attr-defined]
    ok(service.reindex())
    assert [p for p in tree(root) if ".tmp-" in p] == []


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    service: MemoryService, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(service.add(CreateMemory(content="before", path="a/note")))
    before = (root / "default" / "a" / "note.md").read_bytes()

    def disk_full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    error = failed(service.update(UpdateMemory(ref="a/note", content="after")), ErrorCode.STORAGE_ERROR)
    monkeypatch.undo()
    assert "No space left on device" in (error.cause or "")
    assert "the disk is full" in error.message  # worded as every backend words it (adapters/shared/disk.py)
    assert (root / "default" / "a" / "note.md").read_bytes() == before
    assert [p for p in tree(root) if ".tmp-" in p] == []
    assert ok(service.get("a/note")).memory.content == "before"  # type: ignore[attr-defined]


def test_stale_temporary_files_are_ignored_and_cleaned(service: MemoryService, root: Path) -> None:
    ok(service.add(CreateMemory(content="one", path="a/one")))
    stale = root / "default" / "a" / ".two.md.tmp-crashed"
    stale.write_bytes(b"---\nhalf wri")
    assert len(ok(service.list()).memories) == 1  # type: ignore[attr-defined]
    assert ok(service.status()).memory_count == 1  # type: ignore[attr-defined]
    ok(service.add(CreateMemory(content="two", path="a/two")))
    assert not stale.exists()
    stale.write_bytes(b"again")
    ok(service.reindex())
    assert not stale.exists()


# --- path safety ------------------------------------------------------------------------------

HOSTILE_PATHS = [
    "../../evil/x",
    "../evil",
    "/etc/evil",
    "notes/../../evil",
    "notes/./x",
    "..%2F..%2Fevil/x",
    "%2e%2e/%2e%2e/evil",
    "notes\\..\\..\\evil",
    "~/evil/x",
    "．．/．．/evil/x",
    "notes/%00/x",
    "notes/\x00/x",
    "C:/evil/x",
    "notes/_unfiled/x",
    "_unfiled/x",
    ".lock/x",
    "notes/.hidden",
]


def test_hostile_paths_never_leave_the_root(service: MemoryService, root: Path, tmp_path: Path) -> None:
    for raw in HOSTILE_PATHS:
        result = service.add(CreateMemory(content=f"attempt {raw!r}", path=raw))
        if isinstance(result, Failure):
            assert result.failure().code in (ErrorCode.INVALID_PATH, ErrorCode.DESTINATION_EXISTS), (raw, result)
        else:
            stored = result.unwrap().memory
            assert (root / "default" / memory_file(stored.id, stored.path)).is_file(), raw
    for raw_store in ("../evil", "..", "/tmp/evil", "evil/../../x"):
        failed(service.add(CreateMemory(content="x", path="a/b", store=raw_store)), ErrorCode.INVALID_INPUT)
    outside = {p for p in tree(tmp_path) if not p.startswith("data/files/default/")}
    assert outside == set(), outside
    assert all(part.isascii() for p in tree(root) for part in Path(p).parts)


def test_the_adapter_refuses_locations_built_from_unchecked_values(store: FilesVectorStore, tmp_path: Path) -> None:
    """Defence in depth: values that slipped past the domain's validation never become file names."""
    for segments in (("..", "..", "evil"), ("notes", "/etc/evil"), ("notes", "a/../../b"), ("", "x"), ("a", "UPPER")):
        path = MemoryPath(("notes", "x"))
        object.__setattr__(path, "segments", segments)
        failed(store.add([memory(path=path)], [[1.0]]), ErrorCode.INVALID_PATH)
    for bad_id in ("../../evil", "/etc/evil", ID.upper()):
        unfiled = memory()
        object.__setattr__(unfiled, "id", bad_id)
        failed(store.add([unfiled], [[1.0]]), ErrorCode.INVALID_PATH)
    category = CategoryPath(("notes",))
    object.__setattr__(category, "segments", ("..", "..", "evil"))
    registry = ok(FilesCatalog(root=store.directory.parent, index=InMemoryCatalog()).categories("default"))
    failed(registry.put(category, "x"), ErrorCode.INVALID_PATH)  # type: ignore[attr-defined]
    assert {p for p in tree(tmp_path) if not p.startswith("data/files/default/")} == set()


def test_symlinked_folders_are_never_written_through_nor_read(
    service: MemoryService, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ok(service.add(CreateMemory(content="inside", path="real/note")))
    (root / "default" / "linked").symlink_to(outside, target_is_directory=True)
    (outside / "planted.md").write_bytes(
        b"---\nid: 00000000-0000-4000-8000-000000000001\ncreated_at: 2025-01-01\nupdated_at: 2025-01-01\n---\nplanted\n"
    )
    error = failed(service.add(CreateMemory(content="escape", path="linked/x")), ErrorCode.INVALID_PATH)
    assert "symbolic link" in error.message
    failed(service.create_category("linked/sub", description="escape"), ErrorCode.INVALID_PATH)
    assert sorted(p.name for p in outside.iterdir()) == ["planted.md"]
    assert [v.memory.content for v in ok(service.list()).memories] == ["inside"]  # type: ignore[attr-defined]
    failed(service.get("00000000-0000-4000-8000-000000000001"), ErrorCode.MEMORY_NOT_FOUND)


# --- categories -------------------------------------------------------------------------------


def test_category_descriptions_live_in_category_files(service: MemoryService, root: Path) -> None:
    ok(service.create_category("Projects", description="All projects"))
    file = root / "default" / "projects" / CATEGORY_FILE
    assert file.read_text() == "---\ndescription: All projects\n---\n"

    file.write_text("---\ndescription: Edited by hand\nowner: bob\n---\nNotes for people.\n")
    listing = ok(service.list())
    assert [(c.path, c.description) for c in listing.subcategories] == [("projects", "Edited by hand")]  # type: ignore[attr-defined]

    ok(service.describe_category("projects", "Line one\n---\nline three"))
    assert file.read_text() == '---\ndescription: "Line one\\n---\\nline three"\nowner: bob\n---\nNotes for people.\n'
    assert ok(service.list()).subcategories[0].description == "Line one\n---\nline three"  # type: ignore[attr-defined]

    ok(service.create_category("projects/sub/deeper", description="deep"))
    ok(service.add(CreateMemory(content="x", path="projects/sub/note")))
    ok(service.delete_category("projects/sub"))  # soft: the memory's file stays, marked deleted
    (kept,) = (root / "default" / "projects" / "sub").glob("note.*.md")  # moved aside: <slug>.<id>.md
    assert "deleted: true" in kept.read_text()
    assert not (root / "default" / "projects" / "sub" / "deeper").exists()  # the category itself is gone
    ok(service.delete_category("projects/sub", purge=True))  # for good: the folder goes too
    assert not (root / "default" / "projects" / "sub").exists()
    assert file.exists()


def test_an_empty_folder_is_a_category(service: MemoryService, root: Path) -> None:
    ok(service.create_category("seed"))
    (root / "default" / "ideas" / "later").mkdir(parents=True)
    listing = ok(service.list())
    assert [(c.path, c.memory_count, c.description) for c in listing.subcategories] == [  # type: ignore[attr-defined]
        ("ideas", 0, ""),
        ("seed", 0, ""),
    ]
    ok(service.delete_category("ideas/later"))
    assert not (root / "default" / "ideas").exists()


def test_a_malformed_category_file_is_a_clear_error(service: MemoryService, root: Path) -> None:
    ok(service.create_category("projects", description="ok"))
    (root / "default" / "projects" / CATEGORY_FILE).write_text("---\ndescription: [1, 2\n---\n")
    error = failed(service.list(), ErrorCode.INVALID_INPUT)
    assert error.path == f"projects/{CATEGORY_FILE}"
    (root / "default" / "projects" / CATEGORY_FILE).write_text("---\ndescription: 42\n---\n")
    assert "description" in failed(service.list(), ErrorCode.INVALID_INPUT).message


# --- catalog ----------------------------------------------------------------------------------


def test_names_are_the_store_directories(catalog: FilesCatalog, root: Path) -> None:
    assert ok(catalog.names()) == []  # no root yet
    for name in ("work", "default", "Bad_Name", ".hidden", "a--b"):
        (root / name).mkdir(parents=True)
    (root / "notes.txt").write_text("not a store")
    assert ok(catalog.names()) == ["default", "work"]
    failed(catalog.open("missing", create=False), ErrorCode.STORE_NOT_FOUND)
    failed(catalog.categories("missing"), ErrorCode.STORE_NOT_FOUND)
    failed(catalog.open("Bad_Name", create=True), ErrorCode.INVALID_INPUT)


def test_health_reports_the_root_and_the_index(catalog: FilesCatalog, root: Path, service: MemoryService) -> None:
    assert ok(catalog.health()) == {"files_root": str(root), "index_backend": "memory", "index_location": "memory"}
    assert not root.exists()  # asking creates nothing: the first write makes the root
    status = ok(service.status())
    assert (status.backend, status.memory_count, status.location["files_root"]) == ("files", 0, str(root))  # type: ignore[attr-defined]


def test_an_unusable_root_is_backend_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    catalog = new_catalog(blocker / "files")
    failed(catalog.health(), ErrorCode.BACKEND_UNAVAILABLE)
    failed(catalog.open("default", create=True), ErrorCode.BACKEND_UNAVAILABLE)
    assert ok(catalog.names()) == []


def test_an_index_that_is_down_is_reported(root: Path) -> None:
    catalog = FilesCatalog(root=root, index=InMemoryCatalog(unreachable=True))
    failed(catalog.health(), ErrorCode.BACKEND_UNAVAILABLE)
    failed(catalog.open("default", create=True), ErrorCode.BACKEND_UNAVAILABLE)


# --- rebuild under concurrent changes ---------------------------------------------------------


def test_rebuild_after_a_scan_leaves_changes_made_since_alone(root: Path) -> None:
    """A reindex embeds what it scanned; files added, edited or deleted meanwhile are not undone."""
    mine = ok(new_catalog(root).open("default", create=True))
    other = ok(new_catalog(root).open("default", create=False))  # another process
    first, second = (
        memory(path=MemoryPath(("a", "first"))),
        memory(id=str(uuid.UUID(int=2, version=4)), path=MemoryPath(("a", "second"))),
    )
    ok(mine.add([first, second], [[1.0, 0.0], [0.0, 1.0]]))  # type: ignore[attr-defined]
    scanned = ok(mine.scan(EVERYTHING))  # type: ignore[attr-defined]

    late = memory(id=str(uuid.UUID(int=3, version=4)), path=MemoryPath(("a", "late")), content="added meanwhile")
    ok(other.add([late], [[1.0, 1.0]]))  # type: ignore[attr-defined]
    ok(other.update_metadata([evolve(first, content="edited meanwhile")]))  # type: ignore[attr-defined]
    (root / "default" / "a" / "second.md").unlink()

    ok(mine.rebuild(scanned, [[1.0, 0.0]] * len(scanned), "m2"))  # type: ignore[arg-type, attr-defined]
    assert memory_files(root / "default") == {"a/first.md", "a/late.md"}
    assert ok(mine.get([first.id]))[0].content == "edited meanwhile"  # type: ignore[attr-defined, index]


def test_rebuild_without_a_scan_replaces_the_files(store: FilesVectorStore, root: Path) -> None:
    ok(store.add([memory(path=MemoryPath(("a", "old")))], [[1.0]]))
    ok(store.rebuild([memory(id=str(uuid.UUID(int=9, version=4)), path=MemoryPath(("b", "new")))], [[1.0]], "m"))
    assert memory_files(root / "default") == {"b/new.md"}
    assert not (root / "default" / "a").exists()


# --- two processes ----------------------------------------------------------------------------


def _add_many(root: str, worker: int, count: int, shared_paths: bool, start: object) -> None:
    """One process's writes: `count` adds, one at a time, through its own catalog and index."""
    store = FilesCatalog(root=Path(root), index=InMemoryCatalog(embedder_name="hashing-bow")).open(
        "default", create=True
    )
    assert isinstance(store, Success)
    start.wait()  # type: ignore[attr-defined]
    for i in range(count):
        slug = f"item-{i}" if shared_paths else f"w{worker}-item-{i}"
        path = MemoryPath(("shared", f"group-{i % 3}", slug))
        note = Memory(
            id=str(uuid.uuid4()), content=f"worker {worker} note {i}", created_at=T0, updated_at=T0, path=path
        )
        result = store.unwrap().add([note], [[1.0, float(i)]])
        assert isinstance(result, Success), result


def _run_workers(root: Path, *, shared_paths: bool) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [context.Process(target=_add_many, args=(str(root), w, 25, shared_paths, start)) for w in (1, 2)]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(timeout=120)
    assert [p.exitcode for p in workers] == [0, 0]


def _check_fifty(root: Path) -> None:
    files = memory_files(root / "default")
    assert len(files) == 50
    for relative in files:
        text = (root / "default" / relative).read_text()
        parsed = parse_frontmatter(text, store="default")
        assert isinstance(parsed, Success), (relative, parsed)
        assert isinstance(split_frontmatter(text), Success)
    scanned = ok(new_catalog(root).open("default", create=False).bind(lambda s: s.scan(EVERYTHING)))
    assert len({m.id for m in scanned}) == 50  # type: ignore[attr-defined]
    assert [p for p in tree(root) if ".tmp-" in p] == []


@pytest.mark.slow
def test_two_processes_adding_to_one_store_lose_nothing(root: Path) -> None:
    _run_workers(root, shared_paths=False)
    _check_fifty(root)


@pytest.mark.slow
def test_two_processes_adding_on_the_same_paths_lose_nothing(root: Path) -> None:
    """Both write `shared/group-n/item-i`: under the lock the second sees the first and takes `item-i.<id>.md`."""
    _run_workers(root, shared_paths=True)
    _check_fifty(root)
    collided = [p for p in memory_files(root / "default") if p.count(".") == 2]
    assert len(collided) == 25


@pytest.fixture(autouse=True)
def _no_leftover_processes() -> Iterator[None]:
    yield
    for child in multiprocessing.active_children():
        child.join(timeout=5)


def test_passing_is_confirmed_by_the_files_after_a_hand_edit_and_a_hand_deletion(
    store: FilesVectorStore, root: Path
) -> None:
    """The index says which memories have the tag; each file confirms it (the index has not seen the edits)."""
    edited = memory(id=str(uuid.UUID(int=1, version=4)), tags=("keep",), path=MemoryPath(("notes", "edited")))
    gone = memory(id=str(uuid.UUID(int=2, version=4)), tags=("keep",), path=MemoryPath(("notes", "gone")))
    ok(store.add([edited, gone], [[1.0, 0.0], [0.0, 1.0]]))
    where = MemoryFilter(tags=("keep",))
    assert ok(store.passing([edited.id, gone.id], where)) == {edited.id, gone.id}
    file = root / "default" / "notes" / "edited.md"
    file.write_bytes(file.read_bytes().replace(b"keep", b"dropped"))
    (root / "default" / "notes" / "gone.md").unlink()
    assert ok(store.passing([edited.id, gone.id], where)) == set()
    new_tag = MemoryFilter(tags=("dropped",))
    assert ok(store.passing([edited.id], new_tag)) == set()  # until reindex, as `query`: the index decides who
