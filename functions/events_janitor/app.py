"""Every minute: nudge each service whose external-event side effect was left behind (its worker died), so a
worker settles it (or leaves it to an operator) without waiting for a message that may never come back."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.events.handlers import nudge_overdue_jobs
    from herald.observability import logger, metrics


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    nudged = nudge_overdue_jobs()
    if nudged:
        metrics.add_metric(name="EventsOverdueNudged", unit="Count", value=nudged)
    return {"nudged": nudged}
