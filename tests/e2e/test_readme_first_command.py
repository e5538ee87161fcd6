"""Issue 43, item 4: from a fresh copy of the checkout, the README's first command (its own text) and then `memory ui`
serve the web page.

What a fresh clone needs is the default install's distributions and nothing more: the test's venv gets a folder of
links to exactly the distributions the default install requires (agent-memory's requirements without an extra,
followed through their own), which pip finds installed: it fetches only the build backend (the test checks that the
venv got no distribution of its own but agent-memory and what `python3 -m venv` seeds), so a page that needed an extra would fail here."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

pytestmark = [pytest.mark.slow, pytest.mark.server]  # `memory ui` is a REST server

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BOUND_S = 120


def first_command() -> str:
    """The quick start's first sh block, as the README prints it."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"```sh\n(.*?)```", text[text.index("## Quick start") :], re.DOTALL)
    assert found is not None, "no sh block in the README's quick start"
    return found.group(1).strip()


def default_closure(pyproject: Path) -> set[str]:
    """The distributions `pip install .` of this checkout brings: its requirements without an extra, and theirs
    (as installed here)."""
    wanted = [Requirement(line) for line in tomllib.loads(pyproject.read_text())["project"]["dependencies"]]
    seen: set[tuple[str, str]] = set()
    while wanted:
        wanting = wanted.pop()
        name = metadata.distribution(wanting.name).metadata["Name"]
        for extra in ("", *wanting.extras):  # `uvicorn[standard]` brings what its extra names
            if (name, extra) in seen:
                continue
            seen.add((name, extra))
            for line in metadata.requires(name) or []:
                requirement = Requirement(line)
                if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                    wanted.append(requirement)
    return {name for name, _ in seen}


def link_farm(folder: Path, names: set[str]) -> None:
    """A folder of links to the installed files of these distributions (their packages, modules, metadata)."""
    site = Path(sysconfig.get_paths()["purelib"])
    folder.mkdir()
    for name in names:
        dist = metadata.distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            if (site / top).exists() and not (folder / top).exists() and not top.startswith("__editable__"):
                (folder / top).symlink_to(site / top)


def scratch_copy(target: Path) -> None:
    """The checkout as `git clone` gives it: its tracked files (a clone's, with this working tree's changes)."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.split(b"\0")
    for raw in filter(None, tracked):
        relative = os.fsdecode(raw)
        source = ROOT / relative
        if source.is_file():
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / relative)


def pip_configuration() -> dict[str, str]:
    """This machine's pip settings (its index, its wheel folders) as PIP_* variables: the test's HOME hides the
    user's pip.conf, and the build backend must come from where this machine's pip takes packages."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False, timeout=120
    ).stdout
    found = {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        name = key.split(".", 1)[-1].upper().replace("-", "_")
        found[f"PIP_{name}"] = value.strip().strip("'\"")
    return found | {k: v for k, v in os.environ.items() if k.startswith("PIP_")}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_readme_first_command_then_memory_ui_serves_the_page(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    clone, home, tools = tmp_path / "clone", tmp_path / "home", tmp_path / "bin"
    clone.mkdir()
    home.mkdir()
    tools.mkdir()
    scratch_copy(clone)
    (tools / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    # the default install's distributions, already on this machine, stand in for the package index
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True, timeout=120)
    farm = tmp_path / "default-install"
    link_farm(farm, default_closure(clone / "pyproject.toml"))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = clone / ".venv" / "lib" / version / "site-packages"
    (site / "default-install.pth").write_text(f"{farm}\n")
    env = {"PATH": f"{tools}:{os.environ['PATH']}", "HOME": str(home), **pip_configuration()}
    try:
        ran = subprocess.run(
            ["bash", "-c", first_command()], cwd=clone, env=env, capture_output=True, text=True, timeout=600
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert "User prefers Python" in ran.stdout and "1 memory found" in ran.stdout, ran.stdout
        fetched = {entry.name.split("-")[0].lower() for entry in site.glob("*.dist-info")} - {
            "agent_memory",
            "pip",
            "setuptools",
        }
        assert fetched == set(), f"the default install lacked {fetched}"
        port = free_port()
        ui = subprocess.Popen(
            [str(clone / ".venv" / "bin" / "memory"), "ui", "--port", str(port)],
            cwd=clone,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            page = fetch(f"http://127.0.0.1:{port}/ui", ui)
            assert "<html" in page.lower() and "memory" in page.lower()
        finally:
            ui.terminate()
            ui.communicate(timeout=60)
    finally:
        memory = clone / ".venv" / "bin" / "memory"
        if memory.exists():
            subprocess.run([str(memory), "server", "stop", "--all"], env=env, capture_output=True, timeout=180)


def fetch(url: str, server: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + BOUND_S
    while True:
        assert server.poll() is None, server.communicate()[1][-3000:]
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                return str(answer.read().decode("utf-8"))
        except OSError:
            assert time.monotonic() < deadline, "the page never answered"
            time.sleep(0.2)
