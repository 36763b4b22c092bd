"""What `herald-ops` prints for people: ages as people say them, times in the local zone with how long ago,
long cells cut in a table but whole in a record."""

from __future__ import annotations

import json
import re

from herald_ops.output import Listing, age, json_lines, moment, printable, record_text, table

NOW_MS = 1_796_374_823_454


def test_ages_are_said_in_the_largest_units_that_fit() -> None:
    assert [age(s) for s in (0.4, 42, 60, 3 * 60 + 59, 3600, 2 * 3600 + 5 * 60, 86_400, 3 * 86_400 + 4 * 3600)] == [
        "0 s",
        "42 s",
        "1 min",
        "3 min",
        "1 h",
        "2 h 5 min",
        "1 d",
        "3 d 4 h",
    ]


def test_a_moment_says_how_long_ago_or_how_soon() -> None:
    assert re.fullmatch(r"\d\d:\d\d:\d\d \(3 min ago\)", moment(NOW_MS - 180_000, NOW_MS))
    assert re.fullmatch(r"\d\d:\d\d:\d\d \(in 42 s\)", moment(NOW_MS + 42_000, NOW_MS))
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(3 d ago\)", moment(NOW_MS - 3 * 86_400_000, NOW_MS))


def test_a_table_cuts_long_cells_and_a_record_shows_them_whole() -> None:
    why = "Feishu answered 230001: " + "x" * 100
    row = {"job_id": "svc:1", "why": why, "blocked_at_ms": NOW_MS - 5_000, "targets": ["a", "b"], "note": None}
    lines = table([row], Listing(("job_id", "why", "blocked_at_ms"), "nothing"), NOW_MS).splitlines()
    assert lines[0].split() == ["job", "id", "why", "blocked", "at"]
    assert "…" in lines[1] and why not in lines[1] and "(5 s ago)" in lines[1]
    shown = record_text(row, NOW_MS)
    assert why in shown and "a, b" in shown and re.search(r"^note\s+—$", shown, re.MULTILINE)


HOSTILE = {
    "event_type": "job\x1b[2K\rstatus    succeeded",
    "title": "t\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07",
    "why": "line\nfake_field  yes",
    "summary": "\u202edrowssap\u009b2K",
    "data\x1b[31m": {"nested\x1b": "v\x9b"},
}


def _clean(text: str) -> bool:
    """Nothing a terminal acts on: every character printable, new lines only between the lines we print."""
    return all(line.isprintable() for line in text.split("\n"))


def test_a_field_a_caller_sent_is_printed_with_its_control_characters_escaped() -> None:
    shown = record_text(HOSTILE, NOW_MS)
    assert _clean(shown) and len(shown.splitlines()) == len(HOSTILE)
    assert "job\\x1b[2K\\rstatus    succeeded" in shown and "\\u202edrowssap\\x9b2K" in shown
    listed = table([HOSTILE], Listing(("event_type", "why"), "nothing"), NOW_MS)
    assert _clean(listed) and len(listed.splitlines()) == 2


def test_json_lines_escape_every_non_printable_character_and_still_parse_as_recorded() -> None:
    printed = json_lines([HOSTILE])
    assert printed.isprintable() and "\n" not in printed
    assert json.loads(printed) == HOSTILE


def test_printable_leaves_readable_text_alone() -> None:
    assert printable("任务 进度 · ok") == "任务 进度 · ok"
    assert printable("a\tb\x00") == "a\\tb\\x00"


def test_a_list_of_records_is_a_timeline_one_entry_a_line_with_its_times_read_and_a_zero_time_absent() -> None:
    row = {
        "calls": [
            {"at_ms": NOW_MS - 60_000, "operation": "send", "outcome": "refused\x1b[2K", "code": 230002},
            {"at_ms": NOW_MS - 5_000, "operation": "send", "outcome": "done", "code": 0},
        ],
        "marked_at_ms": 0,
    }
    lines = record_text(row, NOW_MS).splitlines()
    assert lines[0].split() == ["calls", "2"] and _clean("\n".join(lines))
    assert "(1 min ago), operation=send, outcome=refused\\x1b[2K, code=230002" in lines[1]
    assert "(5 s ago), operation=send, outcome=done" in lines[2] and lines[2].lstrip().startswith("· at_ms=")
    assert re.fullmatch(r"marked at\s+—", lines[3])


def test_an_unset_time_of_any_name_is_a_dash_never_1970() -> None:
    shown = record_text({"lock_until_ms": 0, "since_ms": None, "next_settle_at_ms": 0, "expires_at_ms": 1}, NOW_MS)
    assert "1970" not in shown and "ago" not in shown
    assert [line.split()[-1] for line in shown.splitlines()] == ["—"] * 4


def test_a_wide_listing_fits_120_columns_by_cutting_its_widest_cells_and_prints_whole_when_asked() -> None:
    columns = tuple(f"column_{n}" for n in range(8))
    rows = [{column: f"{column}-" + "v" * 30 for column in columns}]
    listing = Listing(columns, "nothing")
    fitted = table(rows, listing, NOW_MS).splitlines()
    assert max(len(line) for line in fitted) <= 120 and "…" in fitted[1]
    wide = table(rows, listing, NOW_MS, width=None).splitlines()
    assert max(len(line) for line in wide) > 120 and "…" not in wide[1]
    narrow = table([{"a": "x"}], Listing(("a",), "nothing"), NOW_MS).splitlines()
    assert narrow == ["a", "x"]
