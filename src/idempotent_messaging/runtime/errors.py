"""Failure classes, decided in ONE place.

Every error the runtime meets ends in exactly one class:

* ``transient``  - may succeed later (throttling, 5xx, timeouts, TransactionConflict): retried,
  then reported as a batch item failure so SQS redelivers it;
* ``permanent``  - poison (not JSON, missing/invalid event id, schema, semantic failure,
  oversize): quarantined to the DLQ at once and reported as success;
* ``duplicate``  - the event was already claimed: read its status instead.

THE rule for an AWS error code (``code_kind``) is the same wherever the code arrives: as the
error of a whole call, or inside a 200 answer (a PublishBatch or SendMessageBatch entry, a
BatchExecuteStatement statement, a TransactWriteItems cancellation reason). It is derived from
botocore where botocore knows (its retry configuration ``_retry.json``, its standard retry
mode's checkers, the service models' error shapes: their codes, HTTP status and ``retryable``
trait), and from the services' documented error tables where botocore is silent
(``DOCUMENTED``). The per-site functions below (``classify_exception``, ``classify_entry``,
``classify_statement``, ``classify_cancellation``) only say what each kind means at their site.

botocore's retry handler already retries throttling, 5xx and timeouts of whole calls; what
reaches this module has exhausted those attempts. The models are read lazily, on the first
error, through the bundle's shared model loader (the clients have usually loaded them
already), never at import: docs/runtime.md "Failure classes" measures it.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from botocore.exceptions import ClientError


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


class CodeKind(enum.Enum):
    """What an AWS error code says, wherever it arrives (``code_kind``)."""

    RETRYABLE = "retryable"
    """botocore retries it (a whole call), or the service documents it as OK to retry: the
    runtime retries it where botocore cannot (a statement), then SQS redelivers it."""
    INVALID = "invalid"
    """The request as built can never be accepted (validation): poison for its record, an
    owed notification for a publish."""
    REFUSED = "refused"
    """A condition refused a write (the key or item exists): its call site says what that
    means (a duplicate claim, a semantic failure of a business write)."""
    OTHER = "other"
    """Anything else, e.g. access denied, a missing table or topic, a disabled KMS key: a
    deployment problem. Not retried in the invocation; SQS redelivers the record (a fix of the
    deployment cures it), its redrive policy bounds it (``retries_exhausted``)."""


@dataclass(frozen=True)
class Documented:
    """What a service's own error documentation says of a code botocore does not retry."""

    kind: CodeKind
    source: str


_DDB_ERRORS = 'DynamoDB developer guide, "Error handling with DynamoDB", error messages and codes'
_DDB_TX = 'DynamoDB developer guide, "Transaction conflict handling in DynamoDB"'
_DDB_PARTIQL = 'DynamoDB developer guide, "PartiQL insert statements" (DuplicateItemException)'
_SNS_ERRORS = "SNS API reference, Publish / PublishBatch, Errors"
_SQS_ERRORS = "SQS API reference, SendMessage / SendMessageBatch, Errors"
DOCUMENTED: Mapping[tuple[str, str], Documented] = {
    # botocore retries none of these; the service's error table says what they mean.
    ("dynamodb", "ItemCollectionSizeLimitExceededException"): Documented(
        CodeKind.RETRYABLE, f"{_DDB_ERRORS}: OK to retry? Yes"
    ),
    ("dynamodb", "UnrecognizedClientException"): Documented(
        CodeKind.RETRYABLE, f"{_DDB_ERRORS}: OK to retry? Yes"
    ),
    ("dynamodb", "InternalServerError"): Documented(
        CodeKind.RETRYABLE, f"{_DDB_ERRORS}: Internal Server Error (HTTP 500), OK to retry? Yes"
    ),
    ("dynamodb", "ServiceUnavailable"): Documented(
        CodeKind.RETRYABLE, f"{_DDB_ERRORS}: Service Unavailable (HTTP 503), OK to retry? Yes"
    ),
    ("dynamodb", "TransactionConflictException"): Documented(
        CodeKind.RETRYABLE, f"{_DDB_TX}: the conflicting request may be retried"
    ),
    ("dynamodb", "ValidationException"): Documented(
        CodeKind.INVALID, f"{_DDB_ERRORS}: OK to retry? No (fix the request)"
    ),
    ("dynamodb", "ConditionalCheckFailedException"): Documented(
        CodeKind.REFUSED, f"{_DDB_ERRORS}: a condition evaluated to false"
    ),
    ("dynamodb", "DuplicateItemException"): Documented(
        CodeKind.REFUSED, f"{_DDB_PARTIQL}: an item with the same primary key exists"
    ),
    ("sns", "KMSThrottling"): Documented(
        CodeKind.RETRYABLE,
        f"{_SNS_ERRORS}: KMSThrottling, the request was denied due to "
        "request throttling (HTTP 400, senderFault in botocore's model)",
    ),
    **{
        ("sns", code): Documented(CodeKind.INVALID, f"{_SNS_ERRORS}: {code}")
        for code in (
            "InvalidParameter",
            "ParameterValueInvalid",
            "ValidationException",
            "BatchEntryIdsNotDistinct",
            "BatchRequestTooLong",
            "EmptyBatchRequest",
            "InvalidBatchEntryId",
            "TooManyEntriesInBatchRequest",
        )
    },
    ("sqs", "KmsThrottled"): Documented(
        CodeKind.RETRYABLE, f"{_SQS_ERRORS}: KmsThrottled, KMS throttles requests"
    ),
    **{
        ("sqs", code): Documented(CodeKind.INVALID, f"{_SQS_ERRORS}: {code}")
        for code in (
            "InvalidMessageContents",
            "InvalidAttributeName",
            "InvalidAttributeValue",
            "InvalidParameterValue",
            "BatchEntryIdsNotDistinct",
            "BatchRequestTooLong",
            "EmptyBatchRequest",
            "InvalidBatchEntryId",
            "TooManyEntriesInBatchRequest",
        )
    },
}
"""Codes of the services the runtime calls that botocore does not retry, as each service's
error documentation classes them. A code in neither botocore's retry configuration nor here
is ``OTHER`` (a deployment problem), or ``RETRYABLE`` when its modeled HTTP status is one
botocore retries (5xx, 429)."""

SQS_QUERY_PREFIX = "AWS.SimpleQueueService."
"""SQS over its JSON protocol also sends the query API's code (``x-amzn-query-error``);
botocore reports that one as ``Code`` and the JSON one as ``QueryErrorCode``."""
SQS_QUERY_ALIASES = {"KMS.ThrottlingException": "KmsThrottled"}
"""A query-API spelling an SQS entry may carry (the query API's name of ``KmsThrottled``)."""
NO_FAILURE_CODE = "None"
RUNTIME_SERVICES = ("dynamodb", "sns", "sqs")
"""The services the consumer runtime calls (``clients.clients_from_env``)."""


@functools.lru_cache(maxsize=1024)
def code_kind(service: str | None, code: str, status: int | None = None) -> CodeKind:
    """THE rule: what ``code`` (of ``service``; HTTP ``status`` when a whole call failed)
    says, the same at call level and inside a 200 answer.

    An entry's spelling is read as the call-level code it stands for (``ThrottlingError`` ->
    ``ThrottlingException``, ``ItemCollectionSizeLimitExceeded`` -> ``...Exception``,
    ``AWS.SimpleQueueService.X`` -> ``X``), then: botocore retries it (``_retry.json``, the
    standard mode's checkers, a ``retryable`` trait, a retryable modeled status) or its
    service documents a retry -> RETRYABLE; documented INVALID / REFUSED; anything else OTHER.
    """
    view = _errors_of(service) if service in RUNTIME_SERVICES else None
    code = _call_level_code(view, service, code)
    if status is None and view is not None:
        status = view.status.get(code)
    if _botocore_retries(view, code, status):
        return CodeKind.RETRYABLE
    documented = DOCUMENTED.get((service or "", code))
    if documented is None and service is None:  # the service is unknown: any service's word
        documented = next((d for (_, c), d in DOCUMENTED.items() if c == code), None)
    if documented is not None:
        return documented.kind
    return CodeKind.OTHER


def _call_level_code(view: _ServiceErrors | None, service: str | None, code: str) -> str:
    code = SQS_QUERY_ALIASES.get(code, code).removeprefix(SQS_QUERY_PREFIX)
    stem = code.removesuffix("Error")
    candidates = (code, f"{code}Exception", f"{stem}Exception" if stem != code else code)
    for candidate in candidates:
        if (view is not None and candidate in view.status) or (
            (service or "", candidate) in DOCUMENTED
        ):
            return candidate
    return code


@dataclass(frozen=True)
class _ServiceErrors:
    """What botocore knows of one service's errors (read once, lazily)."""

    status: Mapping[str, int | None]
    """Every modeled error code -> its modeled HTTP status (None when not modeled)."""
    operation: Any
    """A stand-in operation model holding every modeled error shape (the modeled-retry check
    looks only at ``error_shapes``)."""
    retry_codes: frozenset[str]
    retry_statuses: frozenset[int]
    """``_retry.json``'s policies for this service (its own and the general ones)."""


@functools.cache
def _errors_of(service: str) -> _ServiceErrors:
    from botocore.model import ServiceModel

    from idempotent_messaging.runtime.clients import model_loader

    description = _service_description(service)
    model = ServiceModel(description, service)
    shapes = [
        model.shape_for(name)
        for name, shape in description["shapes"].items()
        if shape.get("exception")
    ]
    status = {
        shape.error_code: shape.metadata.get("error", {}).get("httpStatusCode") for shape in shapes
    }
    config = model_loader().load_data("_retry")
    definitions = config.get("definitions", {})
    policies: list[Mapping[str, Any]] = []
    for scope in (
        config["retry"].get("__default__", {}),
        *config["retry"].get(service, {}).values(),
    ):
        for policy in scope.get("policies", {}).values():
            policies.append(definitions.get(policy.get("$ref"), policy))
    codes, statuses = set(), set()
    for policy in policies:
        response = policy.get("applies_when", {}).get("response", {})
        if "service_error_code" in response:
            codes.add(response["service_error_code"])
        elif "http_status_code" in response:
            statuses.add(int(response["http_status_code"]))
    return _ServiceErrors(
        status=status,
        operation=SimpleNamespace(error_shapes=shapes, service_model=model),
        retry_codes=frozenset(codes),
        retry_statuses=frozenset(statuses),
    )


def _botocore_retries(view: _ServiceErrors | None, code: str, status: int | None) -> bool:
    """Would botocore retry this answer? Its standard mode's own checkers (the runtime's
    clients use that mode), or its legacy ``_retry.json`` policies."""
    from botocore.awsrequest import AWSResponse
    from botocore.retries import standard

    context = standard.RetryContext(
        attempt_number=1,
        operation_model=view.operation if view is not None else _NO_OPERATION,
        parsed_response={"Error": {"Code": code}},
        http_response=AWSResponse("", status, {}, None) if status else None,
    )
    if _standard_conditions().is_retryable(context):
        return True
    if view is None:
        return False
    return code in view.retry_codes or (status is not None and status in view.retry_statuses)


_NO_OPERATION = SimpleNamespace(error_shapes=[], service_model=SimpleNamespace(service_name=""))
"""The stand-in operation of an error whose service is unknown: no modeled errors."""


@functools.cache
def _standard_conditions() -> Any:
    from botocore.retries import standard

    return standard.StandardRetryConditions(max_attempts=2)


@functools.cache
def _service_of(operation: str) -> str | None:
    """The runtime's service that has ``operation`` (from the service models)."""
    for service in RUNTIME_SERVICES:
        if operation in _service_description(service)["operations"]:
            return service
    return None


def _service_description(service: str) -> Mapping[str, Any]:
    """The service model as the clients loaded it: the loader caches per argument list, and
    botocore's ClientCreator passes ``api_version=`` by keyword, so the same call shares its
    entry (no second read of the file)."""
    from idempotent_messaging.runtime.clients import model_loader

    description: Mapping[str, Any] = model_loader().load_service_model(
        service, "service-2", api_version=None
    )
    return description


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
    """Class of an exception raised by an AWS call (after botocore's own retries).

    A ClientError's code is read by ``code_kind`` (the service from its operation's model;
    SQS's JSON code, ``QueryErrorCode``, before its query-compatible one). INVALID is
    permanent; every other kind is transient: retryable codes and deployment problems (access
    denied, a missing table: let SQS redeliver and finally redrive, rather than quarantining
    healthy messages). A refused condition on a whole call is handled where the runtime makes
    a conditional call; anywhere else it leaves the record to redelivery.
    """
    if isinstance(exc, PoisonMessage):
        return FailureClass.PERMANENT
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("QueryErrorCode") or error.get("Code") or "")
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        service = _service_of(exc.operation_name) if exc.operation_name else None
        kind = code_kind(service, code, status or None)
        return FailureClass.PERMANENT if kind is CodeKind.INVALID else FailureClass.TRANSIENT
    return FailureClass.TRANSIENT  # BotoCoreError: timeouts, connection errors after retries


def classify_entry(service: str, code: str) -> FailureClass:
    """Class of one failed entry of a 200 answer (PublishBatch, SendMessageBatch): its CODE
    decides, exactly as the same code on the whole call (``SenderFault`` alone does not:
    ``KMSThrottling`` is a sender fault and transient)."""
    return (
        FailureClass.PERMANENT
        if code_kind(service, code) is CodeKind.INVALID
        else (FailureClass.TRANSIENT)
    )


def classify_cancellation(code: str, *, is_claim: bool) -> FailureClass | None:
    """Class of one TransactionCanceledException reason; ``None`` when that item was fine.

    A claim whose ``attribute_not_exists`` condition failed means the event exists (duplicate);
    a business write whose own condition failed is a semantic failure (permanent). Any other
    reason is read by ``code_kind`` like the same code on a whole call: INVALID is permanent,
    the rest transient (resubmitted after a backoff, then redelivered).
    """
    if code in ("", NO_FAILURE_CODE):
        return None
    kind = code_kind("dynamodb", code)
    if kind is CodeKind.REFUSED:
        return FailureClass.DUPLICATE if is_claim else FailureClass.PERMANENT
    if kind is CodeKind.INVALID:
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


def classify_statement(code: str) -> FailureClass:
    """Class of one BatchStatementError.Code of a claim-carrying write statement, by
    ``code_kind`` as the same code on a whole call.

    Refused (``DuplicateItem``, ``ConditionalCheckFailed``: the key exists): the event's item
    is there, a duplicate to be read. INVALID (``ValidationError``) is a property of the item
    (permanent); everything else is transient: retryable codes are retried in the invocation
    (``retried_now``: botocore retries the CALL, never one statement), the rest (access
    denied, a missing table) is left to redelivery.
    """
    kind = code_kind("dynamodb", code)
    if kind is CodeKind.REFUSED:
        return FailureClass.DUPLICATE
    if kind is CodeKind.INVALID:
        return FailureClass.PERMANENT
    return FailureClass.TRANSIENT


def retried_now(service: str, code: str) -> bool:
    """Whether a failed statement or entry with ``code`` is worth another attempt within this
    invocation (after a backoff): its code is RETRYABLE."""
    return code_kind(service, code) is CodeKind.RETRYABLE
