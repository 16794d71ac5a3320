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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    BEYOND_DEDUP_HORIZON = "beyond_dedup_horizon"
    """A copy first seen longer ago than its claim is kept (the claim TTL): its claim may be
    gone although its effect was applied, so it is never applied (again) silently."""
    CONFLICTING_DUPLICATE = "conflicting_duplicate"
    """A re-sent event id whose content differs from the claimed copy's (fingerprints differ):
    never a silent duplicate; the first effect stands (``env.CONFLICTING_DUPLICATE``)."""
    NOTIFICATION_OWED = "notification_owed"
    """The business write WAS applied; SNS refused the notification for good. The claim stays
    ``pending``: a redrive after the fix (or ``python -m idempotent_messaging.ops owed``)
    publishes it."""


class ConfigurationError(Exception):
    """The function is deployed with invalid settings; no record can be processed."""


CONFIGURATION_FAILURE_CLASS = "configuration"
"""The ``failure_class`` of a record failed for a ConfigurationError (its outcome line): every
record fails until the function is redeployed, so SQS dead-letters them all (the local
report's verdict reads it)."""


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


class PluginError(Exception):
    """Consumer code raised an exception the runtime cannot classify: the record is reported
    failed ALONE (possibly transient; SQS redelivers it, its redrive policy bounds it)."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(f"{name}() raised {type(error).__name__}")
        self.reason = f"{name}() raised {type(error).__name__}"
        self.event_id: str | None = None


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
_SQS_BATCH_REFUSALS = (
    "BatchRequestTooLong",
    "BatchEntryIdsNotDistinct",
    "InvalidBatchEntryId",
    "TooManyEntriesInBatchRequest",
)
# Codes that say this request can never succeed as sent.
PERMANENT_ERROR_CODES = frozenset(
    {
        "ValidationException",
        "InvalidParameterException",
        "InvalidParameterValue",
        # SNS (Publish/PublishBatch): the request as built can never be accepted.
        "InvalidParameter",
        *_SQS_BATCH_REFUSALS,
        # SQS over its JSON protocol: botocore reports the query-compatible code
        # (x-amzn-query-error), e.g. "AWS.SimpleQueueService.BatchRequestTooLong".
        *(f"AWS.SimpleQueueService.{code}" for code in _SQS_BATCH_REFUSALS),
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


def short_error(exc: BaseException) -> str:
    """What a log line or a reason may say of an AWS error: its code and message, or its type."""
    if isinstance(exc, ClientError):
        message = str(exc.response.get("Error", {}).get("Message", ""))[:200]
        return f"{error_code(exc)}: {message}"
    return type(exc).__name__


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


@dataclass(frozen=True)
class Cancelled:
    """What a cancelled transaction's reasons say of one record's items."""

    failure_class: FailureClass | None
    """DUPLICATE: its claim exists; TRANSIENT: a conflict (resubmit after a backoff);
    PERMANENT: an item was refused; None: its items were fine (resubmit at once)."""
    position: int = -1
    """PERMANENT: the refused item, -1 for the claim, else the business write's index."""
    code: str = ""
    item: Mapping[str, Any] | None = None
    """DUPLICATE: the existing claim, when the reason carried it (``ALL_OLD``)."""


def split_cancellation(
    reasons: Sequence[Mapping[str, Any]], owners: Sequence[tuple[int, int]]
) -> dict[int, Cancelled]:
    """Per record, the class of a TransactionCanceledException's ``CancellationReasons`` (one
    per transaction item, in order; ``owners[i]`` is item i's record and its position, -1 for
    the record's claim). Reasons that cannot be attributed (not one per item) make every
    record a conflict, to resubmit."""
    if len(reasons) != len(owners):
        return {record: Cancelled(FailureClass.TRANSIENT) for record, _ in owners}
    by_record: dict[int, list[tuple[int, str, Mapping[str, Any]]]] = {}
    for (record, position), reason in zip(owners, reasons, strict=True):
        by_record.setdefault(record, []).append(
            (position, str(reason.get("Code") or NO_FAILURE_CODE), reason)
        )
    out = {}
    for record, items in by_record.items():
        claim_code, claim_reason = next((c, r) for p, c, r in items if p == -1)
        if classify_cancellation(claim_code, is_claim=True) is FailureClass.DUPLICATE:
            out[record] = Cancelled(FailureClass.DUPLICATE, item=claim_reason.get("Item"))
            continue
        classes = [(p, c, classify_cancellation(c, is_claim=p == -1)) for p, c, _ in items]
        permanent = [(p, c) for p, c, cls in classes if cls is FailureClass.PERMANENT]
        if any(cls is FailureClass.TRANSIENT for _, _, cls in classes):
            out[record] = Cancelled(FailureClass.TRANSIENT)
        elif permanent:
            out[record] = Cancelled(FailureClass.PERMANENT, *permanent[0])
        else:
            out[record] = Cancelled(None)
    return out


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
