"""One place for Powertools: the logger and the metrics emitter shared by every function.

The service name comes from POWERTOOLS_SERVICE_NAME (set per function in template.yaml); the correlation
id is the API Gateway request id or the Lambda request id. Traces come from Lambda's active tracing
(`Tracing: Active` in template.yaml); the X-Ray SDK behind Powertools' Tracer is not imported, since it
alone costs more than a third of a worker's cold-start budget (tests/bench/cold_start.py).
"""

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

logger = Logger()
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
