"""One place for Powertools: the logger and the metrics emitter shared by every function.

The service name comes from POWERTOOLS_SERVICE_NAME (set per function in template.yaml); the correlation
id is the API Gateway request id or the Lambda request id. Traces come from Lambda's active tracing
(`Tracing: Active` in template.yaml); the X-Ray SDK behind Powertools' Tracer is not imported, since it
alone costs more than a third of a worker's cold-start budget (tests/bench/cold_start.py).
"""

import os
import threading
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider


class _SerializedEMFProvider(AmazonCloudWatchEMFProvider):
    """Powertools' EMF provider with its buffer guarded by a lock.

    Powertools keeps one metric buffer per interpreter. Lambda runs one invocation per process, but the
    local cloud and the tests run concurrent invocations in one interpreter, where one flush could empty
    the buffer between another flush's emptiness check and its serialisation (SchemaValidationError).
    """

    _guard = threading.RLock()

    def add_metric(self, *args: Any, **kwargs: Any) -> None:
        with self._guard:
            super().add_metric(*args, **kwargs)

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        with self._guard:
            super().flush_metrics(raise_on_empty_metrics=raise_on_empty_metrics)


def _metrics(namespace: str) -> Metrics:
    emitter = Metrics(namespace=namespace)
    emitter.provider = _SerializedEMFProvider(
        namespace=namespace,
        metric_set=emitter.metric_set,
        dimension_set=emitter.dimension_set,
        metadata_set=emitter.metadata_set,
        default_dimensions=emitter.default_dimensions,
    )
    return emitter


logger = Logger()
metrics = _metrics("Herald")
# Every metric carries its stage (and Powertools adds the function's service name): alarms select both.
metrics.set_default_dimensions(stage=os.environ.get("HERALD_STAGE", "local"))
