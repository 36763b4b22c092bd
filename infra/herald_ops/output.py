"""How `herald-ops` prints what it found: for people, a table (or one record's fields) with local times and
ages; for scripts (`--json`), one JSON object a line, exactly as Herald records it. A listing with nothing in it
says so in both: on stdout for people, on stderr for scripts (their stdout stays empty).

Much of what is printed was sent by a caller (a partner's event type, a title, a provider's reason), so no
character a terminal could act on reaches it: control, format (direction, zero-width) and separator characters
are printed as their escapes, in every field and key, for people and in JSON alike."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

CELL_WIDTH = 48  # a table's cell beyond this is cut ("…"); `show` and `--json` print it whole


@dataclass(frozen=True)
class Listing:
    """One listing as a table: the columns people need (the record has more), and what it says when empty."""

    columns: tuple[str, ...]
    nothing: str


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """`text` with every non-printable character written as its escape (`\\x1b`, `\\n`, `\\u202e`)."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    if char in _ESCAPES:
        return _ESCAPES[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def age(seconds: float) -> str:
    """A duration as people say it: `42 s`, `3 min`, `2 h 5 min`, `3 d 4 h`."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def moment(at_ms: int, now_ms: int) -> str:
    """An epoch-millisecond time in this machine's time zone, with how long ago (or how soon) it is."""
    local = datetime.fromtimestamp(at_ms / 1000).astimezone()
    today = datetime.fromtimestamp(now_ms / 1000).astimezone().date()
    shown = local.strftime("%H:%M:%S" if local.date() == today else "%Y-%m-%d %H:%M:%S")
    delta = (now_ms - at_ms) / 1000
    return f"{shown} ({age(delta)} ago)" if delta >= 0 else f"{shown} (in {age(delta)})"


def value_text(name: str, value: Any, now_ms: int) -> str:
    """One field for people: times and ages by their names (`*_at_ms`, `*_s`), lists joined, absent as `-`."""
    if value is None or value in ([], ""):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if (name == "at_ms" or name.endswith("_at_ms")) and isinstance(value, int) and not isinstance(value, bool):
        return moment(value, now_ms) if value else "-"
    if name.endswith("_s") and isinstance(value, int | float):
        return age(value)
    if isinstance(value, list) and all(isinstance(item, str | int) for item in value):
        return ", ".join(str(item) for item in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={value_text(key, item, now_ms)}" for key, item in value.items())
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def heading(name: str) -> str:
    """A field's name for people: `blocked_at_ms` is `blocked at`, `oldest_age_s` is `oldest age`."""
    return printable(name.removesuffix("_ms").removesuffix("_s").replace("_", " "))


def table(rows: Sequence[Mapping[str, Any]], listing: Listing, now_ms: int) -> str:
    """The rows as aligned columns under a heading line."""
    cells = [[heading(column) for column in listing.columns]]
    for row in rows:
        texts = [printable(value_text(column, row.get(column), now_ms)) for column in listing.columns]
        cells.append([text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…" for text in texts])
    widths = [max(len(line[index]) for line in cells) for index in range(len(listing.columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip() for line in cells
    )


def record_text(row: Mapping[str, Any], now_ms: int) -> str:
    """One record's every field, a line each, whole; a list of records (a job's calls, its resolutions) as a
    timeline under its heading, one line an entry."""
    width = max((len(heading(name)) for name in row), default=0)
    lines = []
    for name, value in row.items():
        label = heading(name).ljust(width)
        if isinstance(value, list) and value and all(isinstance(item, Mapping) for item in value):
            lines.append(f"{label}  {len(value)}")
            lines.extend(f"{'':{width}}  · {printable(value_text(name, item, now_ms))}" for item in value)
        else:
            lines.append(f"{label}  {printable(value_text(name, value, now_ms))}")
    return "\n".join(lines)


def json_lines(rows: Iterable[Mapping[str, Any]]) -> str:
    """One JSON object a line. JSON escapes only the C0 controls; every other non-printable character (DEL, C1,
    direction overrides) can stand only inside a string, where its `\\uXXXX` escape reads back the same."""
    return "\n".join(_json_printable(json.dumps(row, ensure_ascii=False)) for row in rows)


def _json_printable(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else json.dumps(char)[1:-1] for char in text)
