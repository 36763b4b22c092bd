"""One place for Powertools: the logger and the metrics emitter shared by every function.

The service name comes from POWERTOOLS_SERVICE_NAME (set per function in template.yaml); the correlation
id is the API Gateway request id or the Lambda request id. Traces come from Lambda's active tracing
(`Tracing: Active` in template.yaml); the X-Ray SDK behind Powertools' Tracer is not imported, since it
alone costs more than a third of a worker's cold-start budget (tests/bench/cold_start.py).
"""

from aws_lambda_powertools import Logger, Metrics

logger = Logger()
metrics = Metrics(namespace="Herald")


def observe_stage(stage: str) -> None:
    """Every metric carries its stage (and Powertools adds the function's service name): alarms select both.
    Set when the process's settings are read (herald.container), never from the environment at import."""
    metrics.set_default_dimensions(stage=stage)
