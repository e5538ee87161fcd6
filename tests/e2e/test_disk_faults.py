"""A read-only or full disk under every embedded backend, through the `memory` command: reads keep working on a
read-only disk, and every refused write says which it is.

Made for real: as a user, `chmod -R a-w`; as root (whom permissions do not stop), a read-only bind mount and a
small tmpfs, skipped only where mounting is not allowed either.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.conftest import BACKENDS, MemoryCli

pytestmark = pytest.mark.slow

ROOT = os.geteuid() == 0


def _mount(*arguments: str) -> None:
    done = subprocess.run(["mount", *arguments], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"running as root, where permissions do not stop writes, and mount is refused: {done.stderr}")


def _unmount(folder: Path) -> None:
    subprocess.run(["umount", str(folder)], capture_output=True, check=True)


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` and everything below it refuse writes while inside."""
    if not ROOT:
        modes = {path: path.stat().st_mode for path in [folder, *folder.rglob("*")] if not path.is_symlink()}
        for path, mode in modes.items():
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    _mount("--bind", str(folder), str(folder))
    try:
        _mount("-o", "remount,ro,bind", str(folder))
        yield
    finally:
        _unmount(folder)


@contextmanager
def small_disk(folder: Path) -> Iterator[None]:
    """A 64 MB file system at `folder` (root only: a tmpfs)."""
    if not ROOT:
        pytest.skip("a full disk is made with a tmpfs mount, which needs root")
    folder.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder))
    try:
        yield
    finally:
        _unmount(folder)


def fill(folder: Path) -> None:
    """Write until the file system has no space left."""
    with (folder / "ballast").open("wb") as ballast:
        try:
            while True:
                ballast.write(b"\0" * (1 << 20))
                ballast.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC


@pytest.mark.parametrize("backend", BACKENDS)
def test_reads_work_on_a_read_only_disk_and_writes_say_it_is_read_only(tmp_path: Path, backend: str) -> None:
    cli = MemoryCli(tmp_path, backend)
    data = Path(cli.env["MEMORY_DATA_DIR"])
    alpha = cli.ok("add", "notes/alpha", "--content", "the alpha note about otters")
    cli.ok("create", "the beta note about badgers")

    with read_only(data):
        assert cli.ok("get", "notes/alpha")["id"] == alpha["id"]
        assert cli.ok("get", alpha["id"])["content"] == "the alpha note about otters"
        assert len(cli.ok("list")["memories"]) == 2
        assert cli.ok("search", "otters", "--limit", "1")["results"][0]["id"] == alpha["id"]
        exported = cli("export")
        assert exported.code == 0 and len(exported.stdout.strip().split("\n")) == 3, exported.stderr
        status = cli.ok("status")
        assert (status["status"], status["memory_count"]) == ("healthy", 2)
        for command in (
            ["create", "gamma"],
            ["update", "notes/alpha", "--content", "changed"],
            ["delete", "notes/alpha"],
        ):
            error = cli.fails(*command)
            assert error["code"] == "STORAGE_ERROR", command
            assert "read-only" in error["error"] or "not writable" in error["error"], error

    assert cli.ok("get", "notes/alpha")["content"] == "the alpha note about otters"  # nothing was changed
    assert len(cli.ok("list")["memories"]) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_write_to_a_full_disk_says_the_disk_is_full(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "data"
    with small_disk(data):
        cli = MemoryCli(tmp_path, backend)
        kept = cli.ok("create", "written while there was room")
        fill(data)
        error = cli.fails("create", "a memory too many " * 2000)
        assert error["code"] in ("STORAGE_ERROR", "BACKEND_UNAVAILABLE")
        assert "the disk is full" in error["error"], error
        assert "Nothing was stored" in error["error"] and "may be stored" not in error["error"], error
        (data / "ballast").unlink()
        assert cli.ok("get", kept["id"])["content"] == "written while there was room"
