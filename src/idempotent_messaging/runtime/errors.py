"""Failure classes, decided in ONE place.

Every error the runtime meets ends in exactly one class:

* ``transient``  - may succeed later (throttling, 5xx, timeouts, TransactionConflict): retried,
  then reported as a batch item failure so SQS redelivers it;
* ``permanent``  - poison (not JSON, missing/invalid event id, schema, semantic failure,
  oversize): quarantined to the DLQ at once and reported as success;
* ``duplicate``  - the event was already claimed: read its status instead.

botocore's retry handler already retries throttling, 5xx and timeouts; what reaches this module
has exhausted those attempts.
"""

from __future__ import annotations

import enum

from botocore.exceptions import BotoCoreError, ClientError


class FailureClass(enum.StrEnum):
    TRANSIENT = "transient"
    PERMANENT = "permanent"
    DUPLICATE = "duplicate"


class PoisonKind(enum.StrEnum):
    """Why a message is permanent poison (the DLQ ``failure_kind`` attribute)."""

    NOT_JSON = "not_json"
    MISSING_EVENT_ID = "missing_event_id"
    INVALID_EVENT_ID = "invalid_event_id"
    SCHEMA = "schema"
    SEMANTIC = "semantic"
    OVERSIZE = "oversize"
    RETRIES_EXHAUSTED = "retries_exhausted"
    """It failed (transiently or unexpectedly) on its last receive: SQS would dead-letter it
    with no reason, so it is quarantined with the failure that exhausted it."""
    NOTIFICATION_OWED = "notification_owed"
    """The business write WAS applied; SNS refused the notification for good. The claim stays
    ``pending``: a redrive after the fix (or ``python -m idempotent_messaging.ops owed``)
    publishes it."""


class ConfigurationError(Exception):
    """The function is deployed with invalid settings; no record can be processed."""


class PoisonMessage(Exception):
    """A message that can never succeed; it is quarantined with ``kind`` and ``reason``.

    Reasons must never quote message content: they are logged and sent as DLQ attributes.
    """

    def __init__(self, kind: PoisonKind, reason: str) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason
        self.event_id: str | None = None
        """Set once the event id was extracted, so the DLQ copy carries it."""


class SchemaError(PoisonMessage):
    """Raised by a consumer's ``writes``/``notification``/``tenant`` for a malformed message."""

    def __init__(self, reason: str) -> None:
        super().__init__(PoisonKind.SCHEMA, reason)


# Codes botocore's standard retry mode retries before we ever see them; after its attempts are
# exhausted they are still transient (SQS redelivery gets another chance).
TRANSIENT_ERROR_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "LimitExceededException",
        "TransactionInProgressException",
        "TransactionConflictException",
        "InternalServerError",
        "InternalFailure",
        "InternalError",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "RequestTimeout",
        "RequestTimeoutException",
        "KMSThrottlingException",
        "KMS.ThrottlingException",
    }
)
# Codes that say this request can never succeed as sent.
PERMANENT_ERROR_CODES = frozenset(
    {
        "ValidationException",
        "InvalidParameterException",
        "InvalidParameterValue",
        # SNS (Publish/PublishBatch): the request as built can never be accepted.
        "InvalidParameter",
        "BatchRequestTooLong",
        "BatchEntryIdsNotDistinct",
        "InvalidBatchEntryId",
        "TooManyEntriesInBatchRequest",
    }
)
# TransactionCanceledException reasons (one per transaction item, in order).
TRANSIENT_CANCELLATION_CODES = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)
PERMANENT_CANCELLATION_CODES = frozenset({"ValidationError", "ItemCollectionSizeLimitExceeded"})
NO_FAILURE_CODE = "None"
# BatchExecuteStatement answers per statement (BatchStatementError.Code); botocore retries the
# CALL, never one statement, so these are retried by the runtime.
TRANSIENT_STATEMENT_CODES = frozenset(
    {
        "TransactionConflict",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "RequestLimitExceeded",
        "InternalServerError",
    }
)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def is_transaction_cancelled(error: ClientError) -> bool:
    return error_code(error) == "TransactionCanceledException"


def classify_exception(exc: BaseException) -> FailureClass:
    """Class of an exception raised by an AWS call (after botocore's own retries)."""
    if isinstance(exc, PoisonMessage):
        return FailureClass.PERMANENT
    if isinstance(exc, ClientError):
        code = error_code(exc)
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code in TRANSIENT_ERROR_CODES or status >= 500:
            return FailureClass.TRANSIENT
        if code in PERMANENT_ERROR_CODES:
            return FailureClass.PERMANENT
        # Unknown 4xx (access denied, missing table, ...) is a deployment problem: let SQS
        # redeliver and finally redrive, rather than quarantining healthy messages.
        return FailureClass.TRANSIENT
    if isinstance(exc, BotoCoreError):  # timeouts, connection errors after retries
        return FailureClass.TRANSIENT
    return FailureClass.TRANSIENT


def classify_cancellation(code: str, *, is_claim: bool) -> FailureClass | None:
    """Class of one TransactionCanceledException reason; ``None`` when that item was fine.

    A claim whose ``attribute_not_exists`` condition failed means the event exists (duplicate);
    a business write whose own condition failed is a semantic failure (permanent).
    """
    if code in ("", NO_FAILURE_CODE):
        return None
    if code == "ConditionalCheckFailed":
        return FailureClass.DUPLICATE if is_claim else FailureClass.PERMANENT
    if code in TRANSIENT_CANCELLATION_CODES:
        return FailureClass.TRANSIENT
    if code in PERMANENT_CANCELLATION_CODES:
        return FailureClass.PERMANENT
    return FailureClass.TRANSIENT


# A PartiQL INSERT refused because the key exists answers DuplicateItem (developer guide,
# "PartiQL insert statements": DuplicateItemException); a conditional UPDATE answers
# ConditionalCheckFailed.
REFUSED_STATEMENT_CODES = frozenset({"DuplicateItem", "ConditionalCheckFailed"})


def classify_statement(code: str) -> FailureClass:
    """Class of one BatchStatementError.Code of a claim-carrying write statement.

    Refused (the key exists): the event's item is there, a duplicate to be read. Validation
    and item-collection limits are properties of the item (permanent); throttling and server
    errors are retried; anything else (access denied, missing table) is a deployment problem
    left to redelivery, as ``classify_exception`` does for whole calls.
    """
    if code in REFUSED_STATEMENT_CODES:
        return FailureClass.DUPLICATE
    if code in PERMANENT_CANCELLATION_CODES:
        return FailureClass.PERMANENT
    return FailureClass.TRANSIENT
