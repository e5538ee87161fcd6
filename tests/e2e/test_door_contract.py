"""The door contract: the same scenarios through the Python API, the CLI, REST and MCP, on every backend, with
the same outcome everywhere (issue 15). A door may present differently (text, compact listings), never decide
differently: each scenario asserts one expected outcome, not one per door."""

from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from mcp.client.stdio import StdioServerParameters

from agent_memory import build_service, load_settings
from tests.e2e.conftest import BACKENDS, MEMORY, MemoryCli
from tests.e2e.doors import CliDoor, Door, McpDoor, Page, PythonDoor, Refused, RestDoor, Shown
from tests.e2e.test_mcp import Mcp, stdio_session
from tests.e2e.test_mcp import server_env as mcp_env
from tests.e2e.test_rest import AUTH, free_port, wait_until_healthy
from tests.e2e.test_rest import server_env as rest_env
from tests.isolation import empty_config

pytestmark = [pytest.mark.slow, pytest.mark.server]

DOORS = ("python", "cli", "rest", "mcp")


def _on(backend: str, env: dict[str, str]) -> dict[str, str]:
    return {**env, "MEMORY_BACKEND": backend}


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str, str], Door]]:
    """Opens a door on a backend once per module (each start loads the model); every door its own data dir."""
    doors: dict[tuple[str, str], Door] = {}
    closers: list[Callable[[], None]] = []

    def python(backend: str, home: Path) -> Door:
        env = {"HOME": str(home), "MEMORY_CONFIG": empty_config(home)}
        settings = load_settings({"data_dir": str(home / "data"), "backend": backend}, env)
        return PythonDoor(settings.bind(build_service).unwrap())

    def cli(backend: str, home: Path) -> Door:
        made = MemoryCli(home, backend, mode="served")
        closers.append(made.stop_servers)
        return CliDoor(made)

    def rest(backend: str, home: Path) -> Door:
        port = free_port()
        log = home / "server.log"
        output = log.open("wb")
        process = subprocess.Popen(
            [str(MEMORY), "serve", "--port", str(port)],
            env=_on(backend, rest_env(home)),
            stdout=output,
            stderr=output,
        )
        base = f"http://127.0.0.1:{port}"
        client = httpx.Client(base_url=base, headers=AUTH, timeout=120)

        def close() -> None:
            client.close()
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
            output.close()
            assert "Traceback" not in log.read_text()

        closers.append(close)
        wait_until_healthy(base, process, log)
        return RestDoor(client)

    def mcp(backend: str, home: Path) -> Door:
        params = StdioServerParameters(command=str(MEMORY), args=["mcp"], env=_on(backend, mcp_env(home)))
        errlog = (home / "server.log").open("w")
        portal_cm = start_blocking_portal()
        portal = portal_cm.__enter__()
        session_cm = portal.wrap_async_context_manager(stdio_session(params, errlog))
        session = session_cm.__enter__()

        def close() -> None:
            session_cm.__exit__(None, None, None)
            portal_cm.__exit__(None, None, None)
            errlog.close()
            assert "Traceback" not in (home / "server.log").read_text()

        closers.append(close)
        return McpDoor(Mcp(portal, session))

    makers = {"python": python, "cli": cli, "rest": rest, "mcp": mcp}

    def open_door(name: str, backend: str) -> Door:
        if (name, backend) not in doors:
            home = tmp_path_factory.mktemp(f"{name}-{backend}")
            doors[name, backend] = makers[name](backend, home)
        return doors[name, backend]

    yield open_door
    for close in reversed(closers):
        close()


@pytest.fixture(params=[(door, backend) for backend in BACKENDS for door in DOORS], ids="-".join)
def door(request: pytest.FixtureRequest, opened: Callable[[str, str], Door]) -> Door:
    name, backend = request.param
    return opened(name, backend)


def category() -> str:
    return f"c{uuid.uuid4().hex[:10]}"


def test_a_memory_lives_and_dies_the_same_way_at_every_door(door: Door) -> None:
    where = category()
    added = door.add(f"{where}/editor", "The user edits code in Neovim with a dark theme.", ["tool"])
    assert isinstance(added, Shown), added
    assert (added.path, added.content, added.tags) == (
        f"{where}/editor",
        "The user edits code in Neovim with a dark theme.",
        ("tool",),
    )

    assert door.get(f"{where}/editor") == added
    assert door.get(added.id) == added

    updated = door.update(added.id, content="The user edits code in Helix now.", tags=["tool", "editor"])
    assert updated == Shown(added.id, f"{where}/editor", "The user edits code in Helix now.", ("tool", "editor"))

    assert door.list(where) == Page((f"{where}/editor",), total=1)
    found = door.search("which text editor does the user use", limit=10)
    assert isinstance(found, Page) and f"{where}/editor" in found.paths

    moved = door.move(f"{where}/editor", f"{where}/tools/editor")
    assert moved == Shown(added.id, f"{where}/tools/editor", updated.content, updated.tags)
    assert door.get(f"{where}/editor") == Refused("MEMORY_NOT_FOUND")
    assert door.get(f"{where}/tools/editor") == moved

    assert door.remove(added.id) is True
    assert door.get(added.id) == Refused("MEMORY_NOT_FOUND")
    assert door.remove(added.id) == Refused("MEMORY_NOT_FOUND")
    assert door.list(where) == Refused("CATEGORY_NOT_FOUND")


def test_a_soft_deleted_memory_is_hidden_everywhere_but_kept(door: Door) -> None:
    where = category()
    added = door.add(f"{where}/note", "Soft deletion keeps the quokka record hidden.")
    assert isinstance(added, Shown)
    assert door.delete(f"{where}/note") is True
    assert door.get(added.id) == Refused("MEMORY_NOT_FOUND")
    found = door.search("quokka record", limit=10)
    assert isinstance(found, Page) and f"{where}/note" not in found.paths
    assert door.delete(added.id) == Refused("INVALID_OPERATION")  # already deleted (REST: 409)
    # the path is free again (README: a new memory at the path of a soft-deleted one takes it); the old one stays
    again = door.add(f"{where}/note", "A new note at the old path.")
    assert isinstance(again, Shown) and again.id != added.id
    assert door.get(f"{where}/note") == again
    assert door.remove(added.id) is True  # the hidden one is still stored, so it can be removed for good
    assert door.get(f"{where}/note") == again


def test_every_door_refuses_the_same_inputs_with_the_same_code(door: Door) -> None:
    where = category()
    first = door.add(f"{where}/a", "first")
    assert isinstance(first, Shown)
    assert isinstance(door.add(f"{where}/b", "second"), Shown)

    assert door.get(str(uuid.uuid4())) == Refused("MEMORY_NOT_FOUND")
    assert door.get(f"{where}/missing") == Refused("MEMORY_NOT_FOUND")
    assert door.add("../outside", "x") == Refused("INVALID_PATH")
    assert door.add(f"{where}/a", "taken") == Refused("DESTINATION_EXISTS")
    assert door.add(f"{where}/c", "   ") == Refused("INVALID_INPUT")
    assert door.move(f"{where}/a", f"{where}/b") == Refused("DESTINATION_EXISTS")
    assert door.move(f"{where}/a", "../../etc/x") == Refused("INVALID_PATH")
    assert door.update(f"{where}/missing", content="x") == Refused("MEMORY_NOT_FOUND")
    assert door.search("   ", limit=10) == Refused("INVALID_INPUT")
    assert door.list(f"{where}-nothing-here") == Refused("CATEGORY_NOT_FOUND")
    assert door.get(f"{where}/a") == first  # nothing refused changed it


def test_listings_and_searches_page_the_same_way_at_every_door(door: Door) -> None:
    where = category()
    for n in range(5):
        assert isinstance(door.add(f"{where}/walrus-{n}", f"Walrus fact number {n} about tusks and ice."), Shown)

    whole = door.list(where)
    assert isinstance(whole, Page) and whole.total == 5 and len(whole.paths) == 5
    assert door.list(where, limit=2, offset=2) == Page(whole.paths[2:4], total=5)
    assert door.list(where, limit=2, offset=4) == Page(whole.paths[4:], total=5)
    assert door.list(where, limit=2, offset=9) == Page((), total=5)
    assert door.list(where, limit=0) == Refused("INVALID_INPUT")
    assert door.list(where, limit=1001) == Refused("INVALID_INPUT")
    assert door.list(where, offset=-1) == Refused("INVALID_INPUT")

    ranked = door.search("walrus tusks", limit=6)  # the store may hold other tests' memories: a 6th may follow
    assert isinstance(ranked, Page) and len(ranked.paths) >= 5
    assert set(whole.paths) <= set(ranked.paths)
    page = door.search("walrus tusks", limit=2, offset=1)
    assert isinstance(page, Page) and page.paths == ranked.paths[1:3]
    assert page.has_more is (None if door.name == "cli" else True)  # the CLI's JSON is fixed by spec 000
    later = door.search("walrus tusks", limit=2, offset=4)
    assert isinstance(later, Page) and later.paths == ranked.paths[4:6]
    assert door.search("walrus tusks", limit=0) == Refused("INVALID_INPUT")
    assert door.search("walrus tusks", limit=10, offset=-1) == Refused("INVALID_INPUT")
    assert door.search("walrus tusks", limit=1000, offset=1) == Refused("INVALID_INPUT")
