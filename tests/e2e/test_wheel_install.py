"""The built wheel, installed into a fresh venv beside a user app that has its own domain/ and adapters/."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_INPUTS = (
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "NOTICE",
    "MANIFEST.in",
    "src",
    "domain",
    "adapters",
    "entrypoints",
)

pytestmark = pytest.mark.slow


def _readme_python_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use it from Python") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("agent_memory-*.whl")
    return built


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> tuple[Path, set[str]]:
    """A new venv with the wheel installed and nothing else of its own: its dependencies come from this env."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    before = {entry.name for entry in site.iterdir()}
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    added = {entry.name for entry in site.iterdir()} - before
    # after the install: this env's packages (the dependencies) come last on the fresh venv's path
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python, added


def test_the_wheel_adds_exactly_one_import_package(fresh_venv: tuple[Path, set[str]]) -> None:
    _, added = fresh_venv
    packages = {name for name in added if not name.endswith(".dist-info")}
    assert packages == {"agent_memory"}


def test_the_wheel_carries_its_data_and_no_research(wheel: Path) -> None:
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "agent_memory/py.typed" in names
    assert "agent_memory/adapters/models/all-MiniLM-L6-v2/tokenizer.json" in names
    assert "agent_memory/adapters/models/all-MiniLM-L6-v2/model.onnx" in names
    assert "agent_memory/entrypoints/cli/manifest.json" in names  # the `memory` parser reads it
    for asset in (
        "index.html",
        "core.js",
        "memory.js",
        "app.js",
        "app.css",
    ):  # the web page `memory serve` answers at /ui
        assert f"agent_memory/entrypoints/rest/web_ui/static/{asset}" in names
    assert not [name for name in names if name.split("/")[0] not in {"agent_memory"} and ".dist-info" not in name]
    assert not [name for name in names if "bench" in name or "tests/" in name]


def test_the_readme_example_runs_beside_an_app_with_its_own_domain_and_adapters(
    fresh_venv: tuple[Path, set[str]], tmp_path: Path
) -> None:
    python, _ = fresh_venv
    app = tmp_path / "app"
    for package in ("domain", "adapters", "entrypoints"):
        (app / package).mkdir(parents=True)
        (app / package / "__init__.py").write_text(f"OWNER = 'the app ({package})'\n", encoding="utf-8")
    (app / "domain" / "errors.py").write_text("class AppError(Exception):\n    pass\n", encoding="utf-8")
    example = _readme_python_example().replace("/tmp/my-app-memory", str(tmp_path / "memory-data"))
    check = textwrap.dedent(
        """
        import domain, adapters, entrypoints, domain.errors
        assert domain.OWNER == "the app (domain)" and hasattr(domain.errors, "AppError")
        assert adapters.OWNER == "the app (adapters)" and entrypoints.OWNER == "the app (entrypoints)"
        import agent_memory
        print("agent_memory from", agent_memory.__file__)
        """
    )
    (app / "main.py").write_text(example + check, encoding="utf-8")

    out = subprocess.run([str(python), "main.py"], cwd=app, capture_output=True, text=True, timeout=300)

    assert out.returncode == 0, out.stderr
    assert "User prefers Python" in out.stdout
    assert str(python.parent.parent) in out.stdout.splitlines()[-1]  # the wheel's copy, not a checkout


def test_the_installed_command_runs_as_module_and_script(fresh_venv: tuple[Path, set[str]]) -> None:
    python, _ = fresh_venv
    version = subprocess.run([str(python), "-m", "agent_memory", "--version"], capture_output=True, text=True)
    script = subprocess.run([str(python.parent / "memory"), "--version"], capture_output=True, text=True)
    assert version.returncode == script.returncode == 0
    assert version.stdout == script.stdout and version.stdout.startswith("memory ")
