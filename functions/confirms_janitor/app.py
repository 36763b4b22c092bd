"""Every minute: expire confirms past their time and repair claims whose lease ran out."""

from herald.coldstart import permanent_imports

with permanent_imports():
    from typing import Any

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from herald import budgets
    from herald.confirms.handlers import settle_due_confirms
    from herald.observability import logger


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    with budgets.invocation(context.get_remaining_time_in_millis):
        return {"settled": settle_due_confirms()}
