"""One botocore data loader for every session a test process makes.

moto gives each test a fresh boto3 default session, and every new botocore session reads the service models and
`endpoints.json` from disk again (each several hundred kilobytes of JSON) and lists the data directories again: 6 ms
of each functional test's client, over a tenth of a run in process. botocore's loader caches what it read per
loader, and a session already shares its loader between all its clients; here every session shares one loader per
data path. What a loader reads is botocore's own packaged data, the same for every session.

Each client's event emitter also works out, once per emitter, the aliased name of every event it registers or emits
(a tenth of a test's own botocore time, as a functional run's 700 clients each start again); the answer depends
only on the name and botocore's alias table, so every emitter with that table shares one record of them."""

from __future__ import annotations

import functools
from typing import Any

import botocore.hooks
import botocore.loaders
import botocore.session


@functools.cache
def _loader(search_path_string: str | None = None) -> Any:
    return botocore.loaders.create_loader(search_path_string)


def share_one_loader() -> None:
    """From now on, each new botocore session in this process uses the loader of its data path."""
    botocore.session.create_loader = _loader


def share_one_record_of_aliased_event_names() -> None:
    """From now on, every event emitter with botocore's own alias table shares one record of the names it aliased."""
    aliased: dict[str, str] = {}
    start = botocore.hooks.EventAliaser.__init__

    def __init__(self: Any, event_emitter: Any, event_aliases: Any = None) -> None:
        start(self, event_emitter, event_aliases)
        if self._event_aliases == botocore.hooks.EVENT_ALIASES:
            self._alias_name_cache = aliased

    botocore.hooks.EventAliaser.__init__ = __init__  # type: ignore[method-assign]
