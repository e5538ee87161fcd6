"""The web page (/ui) in a real headless Chromium against `memory serve`: browse, search, correct, and tenants apart.

Set AGENT_MEMORY_UI_SCREENSHOTS=<dir> to write a screenshot of each view there (docs/images holds the committed ones).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import MEMORY, MemoryCli, expired_line
from tests.e2e.test_rest import free_port, server_env, wait_until_healthy

pytestmark = [pytest.mark.slow, pytest.mark.server]

CHROMIUM = Path("/usr/bin/chromium")
# a quiet, offline browser: no sandbox (containers, root in CI), no GPU, no update or sync traffic
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ALICE_TOKEN, BOB_TOKEN = "tok-alice", "tok-bob"
ALICE = {"Authorization": f"Bearer {ALICE_TOKEN}"}
BOB = {"Authorization": f"Bearer {BOB_TOKEN}"}
SCREENSHOTS = os.environ.get("AGENT_MEMORY_UI_SCREENSHOTS")
WAIT_MS = 30_000

SEED = [
    (f"notes/daily/day-{n:02d}", f"Daily note {n}: reviewed the inbox and planned the week.", "note", [])
    for n in range(20)
] + [
    ("notes/markup", "Pasted from a page: <img src=x onerror=alert(1)> <b>bold</b>", "note", []),
    (
        "preferences/editor",
        "The user prefers tabs over spaces and a dark theme in the editor.",
        "preference",
        ["style"],
    ),
    ("preferences/editor-again", "The user likes tabs rather than spaces in every editor.", "preference", ["style"]),
    ("preferences/coffee", "The user drinks oat milk flat whites, no sugar.", "preference", ["food"]),
    ("projects/alpha/deploys", "Alpha deploys happen on Fridays after the review.", "decision", ["ops"]),
    ("projects/alpha/database", "Alpha stores its data in Postgres 16 with nightly backups.", "fact", ["ops", "db"]),
    ("people/manager", "The user's manager is Dana; weekly one-to-one on Tuesdays.", "fact", []),
]


def _fail_or_skip(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the browser tests: .ci/run installs chromium)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for this module's tests: Debian's, never a downloaded one. Module-scoped: Playwright's
    sync API keeps an asyncio loop running on this thread while it is open, which would make every later
    `anyio.run` on the same pytest worker fail ("Cannot run the event loop while another loop is running")."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _fail_or_skip("playwright is not installed (the `test` extra has it)")
    if not CHROMIUM.exists():
        _fail_or_skip(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`memory serve` with a token per tenant, Alice's memories seeded through the REST API."""
    home = tmp_path_factory.mktemp("web-ui")
    port, log = free_port(), home / "server.log"
    env = {
        **server_env(home),
        "MEMORY_BACKEND": "files",
        "MEMORY_API_TOKENS": f"{ALICE_TOKEN}=user/alice,{BOB_TOKEN}=user/bob",
    }
    env.pop("MEMORY_API_TOKEN")
    # an expired memory of Alice's, imported as an export holds it (no door creates one: its expiry is past)
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()  # updated after the seeds: listed first
    reminder = expired_line(
        "notes/old/reminder", "An expired reminder", namespace=["user", "alice"], updated_at=later, created_at=later
    )
    MemoryCli(home, "files").ok("import", stdin=reminder)
    with log.open("wb") as output:
        process = subprocess.Popen([str(MEMORY), "serve", "--port", str(port)], env=env, stdout=output, stderr=output)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(url, process, log)
            with httpx.Client(base_url=url, headers=ALICE, timeout=120) as client:
                for path, content, kind, tags in SEED:
                    made = client.post(
                        "/memories",
                        json={
                            "content": content,
                            "path": path,
                            "type": kind,
                            "tags": tags,
                            "decay_policy": "reinforceable",
                        },
                    )
                    assert made.status_code == 201, made.text
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert "Traceback" not in log.read_text()


@pytest.fixture
def page(browser: Any, base: str) -> Iterator[Any]:
    """A fresh tab (its own sessionStorage) at 1024 px wide, failing the test on any script error."""
    context = browser.new_context(viewport={"width": 1024, "height": 760}, base_url=base)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert not errors, errors


def signed_in(page: Any, token: str = ALICE_TOKEN) -> Any:
    """Open the page, give the token it asks for, and wait for the memory list."""
    page.goto("/ui")
    page.fill("#token", token)
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("body[data-ready=browse]")
    return page


def go(page: Any, hash_route: str, view: str) -> None:
    page.evaluate("route => { delete document.body.dataset.ready; location.hash = route; }", hash_route)
    page.wait_for_selector(f"body[data-ready={view}]")


def status_text(page: Any) -> str:
    page.wait_for_selector("#status p")
    return str(page.inner_text("#status p"))


def shoot(page: Any, name: str, top: bool = True) -> None:
    if SCREENSHOTS:
        if top:
            page.evaluate("window.scrollTo(0, 0)")
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"ui-{name}.png"))


def rest(base: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, f"{base}{path}", headers=ALICE, timeout=60, **kwargs)


def test_the_page_asks_for_the_token_and_browses_categories_and_pages(page: Any, base: str) -> None:
    page.goto("/ui")
    page.wait_for_selector("#token-form")
    page.fill("#token", "not-a-token")
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("text=The token given was refused")
    page.fill("#token", ALICE_TOKEN)
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("body[data-ready=browse]")
    assert page.inner_text(".stores") == f"default ({len(SEED)})"
    assert "notes (21)" in page.inner_text(".cats") and "preferences (3)" in page.inner_text(".cats")
    assert page.locator("#memory-list > li").count() == 20
    # a memory's markup is shown as its characters, never run
    assert "<img src=x onerror=alert(1)> <b>bold</b>" in page.inner_text("#memory-list")
    assert page.locator("#memory-list img, #memory-list b").count() == 0
    assert f"1–20 of {len(SEED)}" in page.inner_text(".pager")
    shoot(page, "browse")
    page.click("text=Older →")
    page.wait_for_selector(f"text=21–{len(SEED)} of {len(SEED)}")
    page.click("#toggle-expired")  # an expired memory shows only when asked for
    page.wait_for_selector("#memory-list >> text=expired")
    assert "An expired reminder" in page.inner_text("#memory-list")
    page.click("#toggle-expired")
    # the click changes the hash; the list is drawn again after it (data-ready is still "browse" until the
    # hashchange arrives), so wait for the drawing that hides it: a timeout here means it stayed
    page.wait_for_function(
        "() => document.body.dataset.ready === 'browse'"
        " && !document.querySelector('#memory-list').innerText.includes('An expired reminder')"
    )
    assert "An expired reminder" not in page.inner_text("#memory-list")
    page.click(".crumbs >> text=default")
    page.wait_for_selector("body[data-ready=browse]")
    page.click(".cats >> text=projects")
    page.wait_for_selector("text=Category projects")
    page.click(".cats >> text=alpha")
    page.wait_for_selector("text=Category projects/alpha")
    listed = page.inner_text("#memory-list")
    assert "projects/alpha/deploys" in listed and "Postgres 16" in listed and "preferences/" not in listed
    assert "type: decision" in listed and "reinforceable" in listed


def test_search_ranks_highlights_and_filters(page: Any) -> None:
    signed_in(page)
    page.keyboard.press("/")  # the shortcut to the search box
    page.keyboard.type("tabs spaces editor")
    page.keyboard.press("Enter")
    page.wait_for_selector("body[data-ready=search]")
    first = page.locator("#results > li").first
    assert first.locator("a.path").inner_text().startswith("preferences/editor")
    assert "tabs" in [m.lower() for m in first.locator("mark").all_inner_texts()]
    assert re.search(r"relevance \d+%", first.inner_text()) and "score" not in first.inner_text()
    assert "Best first" in page.inner_text("#order")  # the page says why the order is not the figure's
    shoot(page, "search")
    # the tag keeps only the food memory (issue 40: "the user's tastes" is too vague to be related to it any more)
    page.fill("#search-q", "how does the user take coffee?")
    page.fill("#search-form input[name=tags]", "food")
    page.evaluate("delete document.body.dataset.ready")  # the next view's, not this one's
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("body[data-ready=search]")
    assert page.locator("#results a.path").all_inner_texts() == ["preferences/coffee"]


def test_detail_edit_move_and_reinforce(page: Any, base: str) -> None:
    signed_in(page)
    go(page, "#/memory/preferences%2Feditor", "detail")
    assert "The user prefers tabs" in page.inner_text("#content")
    assert "preferences/editor-again" in page.inner_text("#similar")  # the near duplicate
    assert "preferences/editor\n" not in page.inner_text("#similar") + "\n"
    page.fill("#edit-content", "The user prefers tabs over spaces, width 4.")
    page.fill("#edit-form input[name=tags]", "style, indent")
    page.fill("#edit-form textarea[name=citations]", "https://example.com/style-guide\nnotes/meeting.md")
    page.locator("#edit-form").scroll_into_view_if_needed()
    shoot(page, "edit", top=False)
    page.click("#edit-form button[type=submit]")
    page.wait_for_selector("#status >> text=Saved")
    page.wait_for_selector("#citations >> text=notes/meeting.md")
    page.wait_for_selector("body[data-ready=detail]")
    stored = rest(base, "GET", "/memories/preferences/editor").json()
    assert stored["content"] == "The user prefers tabs over spaces, width 4."
    assert stored["tags"] == ["style", "indent"]
    assert stored["citations"] == ["https://example.com/style-guide", "notes/meeting.md"]
    page.click("#reinforce")
    page.wait_for_selector("#status >> text=Reinforced")
    page.wait_for_selector("body[data-ready=detail]")
    assert rest(base, "GET", "/memories/preferences/editor").json()["last_reinforced_at"]
    # a taken path is an error in words
    page.fill("#move-to", "preferences/coffee")
    page.click("#move-form button[type=submit]")
    page.wait_for_selector("#status >> text=DESTINATION_EXISTS")
    assert "Traceback" not in page.inner_text("#status")
    page.fill("#move-to", "preferences/indentation")
    page.click("#move-form button[type=submit]")
    page.wait_for_selector("text=Moved to preferences/indentation")
    page.wait_for_selector("h1:has-text('preferences/indentation')")
    shoot(page, "detail")
    assert rest(base, "GET", "/memories/preferences/indentation").status_code == 200
    assert rest(base, "GET", "/memories/preferences/editor").status_code == 404


def test_delete_restore_and_remove_for_good(page: Any, base: str) -> None:
    signed_in(page)
    before = rest(base, "GET", "/memories/people/manager").json()
    go(page, "#/memory/people%2Fmanager", "detail")
    page.click("#delete")
    page.wait_for_selector("body[data-ready=browse]")
    assert "Deleted people/manager" in status_text(page)
    assert rest(base, "GET", "/memories/people/manager").status_code == 404
    assert "people/manager" not in page.inner_text("#memory-list")
    page.click("#deleted >> text=Restore people/manager")
    page.wait_for_selector("body[data-ready=detail]")
    assert "Restored people/manager" in status_text(page)
    restored = rest(base, "GET", "/memories/people/manager").json()
    assert restored | {"confidence": None} == before | {"confidence": None}  # the same id, every field
    with_deleted = rest(base, "GET", "/memories", params={"include_deleted": "true"}).json()["total"]
    assert with_deleted == rest(base, "GET", "/memories").json()["total"]  # no deleted copy left behind
    # deleted elsewhere (here over REST), it is listed with "Show deleted" and restored from the list
    assert rest(base, "DELETE", "/memories/people/manager").status_code == 200
    go(page, "#/?category=people&deleted=1", "browse")  # "Show deleted": the category's deleted memories too
    assert page.inner_text("#toggle-deleted") == "Hide deleted"
    page.click("#memory-list >> text=Restore people/manager")
    page.wait_for_selector("body[data-ready=detail]")
    assert rest(base, "GET", "/memories/people/manager").json()["id"] == before["id"]
    page.click("#remove")
    assert page.is_visible("#confirm-remove")
    page.keyboard.press("Escape")  # a change of mind: nothing removed, the focus back on the button
    assert page.is_hidden("#confirm-remove")
    assert page.evaluate("document.activeElement.id") == "remove"
    page.keyboard.press("Enter")
    assert page.is_visible("#confirm-remove")
    page.keyboard.press("Enter")  # the confirmation has the focus
    page.wait_for_selector("body[data-ready=browse]")
    assert "Removed people/manager for good" in status_text(page)
    assert rest(base, "GET", "/memories/people/manager").status_code == 404


def test_a_second_tenant_sees_nothing_of_the_first(page: Any, base: str) -> None:
    alice_id = rest(base, "GET", "/memories/preferences/coffee").json()["id"]
    signed_in(page, BOB_TOKEN)
    assert page.inner_text(".stores") == "default (0)"
    assert "No memories here." in page.inner_text("main")
    assert page.locator("#memory-list > li").count() == 0
    go(page, "#/search?q=oat+milk+flat+white", "search")
    assert page.locator("#results > li").count() == 0
    go(page, f"#/memory/{alice_id}", "failed")
    page.wait_for_selector("text=MEMORY_NOT_FOUND")
    assert "drinks oat milk" not in page.inner_text("body")


def test_the_page_reads_at_phone_width(browser: Any, base: str) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 800}, base_url=base)
    try:
        tab = signed_in(context.new_page())
        assert tab.evaluate("document.documentElement.scrollWidth") <= 375
        go(tab, "#/memory/preferences%2Fcoffee", "detail")
        assert tab.evaluate("document.documentElement.scrollWidth") <= 375
    finally:
        context.close()


def test_memory_ui_serves_the_page_and_prints_its_address_without_a_browser(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "ui.log"
    env = {**server_env(tmp_path), "MEMORY_BACKEND": "files"}
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        env.pop(name, None)
    with log.open("wb") as output:
        process = subprocess.Popen([str(MEMORY), "ui", "--port", str(port)], env=env, stdout=output, stderr=output)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(url, process, log)
            page = httpx.get(f"{url}/ui", timeout=30)
            assert page.status_code == 200 and "app.js" in page.text
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert f"{url}/ui" in log.read_text()
    assert "Traceback" not in log.read_text()
