"""The web page's files on the REST app (headers, token rules, no outside asset) and `memory ui`'s browser opening."""

from __future__ import annotations

import re
import threading
import webbrowser
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.cli.parser import build_parser
from agent_memory.entrypoints.rest.app import build_app
from agent_memory.entrypoints.rest.web_ui import ASSETS, CONTENT_SECURITY_POLICY, _asset
from agent_memory.entrypoints.rest.web_ui.launch import has_display, open_when_ready, page_url
from tests.isolation import empty_config

BASE = "http://127.0.0.1:8080"
FILES = {
    "/ui": "text/html",
    "/ui/core.js": "text/javascript",
    "/ui/memory.js": "text/javascript",
    "/ui/app.js": "text/javascript",
    "/ui/app.css": "text/css",
}


@pytest.fixture
def secured(service: MemoryService) -> Iterator[TestClient[Any]]:
    with TestClient(build_app(service, api_token="s3cret"), base_url=BASE) as client:
        yield client


def test_the_page_is_served_without_the_token_with_a_strict_policy(secured: TestClient[Any]) -> None:
    for path, media_type in FILES.items():
        answer = secured.get(path)
        assert answer.status_code == 200, path
        assert answer.headers["content-type"].startswith(media_type)
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY and "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
    # the data stays behind the token
    assert secured.get("/memories").status_code == 401
    assert secured.get("/", follow_redirects=False).headers["location"] == "/ui"
    for other in ("/ui/index.html", "/ui/nothing.js", "/ui/..%2Fpyproject.toml"):
        assert secured.get(other).status_code == 404, other


def test_the_page_keeps_the_host_and_origin_checks(secured: TestClient[Any]) -> None:
    assert secured.get("/ui", headers={"Host": "attacker.example"}).status_code == 421
    assert secured.get("/ui", headers={"Origin": "http://attacker.example"}).status_code == 403


def test_the_files_hold_no_inline_script_and_nothing_from_elsewhere() -> None:
    html = _asset("index.html").decode()
    assert re.findall(r"<script[^>]*>", html) == [
        f'<script src="/ui/{name}" defer>' for name in ("core.js", "memory.js", "app.js")
    ]
    assert not re.search(r"\son[a-z]+=", html) and "style=" not in html
    for name in ASSETS:
        text = _asset(name).decode()
        assert not re.search(r"(src|href)=[\"']?(https?:)?//", text), name
        assert "@import" not in text and "url(http" not in text, name
    for name in ("core.js", "memory.js", "app.js"):
        script = _asset(name).decode()
        assert "innerHTML" not in script and "eval(" not in script, name  # values from the API enter as text only
        assert "insertAdjacentHTML" not in script and "document.write" not in script, name


def test_the_ui_command_parses_its_port_and_token() -> None:
    args = build_parser().parse_args(["ui", "--port", "9090", "--api-token", "t"])
    assert (args.command, args.port, args.api_token) == ("ui", 9090, "t")
    assert page_url(9090) == "http://127.0.0.1:9090/ui"


def test_a_browser_is_tried_only_where_one_can_show_a_page() -> None:
    assert not has_display({}, platform="linux")
    assert has_display({"DISPLAY": ":0"}, platform="linux")
    assert has_display({"BROWSER": "firefox"}, platform="linux")
    assert has_display({}, platform="darwin") and has_display({}, platform="win32")


def test_no_browser_is_no_failure() -> None:
    def broken(_url: str) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    assert open_when_ready("u", "h", opener=broken, answers=lambda _: True) is False
    assert open_when_ready("u", "h", opener=lambda _: False, answers=lambda _: True) is False
    assert open_when_ready("u", "h", opener=lambda _: True, answers=lambda _: False, wait_seconds=0) is False
    opened: list[str] = []
    calls = iter([False, False, True])
    assert open_when_ready("u", "h", opener=lambda url: opened.append(url) or True, answers=lambda _: next(calls))
    assert opened == ["u"]


def test_memory_ui_serves_on_loopback_prints_the_address_and_opens_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import agent_memory.entrypoints.rest.app
    from agent_memory.entrypoints.cli.in_process import run
    from agent_memory.entrypoints.rest.web_ui import launch

    served: dict[str, Any] = {}

    def fake_run_rest(settings: Any, host: str, port: int, api_token: str | None) -> int:
        served.update(host=host, port=port, api_token=api_token)
        return 0

    opened: list[tuple[str, str]] = []
    monkeypatch.setattr(agent_memory.entrypoints.rest.app, "run_rest", fake_run_rest)
    monkeypatch.setattr(launch, "open_when_ready", lambda url, health: opened.append((url, health)) or True)
    monkeypatch.setenv("MEMORY_CONFIG", empty_config(tmp_path))
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMORY_API_TOKEN", "from-env")
    monkeypatch.setenv("DISPLAY", ":0")

    assert run(["ui", "--port", "9002"]) == 0
    for thread in threading.enumerate():
        if thread.name == "open-browser":
            thread.join(timeout=5)
    assert served == {"host": "127.0.0.1", "port": 9002, "api_token": "from-env"}
    assert "http://127.0.0.1:9002/ui" in capsys.readouterr().err
    assert opened == [("http://127.0.0.1:9002/ui", "http://127.0.0.1:9002/health")]
