"""One place for Powertools: the logger and the metrics emitter shared by every function.

The service name comes from POWERTOOLS_SERVICE_NAME (set per function in template.yaml); the correlation
id is the API Gateway request id or the Lambda request id. Traces come from Lambda's active tracing
(`Tracing: Active` in template.yaml); the X-Ray SDK behind Powertools' Tracer is not imported, since it
alone costs more than a third of a worker's cold-start budget (tests/bench/cold_start.py).
"""

import json
import logging
import os

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics import MetricUnit, single_metric

# Keys a person reading a local log does not need on every line (Lambda's own context, where it logged from).
_CONTEXT_KEYS = frozenset(
    {"level", "location", "message", "timestamp", "service", "cold_start", "function_name", "function_memory_size",
     "function_arn", "function_request_id", "xray_trace_id", "sampling_rate", "exception", "exception_name",
     "stack_trace"}
)  # fmt: skip


class ReadableFormatter(LambdaPowertoolsFormatter):
    """One line a person reads for each log record (`make dev`'s log): its time, level, function, message and
    its own keys as `key=value`; an exception's text follows. In AWS the logs stay Powertools' JSON."""

    def format(self, record: logging.LogRecord) -> str:
        entry = json.loads(super().format(record))
        at = str(entry.get("timestamp", ""))[11:19]
        fields = " ".join(f"{key}={value}" for key, value in entry.items() if key not in _CONTEXT_KEYS)
        line = f"{at} {entry.get('level', ''):<5} {entry.get('service', '')}: {entry.get('message', '')}"
        line = f"{line}  {fields}" if fields else line
        return f"{line}\n{entry['exception']}" if entry.get("exception") else line


# HERALD_LOG_FORMAT=text only where a person reads the log (the local cloud's functions under `make dev`); it is
# read here, at import, as Powertools reads its own variables.
logger = Logger(logger_formatter=ReadableFormatter()) if os.environ.get("HERALD_LOG_FORMAT") == "text" else Logger()
metrics = Metrics(namespace="Herald")


def observe_stage(stage: str) -> None:
    """Every metric carries its stage (and Powertools adds the function's service name): alarms select both.
    Set when the process's settings are read (herald.container), never from the environment at import."""
    metrics.set_default_dimensions(stage=stage)


def count_for_tenant(name: str, app_code: str) -> None:
    """One more of `name` for a tenant whose provider is its own (dimensions app_code and stage): a tenant's
    outage shows, and alarms, as that tenant's, beside the stack-wide metric of the same event."""
    with single_metric(name=name, unit=MetricUnit.Count, value=1, namespace="Herald") as metric:
        for dimension, value in {**metrics.default_dimensions, "app_code": app_code}.items():
            metric.add_dimension(dimension, value)
