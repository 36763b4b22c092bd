"""HTTP API entry point: every route of the FastAPI app, behind Mangum."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.logging import correlation_paths
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mangum import Mangum

    from herald.api.app import create_app
    from herald.observability import logger, metrics

    app = create_app()
    asgi = Mangum(app, lifespan="off")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return asgi(event, context)  # type: ignore[arg-type]  # Powertools and Mangum type the same context
