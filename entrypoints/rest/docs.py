"""The REST door's /docs: the API described in one HTML page built from the OpenAPI document, with no script,
stylesheet or font from elsewhere, so it reads the same offline. The OpenAPI JSON is beside it."""

from __future__ import annotations

from html import escape
from typing import Any

from litestar import Request
from litestar.openapi.plugins import OpenAPIRenderPlugin

METHODS = ("get", "post", "put", "patch", "delete")
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
    "code,pre{font-family:ui-monospace,monospace}h2{margin-top:2.2rem}section{border-top:1px solid #ccc;"
    "padding:.4rem 0}.m{font-weight:bold;display:inline-block;min-width:4.5rem}table{border-collapse:collapse}"
    "td,th{text-align:left;padding:.1rem .6rem .1rem 0;vertical-align:top}"
)


class OfflineDocsPlugin(OpenAPIRenderPlugin):
    """Renders every operation (method, path, summary, parameters, body and responses) as plain HTML."""

    def __init__(self, path: str = "/") -> None:
        super().__init__(path=path)

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return render_page(openapi_schema).encode()


def render_page(schema: dict[str, Any]) -> str:
    info = schema.get("info", {})
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>",
        f"<p>{escape(info.get('description', ''))}</p>",
        "<p>The machine-readable description: <a href='openapi.json'>openapi.json</a> "
        "(also at <code>/openapi.json</code>).</p>",
    ]
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                parts.append(_operation(method, path, item[method]))
    parts.append("</body></html>")
    return "".join(parts)


def _operation(method: str, path: str, operation: dict[str, Any]) -> str:
    parts = [
        f"<section><h3><span class='m'>{method.upper()}</span> <code>{escape(path)}</code></h3>",
        f"<p><b>{escape(operation.get('summary', ''))}</b></p>",
        f"<p>{escape(operation.get('description', '')).replace(chr(10), '<br>')}</p>",
    ]
    parameters = operation.get("parameters", [])
    if parameters:
        rows = "".join(
            f"<tr><td><code>{escape(p.get('name', ''))}</code></td><td>{escape(p.get('in', ''))}</td>"
            f"<td>{'required' if p.get('required') else ''}</td><td>{escape(p.get('description', '') or '')}</td></tr>"
            for p in parameters
        )
        parts.append(f"<table><tr><th>parameter</th><th>in</th><th></th><th></th></tr>{rows}</table>")
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        parts.append(f"<p>JSON body: <code>{escape(_schema_name(body))}</code> (see openapi.json)</p>")
    responses = ", ".join(
        f"{escape(str(status))} {escape(str(answer.get('description', '')))}"
        for status, answer in operation.get("responses", {}).items()
    )
    parts.append(f"<p>Responses: {responses}</p></section>")
    return "".join(parts)


def _schema_name(schema: dict[str, Any]) -> str:
    ref = schema.get("$ref")
    return str(ref).rsplit("/", 1)[-1] if ref else str(schema.get("type", "object"))
