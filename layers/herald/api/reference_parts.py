"""The API reference's parts that read the OpenAPI document: a small Markdown (the descriptions' own: paragraphs,
`-` lists, `**bold**`, `` `code` ``, links), field tables with each field's type and limits, and an example of each
error an operation can answer. Everything a document says is escaped before any markup is added."""

from __future__ import annotations

import html
import re
from typing import Any

_INLINE = [
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
    (re.compile(r"\*\*([^*]+)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"\[([^\]]+)\]\(((?:https?://|/|#)[^)\s&<>\"']*)\)"), r"<a href='\2'>\1</a>"),
]
# What each error code's example says (the message is the request's own; these are typical).
ERROR_EXAMPLES = {
    "INVALID_ARGUMENT": ("body.title: String should have at most 256 characters", {"field": "body.title"}),
    "UNAUTHORIZED": ("service key invalid", None),
    "PERMISSION_DENIED": ("service key lacks the capability for this route", None),
    "NOT_FOUND": ("no such event", None),
    "METHOD_NOT_ALLOWED": ("Method Not Allowed", None),
    "CONFLICT": ("the confirm is being processed", {"reason": "processing"}),
    "PAYLOAD_TOO_LARGE": ("the body is 70012 bytes; send at most 65536", {"field": "body"}),
    "RATE_LIMITED": ("over the service key's limit; try again in 12 s", None),
    "UPSTREAM_ERROR": ("the owner service did not answer in time", None),
    "UNAVAILABLE": ("Herald is busy; try again shortly", None),
}
_LIMITS = (
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minimum", "≥ {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMinimum", "> {}"),
    ("exclusiveMaximum", "< {}"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("pattern", "matches {}"),
    ("default", "default {}"),
)
_MAX_DEPTH = 3  # nested objects shown as dotted names this deep; deeper ones by their type's name


def text(value: Any) -> str:
    return html.escape(str(value), quote=True)


def markdown(source: str) -> str:
    """The descriptions' Markdown as HTML: blank-line paragraphs, `- ` lists, `#` headings and inline marks."""
    blocks = []
    for block in re.split(r"\n\s*\n", source.strip()):
        lines = [line.rstrip() for line in block.splitlines() if line.strip()]
        if lines and all(line.lstrip().startswith(("- ", "* ")) for line in lines):
            items = "".join(f"<li>{_inline(line.lstrip()[2:])}</li>" for line in lines)
            blocks.append(f"<ul>{items}</ul>")
        elif lines and (heading := re.match(r"^(#{1,4})\s+(.*)", lines[0])):
            level = len(heading.group(1)) + 2
            blocks.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            if lines[1:]:
                blocks.append(f"<p>{_inline(' '.join(lines[1:]))}</p>")
        elif lines:
            blocks.append(f"<p>{_inline(' '.join(lines))}</p>")
    return "".join(blocks)


def _inline(source: str) -> str:
    rendered = text(source)
    for pattern, replacement in _INLINE:
        rendered = pattern.sub(replacement, rendered)
    return rendered


def resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """A schema with its `$ref` followed (and a nullable `anyOf` taken as its other branch)."""
    seen = 0
    while "$ref" in schema and seen < 10:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        schema = {
            **spec.get("components", {}).get("schemas", {}).get(name, {}),
            **{k: v for k, v in schema.items() if k != "$ref"},
        }
        seen += 1
    options = [option for option in schema.get("anyOf", []) if option.get("type") != "null"]
    if len(options) == 1:
        merged = {**schema, **resolve(options[0], spec), "nullable": True}
        merged.pop("anyOf", None)
        return merged
    return schema


def type_of(schema: dict[str, Any], spec: dict[str, Any]) -> str:
    if "$ref" in schema:
        return (
            type_of(resolve(schema, spec), spec)
            if "enum" in resolve(schema, spec)
            else str(schema["$ref"]).rsplit("/", 1)[-1]
        )
    if "anyOf" in schema:
        return " | ".join(type_of(option, spec) for option in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(str(value) for value in schema["enum"])
    if schema.get("type") == "array":
        return f"array of {type_of(schema.get('items', {}), spec)}"
    if "const" in schema:
        return f"{schema['const']!r}"
    return str(schema.get("type", "any"))


def limits_of(schema: dict[str, Any]) -> str:
    found = [template.format(schema[key]) for key, template in _LIMITS if key in schema]
    for option in schema.get("anyOf", []):
        found += [template.format(option[key]) for key, template in _LIMITS if key in option]
    return "; ".join(found)


def field_rows(schema: dict[str, Any], spec: dict[str, Any], prefix: str = "", depth: int = 0) -> list[str]:
    """A table row for each field of an object schema (nested objects' fields as `parent.child`)."""
    shown = resolve(schema, spec)
    required = set(shown.get("required", []))
    rows = []
    for name, field in shown.get("properties", {}).items():
        inner = resolve(field, spec)
        dotted = f"{prefix}{name}"
        rows.append(
            f"<tr><td><code>{text(dotted)}</code></td><td>{text(type_of(field, spec))}</td>"
            f"<td>{'required' if name in required else 'optional'}</td><td>{text(limits_of(field))}</td>"
            f"<td class=muted>{_inline(str(field.get('description') or inner.get('description') or ''))}</td></tr>"
        )
        if inner.get("properties") and depth + 1 < _MAX_DEPTH:
            rows += field_rows(inner, spec, f"{dotted}.", depth + 1)
    return rows


def parameter_rows(operation: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    rows = []
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        described = parameter.get("description") or schema.get("description", "")
        rows.append(
            f"<tr><td><code>{text(parameter['name'])}</code></td><td>{text(parameter['in'])}: "
            f"{text(type_of(schema, spec))}</td><td>{'required' if parameter.get('required') else 'optional'}</td>"
            f"<td>{text(limits_of(schema))}</td><td class=muted>{_inline(str(described))}</td></tr>"
        )
    return rows


def error_example(code: str) -> dict[str, Any]:
    message, data = ERROR_EXAMPLES.get(code, ("what went wrong, for a person", None))
    return {"code": code, "message": message, "data": data, "request_id": "5f0c2d6e9a7b4c1d"}
