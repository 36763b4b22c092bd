"""`GET /api/v1/docs`: the API reference as one self-contained page, drawn from the app's own OpenAPI on the
server. No script and no asset from elsewhere (Swagger UI would load from a CDN, a blank page offline), and a
Content-Security-Policy that allows nothing else; built only when asked for, so no cold start pays for it."""

from __future__ import annotations

import html
import json
from typing import Any

AUDIENCES = {
    "app": "App clients (JWT)",
    "partner": "Partner services (service key)",
    "engine": "Agent engines (service key)",
    "operator": "Operators and owner services (service key)",
}
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:1000px;padding:1rem;color:#1d2330}
h2{margin-top:2rem;border-bottom:1px solid #dde1e8}
.op{border:1px solid #dde1e8;border-radius:6px;padding:.6rem .9rem;margin:.8rem 0}
.method{font-weight:700;font-family:monospace;margin-right:.5rem}
code,pre{font-family:ui-monospace,monospace;font-size:.85rem}
pre{background:#f6f7f9;padding:.5rem;overflow:auto}
table{border-collapse:collapse}td,th{text-align:left;padding:.15rem .6rem .15rem 0;vertical-align:top}
.muted{color:#5b6475}
"""


def _text(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _paragraphs(text: str) -> str:
    return "".join(f"<p>{_text(part.strip())}</p>" for part in text.split("\n\n") if part.strip())


def _type_of(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_type_of(option) for option in schema["anyOf"])
    if schema.get("type") == "array":
        return f"array of {_type_of(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def _parameters(operation: dict[str, Any]) -> str:
    rows = [
        f"<tr><td><code>{_text(p['name'])}</code></td><td>{_text(p['in'])}</td>"
        f"<td>{'required' if p.get('required') else 'optional'}</td><td>{_text(_type_of(p.get('schema', {})))}</td>"
        f"<td class=muted>{_text(p.get('description') or p.get('schema', {}).get('description', ''))}</td></tr>"
        for p in operation.get("parameters", [])
    ]
    return f"<table>{''.join(rows)}</table>" if rows else ""


def _example(content: dict[str, Any] | None) -> str:
    json_content = (content or {}).get("application/json", {})
    if "example" not in json_content:
        return ""
    shown = json.dumps(json_content["example"], indent=2, ensure_ascii=False)
    return f"<pre>{_text(shown)}</pre>"


def _operation(method: str, path: str, operation: dict[str, Any]) -> str:
    request = operation.get("requestBody", {})
    responses = operation.get("responses", {})
    answers = ", ".join(
        f"<code>{_text(status)}</code> {_text(answer.get('description', ''))}" for status, answer in responses.items()
    )
    success: dict[str, Any] = next((answer for status, answer in responses.items() if status.startswith("2")), {})
    return (
        f"<div class=op id='{_text(operation.get('operationId', ''))}'>"
        f"<div><span class=method>{_text(method.upper())}</span><code>{_text(path)}</code></div>"
        f"<div>{_text(operation.get('summary', ''))}</div>"
        f"{_parameters(operation)}"
        + (f"<div class=muted>Body:</div>{_example(request.get('content'))}" if request else "")
        + f"<div class=muted>Answers: {answers}</div>{_example(success.get('content'))}</div>"
    )


def reference_page(spec: dict[str, Any]) -> str:
    """The whole reference: the API's description, then every operation by audience."""
    sections = []
    for tag, title in AUDIENCES.items():
        operations = [
            _operation(method, path, operation)
            for path, methods in spec.get("paths", {}).items()
            for method, operation in methods.items()
            if tag in operation.get("tags", [])[:1]
        ]
        if operations:
            sections.append(f"<h2 id='{tag}'>{_text(title)}</h2>{''.join(operations)}")
    info = spec.get("info", {})
    contents = " · ".join(f"<a href='#{tag}'>{_text(title)}</a>" for tag, title in AUDIENCES.items())
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{_text(info.get('title', 'API'))} API reference</title><style>{STYLE}</style></head><body>"
        f"<h1>{_text(info.get('title', 'API'))} API reference <span class=muted>{_text(info.get('version', ''))}"
        f"</span></h1><p>{contents} · <a href='openapi.json'>openapi.json</a></p>"
        f"{_paragraphs(str(info.get('description', '')))}{''.join(sections)}</body></html>"
    )
