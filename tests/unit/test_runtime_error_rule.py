"""ONE rule for an AWS error code, at call level and inside a 200 answer, checked with botocore.

Every error code botocore's service models give for every operation the consumer runtime calls
(plus the common errors every AWS API may answer) is classified at its call site as the error
of the whole call AND, where the operation answers per entry, as that entry's code: a
PublishBatch or SendMessageBatch ``Failed`` entry, a BatchExecuteStatement ``Error``, a
TransactWriteItems cancellation reason. The two must agree (a refused condition excepted: its
call site gives it its meaning), and every answer botocore itself would retry must be
transient wherever it arrives. What botocore would retry is asked of botocore: its standard
retry mode's checkers on the real operation model, and its legacy handler built from
``_retry.json``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from botocore import xform_name
from botocore.exceptions import ClientError

from idempotent_messaging.runtime import errors
from idempotent_messaging.runtime.errors import (
    FailureClass,
    classify_cancellation,
    classify_entry,
    classify_exception,
    classify_statement,
)
from tests.aws_errors import botocore_retries, model, status

RUNTIME = Path(errors.__file__).resolve().parent

# Each operation the runtime calls -> how it answers per entry inside a 200 (None: it does not,
# or only with UnprocessedKeys, which carry no code).
CALL_SITES: dict[tuple[str, str], str | None] = {
    ("dynamodb", "BatchExecuteStatement"): "statement",  # claims' INSERTs, the sent marking
    ("dynamodb", "TransactWriteItems"): "cancellation",  # claims + business writes
    ("dynamodb", "BatchGetItem"): None,  # statuses and receipts
    ("dynamodb", "PutItem"): None,  # the batch's publication receipt
    ("dynamodb", "UpdateItem"): None,  # an owed notification kept on its claim
    ("dynamodb", "DeleteItem"): None,  # a domain-keyed claim released when its row is refused
    ("sns", "PublishBatch"): "entry",
    ("sqs", "SendMessageBatch"): "entry",  # DLQ copies
}

# Errors every AWS API may answer besides its modeled ones (AWS API references, "Common
# Errors"; DynamoDB's own table in "Error handling with DynamoDB").
COMMON = {
    "dynamodb": (
        "AccessDeniedException",
        "ValidationException",
        "UnrecognizedClientException",
        "MissingAuthenticationTokenException",
        "ServiceUnavailable",
    ),
    "sns": ("AccessDeniedException", "ThrottlingException", "ServiceUnavailable"),
    "sqs": (
        "AccessDeniedException",
        "ThrottlingException",
        "ServiceUnavailable",
        "InvalidParameterValue",
    ),
}

# BatchStatementError.Code / CancellationReason.Code -> the exception the same failure raises
# on a single-item call (DynamoDB API reference, BatchStatementError; "Error handling with
# DynamoDB"). Checked below to cover every code botocore's model lists.
ENTRY_TO_CALL_CODE = {
    "ConditionalCheckFailed": "ConditionalCheckFailedException",
    "ItemCollectionSizeLimitExceeded": "ItemCollectionSizeLimitExceededException",
    "RequestLimitExceeded": "RequestLimitExceeded",
    "ValidationError": "ValidationException",
    "ProvisionedThroughputExceeded": "ProvisionedThroughputExceededException",
    "TransactionConflict": "TransactionConflictException",
    "ThrottlingError": "ThrottlingException",
    "InternalServerError": "InternalServerError",
    "ResourceNotFound": "ResourceNotFoundException",
    "AccessDenied": "AccessDeniedException",
    "DuplicateItem": "DuplicateItemException",
}
REFUSED = {"ConditionalCheckFailed", "DuplicateItem"}
"""A condition refused the write: a claim's refusal is a duplicate, a business write's a
semantic failure; on a whole single-item call the runtime handles it where it calls."""


def call_error(service: str, operation: str, code: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": "injected"},
            "ResponseMetadata": {"HTTPStatusCode": status(service, code)},
        },
        operation,
    )


def _cases() -> list[tuple[str, str, str]]:
    cases = []
    for service, operation in CALL_SITES:
        modeled = [s.error_code for s in model(service).operation_model(operation).error_shapes]
        for code in dict.fromkeys([*modeled, *COMMON[service]]):
            cases.append((service, operation, code))
    return cases


CASES = _cases()


def _entry_codes_of_dynamodb() -> list[str]:
    """Every per-statement code (BatchStatementErrorCodeEnum) and every cancellation reason
    code the TransactionCanceledException documentation lists, from botocore's model."""
    dynamodb = model("dynamodb")
    statement = list(dynamodb.shape_for("BatchStatementErrorCodeEnum").enum)
    documented = dynamodb.shape_for("TransactionCanceledException").documentation
    reasons = re.findall(r"Code: <code>(\w+)</code>", documented)
    return list(dict.fromkeys([*statement, *(r for r in reasons if r != "None")]))


def test_the_call_sites_are_every_operation_the_runtime_calls() -> None:
    """The runtime's AWS adapters (every ``self._client.<method>(`` of runtime/) call exactly
    the operations this module checks."""
    called = set()
    for path in RUNTIME.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "_client"
            ):
                called.add(node.func.attr)
    operations = {
        xform_name(op): op
        for service in ("dynamodb", "sns", "sqs")
        for op in model(service).operation_names
    }
    assert {operations[name] for name in called} == {op for _, op in CALL_SITES}


@pytest.mark.parametrize(("service", "operation", "code"), CASES)
def test_every_code_of_every_runtime_operation_is_classed_alike_on_the_call_and_its_entries(
    service: str, operation: str, code: str
) -> None:
    call = classify_exception(call_error(service, operation, code))
    assert call in (FailureClass.TRANSIENT, FailureClass.PERMANENT)
    if botocore_retries(service, operation, code):
        assert call is FailureClass.TRANSIENT, f"botocore retries {code}; the runtime must too"
    if CALL_SITES[(service, operation)] == "entry":
        # PublishBatchResultEntry / BatchResultErrorEntry carry the same codes as the call.
        assert classify_entry(service, code) is call


@pytest.mark.parametrize("entry_code", _entry_codes_of_dynamodb())
def test_every_dynamodb_statement_code_and_cancellation_reason_is_classed_as_on_a_call(
    entry_code: str,
) -> None:
    call_code = ENTRY_TO_CALL_CODE[entry_code]  # KeyError: botocore lists a new code
    call = classify_exception(call_error("dynamodb", "PutItem", call_code))
    statement = classify_statement(entry_code)
    business = classify_cancellation(entry_code, is_claim=False)
    claim = classify_cancellation(entry_code, is_claim=True)
    if entry_code in REFUSED:
        assert statement is FailureClass.DUPLICATE
        assert claim is FailureClass.DUPLICATE and business is FailureClass.PERMANENT
        return
    assert statement is call and business is call and claim is call
    retried = errors.retried_now("dynamodb", entry_code)
    assert retried is botocore_retries("dynamodb", "PutItem", call_code) or (
        retried and ("dynamodb", call_code) in errors.DOCUMENTED
    )


def test_kms_throttling_inside_a_publish_batch_answer_is_transient_as_on_the_call() -> None:
    """SNS API reference, Publish/PublishBatch Errors: KMSThrottling, "The request was denied
    due to request throttling" (botocore's model: HTTP 400, senderFault true). SenderFault
    alone would make it permanent; its code says retry."""
    shape = model("sns").shape_for_error_code("KMSThrottling")
    assert shape.metadata["error"] == {
        "code": "KMSThrottling",
        "httpStatusCode": 400,
        "senderFault": True,
    }
    assert classify_entry("sns", "KMSThrottling") is FailureClass.TRANSIENT
    assert classify_exception(call_error("sns", "PublishBatch", "KMSThrottling")) is (
        FailureClass.TRANSIENT
    )


def test_item_collection_size_limit_is_retried_as_a_statement_a_reason_and_a_call() -> None:
    """DynamoDB developer guide, "Error handling with DynamoDB": ItemCollectionSizeLimitExceeded
    Exception, "OK to retry? Yes"."""
    code = "ItemCollectionSizeLimitExceeded"
    assert classify_statement(code) is FailureClass.TRANSIENT
    assert errors.retried_now("dynamodb", code)
    assert classify_cancellation(code, is_claim=False) is FailureClass.TRANSIENT
    assert classify_exception(call_error("dynamodb", "PutItem", f"{code}Exception")) is (
        FailureClass.TRANSIENT
    )


def test_a_parameter_sns_refuses_is_permanent_on_the_call_as_in_an_entry() -> None:
    """botocore's SNS model: InvalidParameterValueException answers the code
    ``ParameterValueInvalid`` ("a request parameter does not comply with the associated
    constraints"), HTTP 400: it can never be accepted, whether the call or one entry says so."""
    assert classify_exception(call_error("sns", "PublishBatch", "ParameterValueInvalid")) is (
        FailureClass.PERMANENT
    )
    assert classify_entry("sns", "ParameterValueInvalid") is FailureClass.PERMANENT


def test_sqs_json_errors_are_read_by_their_json_code_before_the_query_one() -> None:
    """SQS answers JSON with the query API's code in x-amzn-query-error; botocore reports that
    as Code and keeps the JSON shape name as QueryErrorCode (botocore parsers,
    ``_do_query_compatible_error_parse``)."""
    error = ClientError(
        {
            "Error": {
                "Code": "AWS.SimpleQueueService.NonExistentQueue",
                "QueryErrorCode": "QueueDoesNotExist",
            },
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        "SendMessageBatch",
    )
    assert errors.code_kind("sqs", "QueueDoesNotExist") is errors.CodeKind.OTHER
    assert classify_exception(error) is FailureClass.TRANSIENT
    throttled = ClientError(
        {
            "Error": {"Code": "KMS.ThrottlingException", "QueryErrorCode": "KmsThrottled"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        "SendMessageBatch",
    )
    assert errors.code_kind("sqs", "KmsThrottled") is errors.CodeKind.RETRYABLE
    assert classify_exception(throttled) is FailureClass.TRANSIENT


def test_every_documented_code_exists_in_its_service_or_the_common_errors() -> None:
    """The documented table names real codes: each one is a modeled error code of its service,
    one of the common errors, or a code botocore's models spell as a per-entry code."""
    for service, code in errors.DOCUMENTED:
        modeled = {s.error_code for s in model(service).error_shapes}
        assert code in modeled | set(COMMON[service]), (service, code)


def test_classifying_reads_no_service_model_the_clients_have_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cold-start promise, without a clock: nothing is read at import, and once the
    clients exist (every invocation's first step) the first classification reads no service
    model file again, only ``_retry.json`` (botocore's loader caches per argument list)."""
    import botocore.loaders

    from idempotent_messaging.runtime import clients

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    clients.reset_clients()
    errors.code_kind.cache_clear()
    errors._errors_of.cache_clear()
    errors._service_of.cache_clear()
    clients.clients_from_env()
    read: list[str] = []
    original = botocore.loaders.JSONFileLoader.load_file

    def counting(self: Any, file_path: str) -> Any:
        read.append(file_path)
        return original(self, file_path)

    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "load_file", counting)
    assert classify_exception(call_error("sns", "PublishBatch", "KMSThrottling")) is (
        FailureClass.TRANSIENT
    )
    assert classify_entry("sqs", "KmsThrottled") is FailureClass.TRANSIENT
    assert classify_statement("ThrottlingError") is FailureClass.TRANSIENT
    assert [Path(p).name for p in read if "service-2" in p] == []
    clients.reset_clients()
