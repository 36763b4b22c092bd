"""Write the HTTP API's OpenAPI document to events/openapi.json (`make openapi`, `python -m herald_dev.openapi`):
the file client generators read, checked in, and kept equal to the app's by tests/unit/test_openapi_export.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from herald.api.app import create_app

EXPORTED = Path(__file__).resolve().parents[2] / "events" / "openapi.json"


def document() -> str:
    return json.dumps(create_app().openapi(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


if __name__ == "__main__":
    EXPORTED.write_text(document())
    print(f"wrote {EXPORTED}", file=sys.stderr)
