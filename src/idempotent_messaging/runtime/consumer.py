"""``Consumer``: the consumer contract plus its Lambda entry points.

``handle`` builds settings and clients from the environment of the invocation; ``process``
takes them explicitly; both run the batch through the strategy the settings choose
(``strategies.batch_class``). The contract itself (plug-ins, decoding, settings checks) is
``contract.ConsumerContract``; the batch algorithms are in ``batch`` and ``strategies``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from idempotent_messaging.runtime.contract import ConsumerContract, Runtime
from idempotent_messaging.runtime.errors import ConfigurationError
from idempotent_messaging.runtime.observability import (
    Outcome,
    logger,
    record_outcome,
    refresh_from_env,
)
from idempotent_messaging.runtime.strategies import batch_class


class Consumer(ConsumerContract):
    """An idempotent SQS consumer: database exactly-once, notification at-least-once.

    Built like ``ConsumerContract`` (see its arguments); adds the entry points.
    """

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """Lambda entry: settings and clients come from the environment of THIS invocation."""
        refresh_from_env()
        try:
            runtime = Runtime.from_env()
        except ConfigurationError as exc:
            return _all_failed(event, str(exc))
        return self.process(event, context, runtime)

    def process(self, event: Mapping[str, Any], context: Any, runtime: Runtime) -> dict[str, Any]:
        """Process one SQS batch with explicit settings and clients."""
        try:
            self.check(runtime.settings)
            run = batch_class(runtime.settings)(self, runtime, context, event)
        except ConfigurationError as exc:
            return _all_failed(event, str(exc))
        run.run()
        return run.response()


def _all_failed(event: Mapping[str, Any], reason: str) -> dict[str, Any]:
    logger.error("configuration error: every record is reported failed", extra={"reason": reason})
    failures = []
    for raw in event.get("Records") or []:
        record_outcome(
            Outcome.FAILED,
            message_id=raw.get("messageId"),
            failure_class="configuration",
            reason=reason,
        )
        failures.append({"itemIdentifier": raw.get("messageId")})
    return {"batchItemFailures": failures}
