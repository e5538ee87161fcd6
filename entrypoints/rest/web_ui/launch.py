"""`memory ui`: the REST server on loopback with the page opened in the user's browser (or its address printed)."""

from __future__ import annotations

import sys
import threading
import time
import urllib.error
import urllib.request
import webbrowser
from collections.abc import Callable, Mapping

from agent_memory.entrypoints.rest.web_ui import UI_PATH

LOOPBACK = "127.0.0.1"
READY_SECONDS = 120.0  # the first start loads the embedding model


def page_url(port: int) -> str:
    return f"http://{LOOPBACK}:{port}{UI_PATH}"


def has_display(env: Mapping[str, str], platform: str = sys.platform) -> bool:
    """Whether a graphical browser can open: always on macOS and Windows; elsewhere only with a display or an
    explicit $BROWSER (otherwise Python's webbrowser would pick a text browser that takes over the terminal)."""
    if platform == "darwin" or platform.startswith("win"):
        return True
    return any(env.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"))


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # a loopback URL built here
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def open_when_ready(
    url: str,
    health_url: str,
    *,
    opener: Callable[[str], bool] = webbrowser.open,
    answers: Callable[[str], bool] = _answers,
    wait_seconds: float = READY_SECONDS,
) -> bool:
    """Wait until the server answers, then open the page; whether a browser took it (False, never an error, when
    there is none: the address is printed already)."""
    deadline = time.monotonic() + wait_seconds
    while not answers(health_url):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    try:
        return bool(opener(url))
    except webbrowser.Error:
        return False


def announce_and_open(port: int, env: Mapping[str, str]) -> threading.Thread | None:
    """Print the page's address, and open it in a browser (in the background) once the server is up."""
    url = page_url(port)
    sys.stderr.write(f"agent-memory's page: {url}  (Ctrl-C stops the server)\n")
    sys.stderr.flush()
    if not has_display(env):
        return None
    health = f"http://{LOOPBACK}:{port}/health"
    opening = threading.Thread(target=open_when_ready, args=(url, health), name="open-browser", daemon=True)
    opening.start()
    return opening
