"""Settings precedence (flag > environment > config file > default) and clear errors for bad values."""

from pathlib import Path

import pytest
from returns.result import Failure

from agent_memory.domain.errors import ErrorCode
from agent_memory.entrypoints.settings import load_settings


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path)}


def test_defaults_follow_the_xdg_layout(home: dict[str, str], tmp_path: Path) -> None:
    settings = load_settings({}, home).unwrap()
    assert settings.data_dir == tmp_path / ".local" / "share" / "agent-memory"
    assert (settings.backend, settings.store, settings.collection) == ("chroma", "default", "memories")
    assert (settings.decay_hours, settings.min_confidence, settings.default_limit) == (720.0, 0.3, 10)
    assert settings.chroma_host is None
    xdg = load_settings({}, {**home, "XDG_DATA_HOME": str(tmp_path / "xdg")}).unwrap()
    assert xdg.data_dir == tmp_path / "xdg" / "agent-memory"


def test_flag_beats_environment_beats_config_file(home: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('backend = "qdrant"\ncollection = "from-file"\ndecay_hours = 48\nmin_confidence = 0.1\n')
    env = {**home, "MEMORY_CONFIG": str(config), "MEMORY_BACKEND": "files", "MEMORY_MIN_CONFIDENCE": "0.2"}
    settings = load_settings({"backend": "chroma"}, env).unwrap()
    assert settings.backend == "chroma"  # flag
    assert settings.min_confidence == 0.2  # environment
    assert (settings.collection, settings.decay_hours) == ("from-file", 48.0)  # config file
    assert load_settings({}, env).unwrap().backend == "files"


def test_the_files_index_is_chroma_unless_set(home: dict[str, str], tmp_path: Path) -> None:
    assert load_settings({}, home).unwrap().files_index == "chroma"
    assert load_settings({}, {**home, "MEMORY_FILES_INDEX": "qdrant"}).unwrap().files_index == "qdrant"
    config = tmp_path / "config.toml"
    config.write_text('files_index = "qdrant"\n')
    assert load_settings({}, {**home, "MEMORY_CONFIG": str(config)}).unwrap().files_index == "qdrant"


def test_the_spec_000_environment_names_still_work(home: dict[str, str]) -> None:
    env = {**home, "CHROMADB_HOST": "db.local", "CHROMADB_PORT": "9000", "COLLECTION_NAME": "legacy"}
    settings = load_settings({}, env).unwrap()
    assert (settings.chroma_host, settings.chroma_port, settings.collection) == ("db.local", 9000, "legacy")


@pytest.mark.parametrize(
    ("env", "flags", "words"),
    [
        ({"CHROMADB_PORT": "eighty"}, {}, "CHROMADB_PORT"),
        ({"CHROMADB_PORT": "70000"}, {}, "chroma_port"),
        ({"MEMORY_DECAY_HOURS": "-1"}, {}, "decay_hours"),
        ({"MEMORY_MIN_CONFIDENCE": "2"}, {}, "min_confidence"),
        ({}, {"backend": "mongo"}, "chroma, qdrant, files"),
        ({"MEMORY_FILES_INDEX": "sqlite"}, {}, "files_index 'sqlite'"),
        ({}, {"store": "../x"}, "store name"),
        ({"MEMORY_ALLOWED_HOSTS": "http://memory.internal/"}, {}, "allowed_hosts"),
        ({"MEMORY_ALLOWED_ORIGINS": "localhost:3000"}, {}, "allowed_origins"),
        ({"MEMORY_ALLOWED_ORIGINS": "http://app.example/path"}, {}, "allowed_origins"),
        ({"MEMORY_ALLOWED_ORIGINS": "http://app.example:port"}, {}, "allowed_origins"),
    ],
)
def test_bad_values_are_clear_errors(
    home: dict[str, str], env: dict[str, str], flags: dict[str, object], words: str
) -> None:
    result = load_settings(flags, {**home, **env})
    assert isinstance(result, Failure)
    assert result.failure().code is ErrorCode.INVALID_INPUT
    assert words in result.failure().message


def test_a_broken_or_unknown_config_file_is_reported(home: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("backend = = 'x'")
    broken = load_settings({}, {**home, "MEMORY_CONFIG": str(config)})
    assert isinstance(broken, Failure) and str(config) in broken.failure().message
    config.write_text('colour = "blue"\n')
    unknown = load_settings({}, {**home, "MEMORY_CONFIG": str(config)})
    assert isinstance(unknown, Failure) and "colour" in unknown.failure().message


def test_a_config_file_named_by_memory_config_must_exist(home: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "typo.toml"
    result = load_settings({}, {**home, "MEMORY_CONFIG": str(missing)})
    assert isinstance(result, Failure) and result.failure().code is ErrorCode.INVALID_INPUT
    assert str(missing) in result.failure().message and "unset MEMORY_CONFIG" in result.failure().message
    missing.write_text("")  # an empty file is a config with nothing set
    assert load_settings({}, {**home, "MEMORY_CONFIG": str(missing)}).unwrap().backend == "chroma"
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert "is not a file" in load_settings({}, {**home, "MEMORY_CONFIG": str(folder)}).failure().message


def test_only_the_default_config_location_may_be_absent(home: dict[str, str], tmp_path: Path) -> None:
    assert load_settings({}, home).unwrap().backend == "chroma"  # no ~/.config/agent-memory/config.toml: defaults
    default = tmp_path / ".config" / "agent-memory" / "config.toml"
    default.mkdir(parents=True)
    assert "is not a file" in load_settings({}, home).failure().message


def test_the_http_allow_lists_come_comma_separated_or_as_a_list(home: dict[str, str], tmp_path: Path) -> None:
    assert load_settings({}, home).unwrap().allowed_hosts == ()
    env = {
        **home,
        "MEMORY_ALLOWED_HOSTS": " memory.internal, 10.0.0.5 ,",
        "MEMORY_ALLOWED_ORIGINS": "http://localhost:3000",
    }
    settings = load_settings({}, env).unwrap()
    assert settings.allowed_hosts == ("memory.internal", "10.0.0.5")
    assert settings.allowed_origins == ("http://localhost:3000",)
    config = tmp_path / "config.toml"
    config.write_text('allowed_hosts = ["a.example", "*"]\nallowed_origins = ["https://app.example"]\n')
    from_file = load_settings({}, {**home, "MEMORY_CONFIG": str(config)}).unwrap()
    assert (from_file.allowed_hosts, from_file.allowed_origins) == (("a.example", "*"), ("https://app.example",))
    config.write_text("allowed_hosts = 3\n")
    assert isinstance(load_settings({}, {**home, "MEMORY_CONFIG": str(config)}), Failure)


def test_the_embedder_is_minilm_or_a_model_directory_made_absolute(
    home: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings({}, home).unwrap().embedder == "minilm"
    config = tmp_path / "config.toml"
    config.write_text('embedder = "./models/nomic"\n')
    monkeypatch.chdir(tmp_path)
    from_file = load_settings({}, {**home, "MEMORY_CONFIG": str(config)}).unwrap()
    assert from_file.embedder == str(tmp_path / "models" / "nomic")  # one model whatever the reader's cwd
    assert load_settings({}, {**home, "MEMORY_EMBEDDER": "/opt/m"}).unwrap().embedder == "/opt/m"
