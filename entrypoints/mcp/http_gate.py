"""The MCP door over HTTP: the streamable-HTTP app behind a gate that checks Host, Origin, JSON bodies and the bearer
token as the REST door does (http_safety), every refusal a JSON body."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver import MCPServer

from agent_memory.entrypoints.http.safety import ANY_HOST, HttpPolicy, media_type_problem
from agent_memory.entrypoints.token_tenancy import UNAUTHORIZED, Tenancy

Payload = dict[str, Any]


class _HttpGate:
    """ASGI middleware before the SDK's app: Host and Origin as the REST door checks them, JSON-only POSTs, then
    the bearer token (when there is one) on every request; every refusal is a JSON body. The SDK's own Host and
    Origin protection stays on behind it."""

    def __init__(self, app: Any, policy: HttpPolicy, tenancy: Tenancy) -> None:
        self.app = app
        self.policy = policy
        self.tenancy = tenancy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for key, value in scope["headers"]:  # the first of repeated headers, as the SDK's Starlette reads them
            headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
        refusal = self._refusal(scope["method"], headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, body, extra = refusal
        await _send_json(send, status, body, extra)

    def _refusal(
        self, method: str, headers: Mapping[str, str]
    ) -> tuple[int, Payload, list[tuple[bytes, bytes]]] | None:
        host, origin = headers.get("host"), headers.get("origin")
        if not self.policy.host_allowed(host):  # 421 as the SDK and the REST door answer it
            return 421, {"error": self.policy.host_refusal(host), "code": "MISDIRECTED_REQUEST"}, []
        if origin is not None and not self.policy.origin_allowed(origin, host):
            return 403, {"error": self.policy.origin_refusal(origin), "code": "FORBIDDEN_ORIGIN"}, []
        if not self.tenancy.namespace_of(headers.get("authorization"))[0]:
            body = {"error": UNAUTHORIZED, "code": "UNAUTHORIZED"}
            return 401, body, [(b"www-authenticate", b'Bearer realm="agent-memory"')]
        # every MCP POST carries a JSON-RPC message: JSON or 415, here rather than the SDK's plain-text 400
        unsupported = media_type_problem(headers.get("content-type"), has_body=True) if method == "POST" else None
        if unsupported:
            return 415, {"error": unsupported, "code": "INVALID_INPUT"}, []
        return None


async def _send_json(send: Any, status: int, body: Payload, extra: list[tuple[bytes, bytes]]) -> None:
    raw = json.dumps(body, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


def build_mcp_http_app(
    server: MCPServer[Any],
    *,
    host: str = "127.0.0.1",
    api_token: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
    allowed_origins: tuple[str, ...] = (),
    tenancy: Tenancy | None = None,
) -> Any:
    """The streamable-HTTP ASGI app (at /mcp) behind the gate; with a token, every request needs it. Give the
    server's `tenancy` (build_mcp_server's) for per-token namespaces; `api_token` alone is one without pins."""
    from mcp.server.transport_security import TransportSecuritySettings

    policy = HttpPolicy(bind_host=host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=ANY_HOST not in allowed_hosts,  # "*": the SDK cannot say "any host"
        allowed_hosts=policy.hosts_for_sdk,
        allowed_origins=policy.origins_for_sdk,
    )
    gate = tenancy or Tenancy(api_token=api_token)
    return _HttpGate(server.streamable_http_app(transport_security=security, host=host), policy, gate)
