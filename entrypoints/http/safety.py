"""Who may talk to the HTTP doors (REST, MCP over HTTP): loopback, Host and Origin allow-lists, JSON-only bodies."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from attrs import frozen

from agent_memory.domain.errors import DomainError, invalid_input

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
# binding to these listens on every interface: they name no host a client could send in its Host header
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
ANY_HOST = "*"
MAX_JSON_DEPTH = 64
JSON_MEDIA_TYPE = "application/json"

# a JSON string token (escapes included), unrolled so a long string is one linear scan
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def is_loopback(host: str) -> bool:
    """localhost or a loopback address (127.0.0.0/8, ::1), with or without IPv6 brackets."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def refuse_open_bind(host: str, token: str | None, door: str) -> DomainError | None:
    """Serving beyond loopback without a token would hand every memory to the network: an error that says so."""
    if token or is_loopback(host):
        return None
    return invalid_input(
        f"Refusing to serve {door} on {host} without an API token: anyone who can reach it could read and change "
        "every memory. Set MEMORY_API_TOKEN (or pass --api-token), or bind to 127.0.0.1."
    )


def host_name(header: str) -> str | None:
    """The lowercase name of a Host header ('name', 'name:port', '[v6]' or '[v6]:port'); None if malformed."""
    value = header.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        return name if bracket and (not rest or _is_port(rest)) and name else None
    name, colon, port = value.partition(":")
    if colon and not _is_port(":" + port):
        return None
    return name or None


def _is_port(text: str) -> bool:
    # ASCII digits up to 65535: a URL parser raises on anything else ('localhost:99999' made REST answer 500)
    digits = text[1:]
    return text.startswith(":") and digits.isascii() and digits.isdigit() and len(digits) <= 5 and int(digits) <= 65535


def _origin_key(origin: str) -> str:
    return origin.strip().rstrip("/").lower()


@frozen(kw_only=True)
class HttpPolicy:
    """Which Host and Origin headers a door answers: loopback names, the bound address and the allow-lists.

    Host: a request must name the server by a loopback name, the address it is bound to (unless that is a
    wildcard like 0.0.0.0) or a name in `allowed_hosts` (any port; "*" accepts every host, e.g. behind a proxy).
    This is what defeats DNS rebinding: a page at attacker.example whose name now points to 127.0.0.1 still
    sends `Host: attacker.example`.
    Origin: absent (not a browser), the server's own origin (same as Host), a loopback origin, or one listed
    in `allowed_origins` ('http://app.example:3000'). Anything else, 'null' included, is a web page elsewhere.
    """

    bind_host: str = "127.0.0.1"
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()

    def _known_name(self, name: str) -> bool:
        bound = self.bind_host.strip().strip("[]").lower()
        listed = {entry.strip().strip("[]").lower() for entry in self.allowed_hosts}
        return is_loopback(name) or (bound not in WILDCARD_BINDS and name == bound) or name in listed

    def host_allowed(self, header: str | None) -> bool:
        if ANY_HOST in self.allowed_hosts:
            return True
        name = host_name(header) if header else None
        return name is not None and self._known_name(name)

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        if origin is None:
            return True
        key = _origin_key(origin)
        if key in {_origin_key(entry) for entry in self.allowed_origins}:
            return True
        try:
            parts = urlsplit(key)
            hostname = parts.hostname
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not hostname:
            return False
        same_origin = host is not None and parts.netloc == host.strip().lower()
        return same_origin or is_loopback(hostname)

    def host_refusal(self, header: str | None) -> str:
        return (
            f"Host {header!r} is not this server's: use 127.0.0.1 or localhost, or add the name to "
            "MEMORY_ALLOWED_HOSTS (comma-separated)."
        )

    def origin_refusal(self, origin: str) -> str:
        return (
            f"Requests from web pages at {origin!r} are not allowed: add the origin to MEMORY_ALLOWED_ORIGINS "
            "(comma-separated, e.g. http://localhost:3000) to let that page call this server."
        )

    def _sdk_names(self) -> list[str]:
        names = {*LOOPBACK_NAMES, *(entry.strip().strip("[]").lower() for entry in self.allowed_hosts)}
        bound = self.bind_host.strip().strip("[]").lower()
        if bound not in WILDCARD_BINDS:
            names.add(bound)
        names.discard(ANY_HOST)
        return sorted(f"[{name}]" if ":" in name else name for name in names)

    @property
    def hosts_for_sdk(self) -> list[str]:
        """The Host patterns in the MCP SDK's form ('name:*' is any port)."""
        return [pattern for name in self._sdk_names() for pattern in (name, f"{name}:*")]

    @property
    def origins_for_sdk(self) -> list[str]:
        """The Origin patterns in the MCP SDK's form: every accepted host name on any port, and the listed ones."""
        hosts = [
            f"{scheme}://{name}{port}"
            for name in self._sdk_names()
            for scheme in ("http", "https")
            for port in ("", ":*")
        ]
        return [*hosts, *(_origin_key(entry) for entry in self.allowed_origins)]


def media_type_problem(content_type: str | None, has_body: bool) -> str | None:
    """Why a request's Content-Type is refused (None if it is JSON, or absent on a request without a body).

    Only JSON: a web page can send text/plain, form and multipart bodies to any address without asking
    (a "simple" cross-site request); application/json needs a CORS preflight this server does not grant.
    """
    if content_type is None or not content_type.strip():
        return "A request body needs 'Content-Type: application/json'." if has_body else None
    media_type, _, parameters = content_type.partition(";")
    if media_type.strip().lower() != JSON_MEDIA_TYPE:
        return f"Unsupported Content-Type {media_type.strip()!r}: send JSON with 'Content-Type: application/json'."
    charset = _charset(parameters)
    if charset not in (None, "utf-8", "utf8"):
        return f"Unsupported charset {charset!r}: send JSON encoded as UTF-8."
    return None


def _charset(parameters: str) -> str | None:
    for parameter in parameters.split(";"):
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def json_body_problem(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why a JSON body is refused before it is parsed: bytes that are not UTF-8, or nesting past max_depth."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"The body is not valid UTF-8 (byte {error.start}): send JSON encoded as UTF-8."
    if json_depth(raw, stop_after=max_depth) > max_depth:
        return f"The JSON body nests deeper than {max_depth} levels."
    return None


def json_depth(raw: bytes, stop_after: int | None = None) -> int:
    """How deep arrays and objects nest in a JSON text (brackets inside strings do not count)."""
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_JSON_STRING.sub(b'""', raw)):
        depth += 1 if bracket.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
        if stop_after is not None and deepest > stop_after:
            break
    return deepest
