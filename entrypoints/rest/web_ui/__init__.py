"""The REST door's web page (`/ui`): static files whose scripts call the REST API, served with a strict CSP."""

from __future__ import annotations

from importlib import resources

from litestar import Response, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath
from litestar.response import Redirect

UI_PATH = "/ui"
# no inline script or style, nothing from elsewhere, no framing, no form posts: the page only talks to its own API
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
# the page and what it loads (in this order: core.js, memory.js, app.js); nothing else is served under /ui
ASSETS = {
    "index.html": "text/html",
    "core.js": "text/javascript",
    "memory.js": "text/javascript",
    "app.js": "text/javascript",
    "app.css": "text/css",
}


def _asset(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def _served(name: str) -> Response[bytes]:
    return Response(_asset(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)


# public: the files hold no memory; every call the page makes goes through the API's token and tenant rules
_PUBLIC = {"public": True}


@get(UI_PATH, include_in_schema=False, opt=_PUBLIC)
async def ui_page() -> Response[bytes]:
    """The page: browse, search, detail and corrections, all through the REST API."""
    return _served("index.html")


@get(f"{UI_PATH}/{{name:str}}", include_in_schema=False, opt=_PUBLIC)
async def ui_file(name: FromPath[str]) -> Response[bytes]:
    """The page's scripts and stylesheet."""
    if name == "index.html" or name not in ASSETS:
        raise NotFoundException(f"No file {name!r} under {UI_PATH}: the page is at {UI_PATH}.")
    return _served(name)


@get("/", include_in_schema=False, opt=_PUBLIC)
async def root() -> Redirect:
    """The server's address opens the page."""
    return Redirect(UI_PATH, status_code=302)


UI_ROUTES = [ui_page, ui_file, root]
