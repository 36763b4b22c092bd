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
TABLE_WIDTH = 120  # a listing's lines fit a terminal this wide, its widest columns cut first (`--wide`: all whole)
MIN_CELL = 8  # no column is cut narrower (a table with many columns may then be wider)


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


UNSET = "—"
_NO_TIME_BEFORE_MS = 946_684_800_000  # 2000-01-01: an earlier "time" is an unset one (0, 1), never a moment


def is_time(name: str) -> bool:
    """A field holding an epoch-millisecond time, by its name."""
    return name in ("at_ms", "since_ms") or name.endswith(("_at_ms", "_until_ms"))


def value_text(name: str, value: Any, now_ms: int) -> str:
    """One field for people: times and ages by their names (`*_at_ms`, `*_until_ms`, `*_s`), lists joined, absent
    (or a time never set) as `—`."""
    if value is None or value in ([], ""):
        return UNSET
    if isinstance(value, bool):
        return "yes" if value else "no"
    if is_time(name) and isinstance(value, int):
        return moment(value, now_ms) if value >= _NO_TIME_BEFORE_MS else UNSET
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


def table(rows: Sequence[Mapping[str, Any]], listing: Listing, now_ms: int, width: int | None = TABLE_WIDTH) -> str:
    """The rows as aligned columns under a heading line: each cell at most CELL_WIDTH and each line at most
    `width` characters (the widest columns cut first, none below MIN_CELL); `width` None: every cell whole."""
    cells = [[heading(column) for column in listing.columns]]
    for row in rows:
        cells.append([printable(value_text(column, row.get(column), now_ms)) for column in listing.columns])
    widths = [max(len(line[index]) for line in cells) for index in range(len(listing.columns))]
    if width is not None:
        widths = [min(CELL_WIDTH, size) for size in widths]
    while width is not None and sum(widths) + 2 * (len(widths) - 1) > width and max(widths) > MIN_CELL:
        widths[widths.index(max(widths))] -= 1
    return "\n".join(
        "  ".join(_cut(text, size).ljust(size) for text, size in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


def _cut(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


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
