"""What botocore itself says of an AWS error answer: its modeled status, and whether it retries
it (shared by the error-rule tests; no runtime code)."""

from __future__ import annotations

from functools import cache
from typing import Any

import botocore.retryhandler
import botocore.session
import botocore.translate
from botocore.awsrequest import AWSResponse
from botocore.retries import standard

SESSION = botocore.session.get_session()


@cache
def model(service: str) -> Any:
    return SESSION.get_service_model(service)


def status(service: str, code: str) -> int:
    """The HTTP status AWS answers ``code`` with: the model's, else the service's table
    (DynamoDB and SQS: 400, except server errors)."""
    shape = model(service).shape_for_error_code(code)
    modeled = shape.metadata.get("error", {}).get("httpStatusCode") if shape else None
    if modeled:
        return int(modeled)
    return 503 if code == "ServiceUnavailable" else 500 if code == "InternalServerError" else 400


def botocore_retries(service: str, operation: str, code: str) -> bool:
    """Whether botocore retries this answer of a whole call: standard mode (the runtime's
    clients) on the real operation model, or the legacy handler built from ``_retry.json``."""
    response = AWSResponse("", status(service, code), {}, None)
    parsed = {"Error": {"Code": code}}
    context = standard.RetryContext(
        attempt_number=1,
        operation_model=model(service).operation_model(operation),
        parsed_response=parsed,
        http_response=response,
    )
    if standard.StandardRetryConditions(max_attempts=3).is_retryable(context):
        return True
    retry = SESSION.get_component("data_loader").load_data("_retry")
    config = botocore.translate.build_retry_config(service, retry["retry"], retry["definitions"])
    checker = botocore.retryhandler.create_checker_from_retry_config(config, operation)
    return bool(
        checker(
            attempt_number=1,
            response=(response, parsed),
            caught_exception=None,
            retries_context={},
        )
    )
