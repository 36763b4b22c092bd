"""Tests call handlers from several threads of one interpreter; Lambda never does (one invocation per
process). Powertools keeps one metric buffer per interpreter, where one flush could empty it between another
flush's emptiness check and its serialisation, so the tests give Herald's emitter a buffer behind a lock."""

from __future__ import annotations

import threading
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider


class SerializedEMFProvider(AmazonCloudWatchEMFProvider):
    _guard = threading.RLock()

    def add_metric(self, *args: Any, **kwargs: Any) -> None:
        with self._guard:
            super().add_metric(*args, **kwargs)

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        with self._guard:
            super().flush_metrics(raise_on_empty_metrics=raise_on_empty_metrics)


def serialize(emitter: Metrics) -> None:
    emitter.provider = SerializedEMFProvider(
        namespace=emitter.namespace,
        metric_set=emitter.metric_set,
        dimension_set=emitter.dimension_set,
        metadata_set=emitter.metadata_set,
        default_dimensions=emitter.default_dimensions,
    )
