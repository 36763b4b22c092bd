"""WebSocket API entry point: $connect (JWT in ?token=), $disconnect and $default."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.logging import correlation_paths
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald.auth.wiring import jwt_verifier
    from herald.observability import logger
    from herald.realtime.handlers import handle_websocket_event
    from herald.realtime.wiring import realtime


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_websocket_event(event, jwt_verifier(), realtime())
