"""Lambda entry points for consumers: Powertools Logger + Metrics around ``Consumer.handle``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from idempotent_messaging.runtime.clients import invocation_deadline
from idempotent_messaging.runtime.observability import logger, metrics

if TYPE_CHECKING:
    from idempotent_messaging.runtime.consumer import Consumer

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
_CONTEXT_FIELDS = ("function_name", "memory_limit_in_mb", "invoked_function_arn", "aws_request_id")


def lambda_handler(consumer: Consumer) -> Handler:
    """``handler = lambda_handler(CONSUMER)``: structured logs keyed by the Lambda context,
    one EMF flush per invocation, and the partial batch response.

    Local drivers (tests, the embedded emulator) may pass ``context=None`` or a partial object:
    then the context keys are simply not logged, instead of Powertools failing the whole batch.

    Every AWS call of the invocation ends before the function's timeout
    (``clients.invocation_deadline``: remaining time less a margin; a call refused for lack of
    time fails the records it serves, for redelivery).
    """

    @logger.inject_lambda_context(clear_state=True)
    @metrics.log_metrics
    def with_context(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return consumer.handle(event, context)

    @metrics.log_metrics
    def without_context(event: dict[str, Any], context: Any) -> dict[str, Any]:
        logger.clear_state()  # no keys left over from an earlier invocation's context
        return consumer.handle(event, context)

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        with invocation_deadline(context):
            if all(hasattr(context, field) for field in _CONTEXT_FIELDS):
                return with_context(event, context)
            return without_context(event, context)

    handler.__doc__ = f"Lambda entry point of the {consumer.namespace!r} consumer."
    return handler
