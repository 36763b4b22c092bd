"""Lambda's init phase, kept short: what a function imports there lives as long as its container.

Modules, classes and the SDK's service models are never garbage, yet the cyclic collector walks them again
and again while they load (a full collection over boto3's objects costs tens of milliseconds), and on every
later full collection too. `permanent_imports` pauses the collector while an entry point loads, then moves
everything loaded into the permanent generation (`gc.freeze`), which no collection walks again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def permanent_imports() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
