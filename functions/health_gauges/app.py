"""Every minute: publish what waits for an operator (UNKNOWN jobs, blocked services and their age, stuck
confirms, failed pushes, turns not handed over) as metrics for the alarms and the dashboard."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.gauges.handlers import publish_gauges
    from herald.observability import logger, metrics


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, float]:
    return publish_gauges()
