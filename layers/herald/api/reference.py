"""`GET /api/v1/docs`: the API reference as one self-contained page, drawn from the app's own OpenAPI on the
server: the descriptions' Markdown rendered, each operation's parameters and body as field tables (types and
limits), its answers with examples of each error it can give, an anchor each, and a "try it" form that calls this
same API with a token or key the page asks for (kept in the tab's session storage only). No asset from elsewhere
(Swagger UI would load from a CDN, a blank page offline): the one script is inline, allowed by its hash, and the
Content-Security-Policy lets it reach only this origin. Built only when asked for: no cold start pays for it."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from herald.api.reference_parts import error_example, field_rows, markdown, parameter_rows, resolve, text

AUDIENCES = {
    "app": "App clients (JWT)",
    "partner": "Partner services (service key)",
    "engine": "Agent engines (service key)",
    "operator": "Operators and owner services (service key)",
}
SCRIPT = """
const token = document.getElementById("token");
token.value = sessionStorage.getItem("herald.docs.token") || "";
token.addEventListener("change", () => sessionStorage.setItem("herald.docs.token", token.value.trim()));
for (const form of document.querySelectorAll("form.try")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const out = form.querySelector("output");
    let path = form.dataset.path;
    const query = new URLSearchParams();
    for (const input of form.querySelectorAll("[data-in]")) {
      const value = input.value.trim();
      if (!value) continue;
      if (input.dataset.in === "path") path = path.replace(`{${input.name}}`, encodeURIComponent(value));
      else if (input.dataset.in === "query") query.set(input.name, value);
    }
    const headers = {};
    if (token.value.trim()) headers.Authorization = `Bearer ${token.value.trim()}`;
    const body = form.querySelector("textarea");
    if (body) headers["content-type"] = "application/json";
    const url = location.origin + path + (query.toString() ? `?${query}` : "");
    out.textContent = "…";
    try {
      const answer = await fetch(url, { method: form.dataset.method, headers, body: body ? body.value : undefined });
      const shown = await answer.text();
      let pretty = shown;
      try { pretty = JSON.stringify(JSON.parse(shown), null, 2); } catch (_) { /* not JSON: as it came */ }
      out.textContent = `${answer.status} ${answer.statusText}\\n${pretty}`;
    } catch (error) {
      out.textContent = `not sent: ${error.message}`;
    }
  });
}
"""
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; connect-src 'self';"
    " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:1040px;padding:1rem;color:#1d2330}
h2{margin-top:2rem;border-bottom:1px solid #dde1e8}
.op{border:1px solid #dde1e8;border-radius:6px;padding:.6rem .9rem;margin:.8rem 0}
.method{font-weight:700;font-family:monospace;margin-right:.5rem}
.anchor{margin-left:.4rem;color:#9aa3b2;text-decoration:none}
code,pre,output,textarea{font-family:ui-monospace,monospace;font-size:.85rem}
pre,output{display:block;background:#f6f7f9;padding:.5rem;overflow:auto;white-space:pre-wrap}
table{border-collapse:collapse;margin:.3rem 0}td,th{text-align:left;padding:.15rem .6rem .15rem 0;vertical-align:top}
th{font-weight:600;font-size:.85rem;color:#5b6475}
.muted{color:#5b6475}textarea{width:100%;min-height:6rem}
.tokenbar{position:sticky;top:0;background:#fff;padding:.4rem 0;border-bottom:1px solid #dde1e8}
"""
_FIELDS_HEAD = "<tr><th>field</th><th>type</th><th></th><th>limits</th><th>what it is</th></tr>"


def _example_of(content: dict[str, Any] | None) -> Any:
    return (content or {}).get("application/json", {}).get("example")


def _pre(value: Any) -> str:
    return f"<pre>{text(json.dumps(value, indent=2, ensure_ascii=False))}</pre>"


def _answers(operation: dict[str, Any]) -> str:
    rows = []
    for status, answer in operation.get("responses", {}).items():
        code = str(answer.get("description", ""))
        if status.startswith("2"):
            example = _example_of(answer.get("content"))
            rows.append(f"<details open><summary><code>{text(status)}</code> {text(code)}</summary>"
                        f"{_pre(example) if example is not None else ''}</details>")  # fmt: skip
        else:
            rows.append(f"<details><summary><code>{text(status)}</code> {text(code)}</summary>"
                        f"{_pre(error_example(code))}</details>")  # fmt: skip
    return "".join(rows)


def _try_it(method: str, path: str, operation: dict[str, Any], body_example: Any) -> str:
    inputs = "".join(
        f"<label>{text(p['name'])} ({text(p['in'])}) <input name='{text(p['name'])}' data-in='{text(p['in'])}'"
        f"{' required' if p.get('required') else ''}></label> "
        for p in operation.get("parameters", [])
        if p["in"] in ("path", "query")
    )
    body = ""
    if "requestBody" in operation:
        shown = json.dumps(body_example, indent=2, ensure_ascii=False) if body_example is not None else "{}"
        body = f"<textarea name=body aria-label='request body'>{text(shown)}</textarea>"
    return (
        f"<details><summary>Try it</summary><form class=try data-method='{text(method.upper())}'"
        f" data-path='{text(path)}'>{inputs}{body}<button type=submit>Send</button><output></output></form></details>"
    )


def _operation(method: str, path: str, operation: dict[str, Any], spec: dict[str, Any]) -> str:
    anchor = text(operation.get("operationId", f"{method}-{path}"))
    request = operation.get("requestBody", {})
    schema = request.get("content", {}).get("application/json", {}).get("schema", {})
    body_example = _example_of(request.get("content"))
    parameters = parameter_rows(operation, spec)
    fields = field_rows(schema, spec) if request else []
    return (
        f"<div class=op id='{anchor}'>"
        f"<div><span class=method>{text(method.upper())}</span><code>{text(path)}</code>"
        f"<a class=anchor href='#{anchor}' title='link to this operation'>#</a></div>"
        f"<div><strong>{text(operation.get('summary', ''))}</strong></div>"
        f"{markdown(str(operation.get('description', '')))}"
        + (f"<div class=muted>Parameters</div><table>{_FIELDS_HEAD}{''.join(parameters)}</table>" if parameters else "")
        + (
            f"<div class=muted>Body ({text(resolve(schema, spec).get('title', 'JSON'))})</div>"
            f"<table>{_FIELDS_HEAD}{''.join(fields)}</table>"
            if request
            else ""
        )
        + (_pre(body_example) if body_example is not None else "")
        + f"<div class=muted>Answers</div>{_answers(operation)}{_try_it(method, path, operation, body_example)}</div>"
    )


def reference_page(spec: dict[str, Any]) -> str:
    """The whole reference: the API's description, then every operation by audience."""
    sections = []
    for tag, title in AUDIENCES.items():
        operations = [
            _operation(method, path, operation, spec)
            for path, methods in spec.get("paths", {}).items()
            for method, operation in methods.items()
            if tag in operation.get("tags", [])[:1]
        ]
        if operations:
            sections.append(f"<h2 id='{tag}'>{text(title)}</h2>{''.join(operations)}")
    info = spec.get("info", {})
    contents = " · ".join(f"<a href='#{tag}'>{text(title)}</a>" for tag, title in AUDIENCES.items())
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{text(info.get('title', 'API'))} API reference</title><style>{STYLE}</style></head><body>"
        f"<h1>{text(info.get('title', 'API'))} API reference <span class=muted>{text(info.get('version', ''))}"
        f"</span></h1><p>{contents} · <a href='openapi.json'>openapi.json</a></p>"
        "<div class=tokenbar><label>Token or service key for “Try it” (kept in this tab only) "
        "<input id=token type=password autocomplete=off size=48></label></div>"
        f"{markdown(str(info.get('description', '')))}{''.join(sections)}<script>{SCRIPT}</script></body></html>"
    )
