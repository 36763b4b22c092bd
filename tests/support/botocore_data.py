"""One botocore data loader for every session a test process makes.

moto gives each test a fresh boto3 default session, and every new botocore session reads the service models and
`endpoints.json` from disk again (each several hundred kilobytes of JSON) and lists the data directories again: 6 ms
of each functional test's client, over a tenth of a run in process. botocore's loader caches what it read per
loader, and a session already shares its loader between all its clients; here every session shares one loader per
data path. What a loader reads is botocore's own packaged data, the same for every session."""

from __future__ import annotations

import functools
from typing import Any

import botocore.loaders
import botocore.session


@functools.cache
def _loader(search_path_string: str | None = None) -> Any:
    return botocore.loaders.create_loader(search_path_string)


def share_one_loader() -> None:
    """From now on, each new botocore session in this process uses the loader of its data path."""
    botocore.session.create_loader = _loader
