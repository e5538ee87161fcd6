"""Qdrant-specific checks: layout, local-mode locking, unreachable servers, rebuild crash recovery."""

from __future__ import annotations

import contextlib
import http.server
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from qdrant_client import QdrantClient, models
from returns.result import Result

import agent_memory.adapters.qdrant.catalog as qdrant_catalog
import agent_memory.adapters.qdrant.layout as qdrant_layout
import agent_memory.adapters.qdrant.records as qdrant_records
from agent_memory.adapters.qdrant.boundary import Boundary
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.layout import GENERATION
from agent_memory.adapters.qdrant.layout import index_payload as _index_payload
from agent_memory.adapters.qdrant.records import (
    BOOL_FIELDS,
    DENSE,
    INTEGER_FIELDS,
    KEYWORD,
    KEYWORD_FIELDS,
    memory_payload,
    point_ids,
    to_filter,
)
from agent_memory.adapters.qdrant.store import QdrantVectorStore
from agent_memory.adapters.shared.record_time import NEVER_EXPIRES_US
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import CategoryPath
from tests.contract.vector_store_contract import (
    DIM,
    MODEL,
    NOW,
    assert_query_matches,
    assert_scan_matches,
    axis,
    failed_with,
    full_memory,
    ok,
    probes,
    sample,
)

ROOT = Path(__file__).resolve().parents[2]
HOLDER_READY_TIMEOUT_S = 60.0


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[QdrantCatalog]:
    opened = local(tmp_path / "qdrant")
    yield opened
    opened.close()


def local(path: Path, **changes: Any) -> QdrantCatalog:
    return QdrantCatalog(path=path, embedder_name=MODEL, dimension=DIM, **changes)


def filled(catalog: QdrantCatalog, count: int = 6) -> tuple[QdrantVectorStore, list[Memory]]:
    store = ok(catalog.open("default", create=True))
    pairs = sample(count)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    return store, [m for m, _ in pairs]


def contents(catalog: QdrantCatalog) -> tuple[str | None, list[str]]:
    """What a fresh process would read: the catalog is closed and the folder opened anew."""
    catalog.close()
    store = ok(catalog.open("default", create=False))
    return ok(store.embedding_model()), sorted(m.id for m in ok(store.scan(MemoryFilter(include_deleted=True))))


def collection_names(client: QdrantClient) -> list[str]:
    return sorted(c.name for c in client.get_collections().collections)


# --- catalog and layout -----------------------------------------------------------------------


def test_client_is_created_lazily(tmp_path: Path) -> None:
    catalog = local(tmp_path / "not-yet")
    assert not (tmp_path / "not-yet").exists()
    assert ok(catalog.health()) == {"qdrant_location": str(tmp_path / "not-yet"), "collection": "memories"}
    assert not (tmp_path / "not-yet").exists()  # asking creates nothing: the first write makes the folder
    catalog.close()


def test_backend_is_qdrant(tmp_path: Path) -> None:
    assert local(tmp_path).backend == "qdrant"


def test_a_catalog_needs_a_path_or_a_url() -> None:
    with pytest.raises(ValueError, match="path"):
        QdrantCatalog(embedder_name=MODEL, dimension=DIM)


def test_stores_are_aliases_over_generations(tmp_path: Path) -> None:
    catalog = local(tmp_path, collection="mem")
    for name in ("default", "work-notes"):
        ok(catalog.open(name, create=True))
    ok(ok(catalog.categories("work-notes")).put(CategoryPath(("a",)), "d"))
    client = ok(catalog.open("default", create=False)).client
    client.create_collection("unrelated", vectors_config=models.VectorParams(size=2, distance=models.Distance.DOT))
    aliases = {a.alias_name: a.collection_name for a in client.get_aliases().aliases}
    assert aliases == {"mem": "mem.gen-0", "mem--work-notes": "mem--work-notes.gen-0"}
    assert collection_names(client) == [
        "mem--work-notes.categories",
        "mem--work-notes.gen-0",
        "mem.gen-0",
        "mem.models",
        "unrelated",
    ]
    assert ok(catalog.names()) == ["default", "work-notes"]
    catalog.close()


def test_a_generation_has_a_cosine_dense_vector_and_an_idf_sparse_one(catalog: QdrantCatalog) -> None:
    store = ok(catalog.open("default", create=True))
    params = store.client.get_collection(store.collection).config.params
    assert isinstance(params.vectors, dict) and isinstance(params.sparse_vectors, dict)
    assert params.vectors[DENSE].size == DIM
    assert params.vectors[DENSE].distance is models.Distance.COSINE
    assert params.sparse_vectors[KEYWORD].modifier is models.Modifier.IDF


def test_the_model_is_recorded_per_generation(catalog: QdrantCatalog) -> None:
    store, _ = filled(catalog)
    client = store.client
    (record,) = client.scroll("memories.models", with_payload=True)[0]
    assert record.payload == {"collection": "memories.gen-0", "embedding_model": MODEL, "dimension": DIM}
    ok(store.rebuild([], [], "model-2"))
    (record,) = client.scroll("memories.models", with_payload=True)[0]
    assert record.payload is not None and record.payload["embedding_model"] == "model-2"
    assert record.payload["collection"] == store.collection != "memories.gen-0"
    assert contents(catalog) == ("model-2", [])


def test_missing_store_message_says_how_to_create_it(catalog: QdrantCatalog) -> None:
    failure = catalog.open("work", create=False).failure()
    assert failure.code is ErrorCode.STORE_NOT_FOUND
    assert failure.message == (
        "Store 'work' does not exist. Create it with `memory store create work` or add a memory to it."
    )


def test_invalid_store_name_is_invalid_input(catalog: QdrantCatalog) -> None:
    failed_with(catalog.open("Bad--Name", create=True), ErrorCode.INVALID_INPUT)


def test_a_foreign_collection_with_the_store_name_is_left_alone(catalog: QdrantCatalog) -> None:
    store = ok(catalog.open("default", create=True))
    store.client.create_collection(
        "memories--other", vectors_config=models.VectorParams(size=2, distance=models.Distance.DOT)
    )
    failure = failed_with(catalog.open("other", create=True), ErrorCode.STORAGE_ERROR)
    assert "was not created by agent-memory" in failure.message
    failed_with(catalog.open("other", create=False), ErrorCode.STORE_NOT_FOUND)
    assert ok(catalog.names()) == ["default"]


# --- local mode admits one process -----------------------------------------------------------

HOLDER = """
import sys
from pathlib import Path
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
catalog = QdrantCatalog(path=Path(sys.argv[1]), embedder_name="m", dimension=8)
catalog.open("default", create=True).unwrap()  # a write: the folder is made and its lock held
print("ready", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def held_folder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A folder whose local-mode lock another process holds until its stdin closes."""
    folder = tmp_path / "qdrant"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(holder.stdout.readline() if holder.stdout else ""))
        reader.start()
        reader.join(HOLDER_READY_TIMEOUT_S)
        assert ready == ["ready\n"], holder.stderr.read() if holder.poll() is not None and holder.stderr else ready
        yield folder, holder
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(10)


def test_a_second_process_gets_a_clear_backend_unavailable(held_folder: tuple[Path, subprocess.Popen[str]]) -> None:
    folder, holder = held_folder
    catalog = local(folder)
    for attempt in (catalog.health(), catalog.open("default", create=True), catalog.names()):
        error = failed_with(attempt, ErrorCode.BACKEND_UNAVAILABLE)
        assert error.message == (
            f"The Qdrant data at {folder} is in use by another process: Qdrant's local mode admits one process "
            "at a time. Stop the other process, or run a Qdrant server and set QDRANT_URL."
        )
        assert error.cause and "already accessed by another instance" in error.cause
    assert holder.stdin is not None
    holder.stdin.close()  # the holder exits and releases the lock
    holder.wait(30)
    ok(catalog.open("default", create=True))  # a failed attempt is retried on the next call
    catalog.close()


def test_one_catalog_serves_several_threads(catalog: QdrantCatalog) -> None:
    store, memories = filled(catalog)
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            extra, vector = sample(1, seed=100 + index)[0]
            ok(store.add([extra], [vector]))
            ok(store.query(vector, MemoryFilter(include_deleted=True), 3))
        except BaseException as error:  # surfaced below: a thread's assertion would be lost otherwise
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert ok(store.count()) == len(memories) + 4


def test_threads_opening_a_local_folder_at_once_share_one_client(tmp_path: Path) -> None:
    catalog = local(tmp_path / "qdrant")
    results: list[Result[Mapping[str, str], DomainError]] = []
    threads = [threading.Thread(target=lambda: results.append(catalog.health())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 4 and all(ok(result) for result in results)
    catalog.close()


def test_a_closed_catalog_reopens_and_its_old_stores_fail_cleanly(catalog: QdrantCatalog) -> None:
    store, memories = filled(catalog)
    catalog.close()
    failed_with(store.count(), ErrorCode.STORAGE_ERROR)
    assert ok(ok(catalog.open("default", create=False)).count()) == len(memories)


def test_unwritable_data_path_is_a_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    catalog = local(blocker / "qdrant")
    failed_with(catalog.health(), ErrorCode.BACKEND_UNAVAILABLE)
    failed_with(catalog.open("default", create=True), ErrorCode.BACKEND_UNAVAILABLE)


# --- server mode without a server ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose accept queue is full: the kernel drops new SYNs, so connecting hangs (a blackholed host)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        fillers = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        time.sleep(0.2)
        try:
            yield port
        finally:
            for filler in fillers:
                filler.close()


def assert_unreachable(url: str, within_s: float) -> None:
    catalog = QdrantCatalog(url=url, embedder_name=MODEL, dimension=DIM)
    for attempt in (catalog.health, lambda: catalog.open("default", create=True), catalog.names):
        started = time.monotonic()
        error = failed_with(attempt(), ErrorCode.BACKEND_UNAVAILABLE)
        assert time.monotonic() - started < within_s
        assert error.message == f"Cannot connect to Qdrant at {url}. Is the server running?"


# The bounds are far from the figures they tell apart (timeouts of 30 s and 60 s), never near a real duration:
# the machines running the tests are shared and a second of scheduling noise must not fail them.


def test_a_refused_connection_is_backend_unavailable_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qdrant_catalog, "CONNECT_TIMEOUT_S", 30.0)  # a refusal must not wait for it
    assert_unreachable(f"http://127.0.0.1:{_free_port()}", within_s=15.0)


def test_a_silent_server_is_given_up_after_the_connect_timeout(
    silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests themselves may take REQUEST_TIMEOUT_S (60 s)
    monkeypatch.setattr(qdrant_catalog, "CONNECT_TIMEOUT_S", 1.0)
    assert_unreachable(f"http://127.0.0.1:{silent_port}", within_s=30.0)


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
def test_an_http_server_that_is_not_qdrant_is_backend_unavailable(tmp_path: Path) -> None:
    with _http_server(status=404) as url:
        catalog = QdrantCatalog(url=url, embedder_name=MODEL, dimension=DIM)
        error = failed_with(catalog.health(), ErrorCode.BACKEND_UNAVAILABLE)
        assert error.message == f"No Qdrant server answers at {url} (HTTP 404). Check QDRANT_URL."
        failed_with(catalog.open("default", create=True), ErrorCode.BACKEND_UNAVAILABLE)
    with _http_server(status=401) as url:
        catalog = QdrantCatalog(url=url, api_key="wrong", embedder_name=MODEL, dimension=DIM)
        error = failed_with(catalog.names(), ErrorCode.BACKEND_UNAVAILABLE)
        assert error.message == f"Qdrant at {url} refused the request (HTTP 401). Check QDRANT_API_KEY."


@contextlib.contextmanager
def _http_server(status: int) -> Iterator[str]:
    """A local HTTP server answering every request with `status` and an empty body."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *_args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_malformed_url_is_backend_unavailable() -> None:
    catalog = QdrantCatalog(url="ftp://example.org", embedder_name=MODEL, dimension=DIM)
    failed_with(catalog.health(), ErrorCode.BACKEND_UNAVAILABLE)


def test_server_generations_get_payload_indexes() -> None:
    @attrs.define
    class Recorder:
        calls: list[tuple[str, str, Any]] = attrs.field(factory=list)

        def create_payload_index(self, name: str, *, field_name: str, field_schema: Any, wait: bool) -> None:
            self.calls.append((name, field_name, field_schema))

    recorder = Recorder()
    _index_payload(recorder, "memories.gen-0")  # type: ignore[arg-type]
    indexed = {field_name: schema for _, field_name, schema in recorder.calls}
    assert set(indexed) == {*KEYWORD_FIELDS, *BOOL_FIELDS, *INTEGER_FIELDS}
    assert indexed["tags"] is models.PayloadSchemaType.KEYWORD
    assert indexed["deleted"] is models.PayloadSchemaType.BOOL
    assert indexed["expires_us"] is models.PayloadSchemaType.INTEGER


# --- records and filters ----------------------------------------------------------------------


def test_payload_keeps_lists_and_timestamps_filterable() -> None:
    memory = full_memory(tags=("a", "a"), expires_at=None, last_reinforced_at=None)
    payload = memory_payload(memory)
    assert payload["tags"] == ["a", "a"]
    assert payload["namespace_prefixes"] == ["user", "user\x1fu-123", "user\x1fu-123\x1fé"]
    assert payload["path_prefixes"] == ["projects", "projects/agent-memory", "projects/agent-memory/design"]
    assert payload["expires_us"] == NEVER_EXPIRES_US and payload["expires_at"] == ""
    assert payload["created_at"] == "2024-05-06T07:08:09.123456+00:00"
    assert payload["anchor_us"] == payload["created_us"]  # reinforceable but never reinforced


def test_filter_translation() -> None:
    assert to_filter(MemoryFilter(include_deleted=True)) is None
    only_live = to_filter(MemoryFilter())
    assert only_live == models.Filter(must=[models.FieldCondition(key="deleted", match=models.MatchValue(value=False))])
    all_tags = to_filter(MemoryFilter(tags=("a", "b", "a"), include_deleted=True))
    assert all_tags is not None and isinstance(all_tags.must, list) and len(all_tags.must) == 2


def test_point_ids_keep_only_canonical_uuids() -> None:
    good = str(uuid.uuid4())
    assert point_ids([good, "not-a-uuid", good.upper(), good, ""]) == [good]


def test_a_foreign_point_is_a_storage_error_not_an_exception(catalog: QdrantCatalog) -> None:
    store = ok(catalog.open("default", create=True))
    foreign = str(uuid.uuid4())
    store.client.upsert(
        store.collection, points=[models.PointStruct(id=foreign, vector={DENSE: axis(0)}, payload={"x": 1})]
    )
    failed_with(store.get([foreign]), ErrorCode.STORAGE_ERROR)
    failed_with(store.query(axis(0), MemoryFilter(include_deleted=True), 5), ErrorCode.STORAGE_ERROR)
    failed_with(store.scan(MemoryFilter(include_deleted=True)), ErrorCode.STORAGE_ERROR)


def test_ids_that_cannot_be_points_are_simply_absent(catalog: QdrantCatalog) -> None:
    store, memories = filled(catalog)
    assert ok(store.get(["not-a-uuid", memories[0].id])) == [memories[0]]
    ok(store.remove(["not-a-uuid"]))
    assert ok(store.count()) == len(memories)


def test_wrong_dimension_is_an_embedding_mismatch(catalog: QdrantCatalog) -> None:
    store = ok(catalog.open("default", create=True))
    failed_with(store.add([full_memory()], [[1.0, 0.0]]), ErrorCode.EMBEDDING_MISMATCH)
    failed_with(store.query([1.0, 0.0], MemoryFilter(), 3), ErrorCode.EMBEDDING_MISMATCH)


def test_library_errors_become_storage_errors(catalog: QdrantCatalog) -> None:
    store = ok(catalog.open("default", create=True))
    store.dimension = None  # let the bad vector reach Qdrant
    failure = failed_with(store.replace([full_memory()], [[1.0, 0.0]]), ErrorCode.STORAGE_ERROR)
    assert failure.cause


class _Bug(RuntimeError):
    """A RuntimeError subclass: not how local mode says its client is closed, so a bug to let through."""


def _raise(error: Exception) -> None:
    raise error


def test_the_boundary_runs_a_port_method_whole_under_the_guard_and_lets_bugs_through() -> None:
    steps: list[str] = []

    @contextlib.contextmanager
    def guard() -> Iterator[None]:
        steps.append("locked")
        yield
        steps.append("released")

    boundary = Boundary("here", server=False, guard=guard())
    assert ok(boundary.result("count", lambda: steps.append("work") or len(steps))) == 2
    assert steps == ["locked", "work", "released"]
    closed = Boundary("here", server=False, guard=contextlib.nullcontext())
    error = failed_with(closed.result("count", lambda: _raise(RuntimeError("closed"))), ErrorCode.STORAGE_ERROR)
    assert error.message == "Qdrant failed to count."
    with pytest.raises(_Bug):
        closed.result("count", lambda: _raise(_Bug("a bug")))


def test_scan_and_writes_page_through_small_batches(catalog: QdrantCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qdrant_layout, "SCAN_PAGE", 7)
    monkeypatch.setattr(qdrant_layout, "MAX_BATCH_POINTS", 6)
    store = ok(catalog.open("default", create=True))
    pairs = sample()
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    assert_scan_matches(store, pairs, MemoryFilter(include_deleted=True))
    assert_scan_matches(store, pairs, MemoryFilter(namespace=("user",)))
    ok(store.update_metadata([attrs.evolve(m, agent="z") for m, _ in pairs]))
    assert {m.agent for m in ok(store.get([m.id for m, _ in pairs]))} == {"z"}
    ok(store.remove([m.id for m, _ in pairs]))
    assert ok(store.count()) == 0


def test_categories_page_through_scrolls(catalog: QdrantCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qdrant_layout, "SCAN_PAGE", 3)
    ok(catalog.open("default", create=True))
    registry = ok(catalog.categories("default"))
    for i in range(8):
        ok(registry.put(CategoryPath((f"c{i}",)), f"d{i}"))
    assert dict(ok(registry.describe_all())) == {f"c{i}": f"d{i}" for i in range(8)}


# --- rebuild: a crash at any step leaves the old or the new contents readable -------------------


def test_crash_while_filling_keeps_the_old_contents(catalog: QdrantCatalog) -> None:
    store, old = filled(catalog)
    half = "memories" + GENERATION + "half"
    qdrant_layout.create_generation(store.client, half, DIM, server=False)
    fresh = sample(2, seed=31)
    store.client.upsert(half, points=[qdrant_records.point(m, v) for m, v in fresh])  # then the "crash"
    assert contents(catalog) == (MODEL, sorted(m.id for m in old))
    store = ok(catalog.open("default", create=False))
    ok(store.rebuild(old[:2], [axis(0), axis(1)], "later"))  # a later rebuild drops the stale half
    assert half not in collection_names(store.client)
    assert contents(catalog) == ("later", sorted(m.id for m in old[:2]))


def test_crash_after_recording_but_before_the_switch_keeps_the_old(catalog: QdrantCatalog) -> None:
    store, old = filled(catalog)
    fresh = sample(4, seed=31)
    ok(store._stage([m for m, _ in fresh], [v for _, v in fresh], "next-model", DIM))  # no alias switch
    assert contents(catalog) == (MODEL, sorted(m.id for m in old))


def test_crash_after_the_switch_shows_the_new_and_the_next_rebuild_tidies(catalog: QdrantCatalog) -> None:
    store, _ = filled(catalog)
    fresh = sample(4, seed=31)
    staged = ok(store._stage([m for m, _ in fresh], [v for _, v in fresh], "next-model", DIM))
    qdrant_layout.switch_alias(store.client, "memories", staged.collection)  # then the "crash"
    assert contents(catalog) == ("next-model", sorted(m.id for m, _ in fresh))
    assert ok(catalog.names()) == ["default"]
    reopened = ok(catalog.open("default", create=False))
    generations = [n for n in collection_names(reopened.client) if n.startswith("memories" + GENERATION)]
    assert generations == sorted(["memories.gen-0", staged.collection])
    ok(reopened.rebuild([], [], "again"))
    generations = [n for n in collection_names(reopened.client) if n.startswith("memories" + GENERATION)]
    assert generations == [reopened.collection]
    records = reopened.client.scroll("memories.models", with_payload=True)[0]
    assert [r.payload["collection"] for r in records if r.payload] == [reopened.collection]


def test_crash_while_creating_a_store_leaves_no_store_and_a_retry_works(catalog: QdrantCatalog) -> None:
    store = ok(catalog.open("default", create=True))
    qdrant_layout.create_generation(store.client, "memories--work" + GENERATION + "0", DIM, server=False)
    failed_with(catalog.open("work", create=False), ErrorCode.STORE_NOT_FOUND)
    assert ok(catalog.names()) == ["default"]
    work = ok(catalog.open("work", create=True))
    assert work.collection == "memories--work.gen-0" and ok(work.embedding_model()) == MODEL
    assert ok(catalog.names()) == ["default", "work"]


def test_a_leftover_first_generation_of_another_dimension_is_replaced(catalog: QdrantCatalog) -> None:
    store = ok(catalog.open("default", create=True))
    qdrant_layout.create_generation(store.client, "memories--work" + GENERATION + "0", DIM + 4, server=False)
    work = ok(catalog.open("work", create=True))
    assert work.dimension == DIM and ok(work.embedding_model()) == MODEL
    ok(work.add([full_memory()], [axis(0)]))


def test_a_rebuild_never_drops_the_generation_the_alias_points_at(catalog: QdrantCatalog) -> None:
    """On a server another process may rebuild meanwhile; our next rebuild must not unpublish its result."""
    store, _ = filled(catalog)
    other = ok(catalog.open("default", create=False))
    stale_view = attrs.evolve(other)
    fresh = sample(3, seed=8)
    ok(other.rebuild([m for m, _ in fresh], [v for _, v in fresh], "theirs"))  # gen-0 is gone now
    published = other.collection
    staged = ok(stale_view._stage([], [], "ours", DIM))
    assert published in collection_names(store.client)
    assert ok(stale_view._swap_in(staged)) is None
    assert contents(catalog) == ("ours", [])


def test_a_rebuild_keeps_serving_queries_with_the_new_contents(catalog: QdrantCatalog) -> None:
    store, _ = filled(catalog, count=12)
    fresh = sample(8, seed=44)
    ok(store.rebuild([m for m, _ in fresh], [v for _, v in fresh], "m2"))
    assert_query_matches(store, fresh, probes()[0], MemoryFilter(alive_at=NOW), 5)
    assert_scan_matches(store, fresh, MemoryFilter(include_deleted=True))
