"""The health gauges' scheduled handler, called by its thin entry point."""

from __future__ import annotations

from herald.gauges.wiring import health_gauges
from herald.observability import logger, metrics


def publish_gauges() -> dict[str, float]:
    values = health_gauges().read().metrics()
    for name, (value, unit) in values.items():
        metrics.add_metric(name=name, unit=unit, value=value)
    published = {name: value for name, (value, _) in values.items()}
    logger.info("health gauges", extra={"gauges": published})
    return published
