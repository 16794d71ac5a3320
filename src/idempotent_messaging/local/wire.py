"""What a service would answer, in its own wire protocol: the error responses and the answers
with failed entries that ``local.faults`` returns at botocore's HTTP stage.

Nothing here writes a protocol by hand. A request is rewritten with botocore's own request
serializer (the call's parameters without the failed entries), the service's answer is read
with botocore's own parser, and an answer is written with moto's response serializer (the one
moto's server answers with: the service model's HTTP status for an error code, SQS's
query-compatible codes, DynamoDB's ``__type``, SNS's XML). So botocore parses what it gets
exactly as it parses a real service's answer, and its retry logic and the caller's error
handling see what they would see in AWS.
"""

from __future__ import annotations

import copy
import functools
import io
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import botocore.loaders
import botocore.parsers
import botocore.serialize
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.model import OperationModel, ServiceModel, Shape
from botocore.retries.standard import ThrottledRetryableChecker
from moto.core.model import ServiceModel as MotoServiceModel
from moto.core.serialize import SERIALIZERS, get_serializer_class

PROTOCOLS = tuple(SERIALIZERS)
"""The wire protocols moto's serializer writes (every service the emulator serves speaks one)."""
THROTTLING_CODES = tuple(ThrottledRetryableChecker._THROTTLED_ERROR_CODES)
"""botocore's standard retry mode: every error code it retries as a throttle."""
SERVER_ERROR_CODES = (
    "InternalFailure",
    "InternalError",
    "InternalServerError",
    "ServiceUnavailable",
)

_LOADER = botocore.loaders.create_loader()
# moto's serializer warns when an error code is not modeled by the operation's service; an
# injected fault may use one on purpose (a per-entry code, a legacy alias).
warnings.filterwarnings("ignore", message=r"Exception\(InjectedError\)")


@functools.cache
def service_model(service: str) -> ServiceModel:
    """botocore's model of ``service`` (its service name: ``dynamodb``, ``sns``, ...)."""
    return ServiceModel(_LOADER.load_service_model(service, "service-2"), service_name=service)


@functools.cache
def _moto_model(service: str) -> MotoServiceModel:
    return MotoServiceModel(_LOADER.load_service_model(service, "service-2"), service)


def protocol(service: str) -> str:
    return str(service_model(service).protocol)


def error_shape(operation: OperationModel, code: str) -> Shape | None:
    """The modeled error named ``code`` (its shape name or its ``error.code``): the
    operation's own first, then any of its service."""
    service = operation.service_model
    shapes = list(operation.error_shapes) + [
        service.shape_for(name) for name in service.shape_names
    ]
    for shape in shapes:
        if shape.metadata.get("exception") and code in (
            shape.name,
            shape.metadata.get("error", {}).get("code"),
        ):
            return shape
    return None


def throttling_code(operation: OperationModel) -> str:
    """The throttle this operation answers: the first of its modeled errors that botocore
    retries as a throttle, else its service's (SNS: ``Throttled``, HTTP 429), else the generic
    code botocore knows for the protocol."""
    service = operation.service_model
    for shape in [*operation.error_shapes, *(service.shape_for(n) for n in service.shape_names)]:
        if not shape.metadata.get("exception"):
            continue
        retryable = shape.metadata.get("retryable") or {}
        code = shape.metadata.get("error", {}).get("code") or shape.name
        if (
            retryable.get("throttling")
            or code in THROTTLING_CODES
            or shape.name in THROTTLING_CODES
        ):
            return str(code)
    return "Throttling" if service.protocol == "query" else "ThrottlingException"


def sender_fault(operation: OperationModel, code: str) -> bool:
    """The model's ``senderFault`` for ``code``; unmodeled: a server error is not the
    sender's fault, anything else is."""
    shape = error_shape(operation, code)
    if shape is not None and "senderFault" in shape.metadata.get("error", {}):
        return bool(shape.metadata["error"]["senderFault"])
    return code not in SERVER_ERROR_CODES


class _Body(io.BytesIO):
    """A raw HTTP body botocore can stream (AWSResponse.raw)."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        chunk = self.read()
        while chunk:
            yield chunk
            chunk = self.read()


def _response(
    request: AWSPreparedRequest, operation: OperationModel, status: int, headers: Any, body: Any
) -> AWSResponse:
    data = body if isinstance(body, bytes) else str(body).encode()
    final = {k: v for k, v in dict(headers).items() if k.lower() not in ("content-length",)}
    final["Content-Length"] = str(len(data))
    final.setdefault("x-amzn-RequestId", "injected")
    if operation.service_model.service_name == "dynamodb":  # DynamoDB signs bodies with a CRC32
        final["x-amz-crc32"] = str(zlib.crc32(data) & 0xFFFFFFFF)
    return AWSResponse(request.url, status, final, _Body(data))


class InjectedError(Exception):
    """What moto's serializer writes as an error: ``code``, ``message`` and any modeled
    fields of the error (``CancellationReasons``) as attributes."""

    def __init__(self, code: str, message: str, fields: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        for name, value in (fields or {}).items():
            setattr(self, name, value)


def _serialize(operation: OperationModel, result: Any) -> dict[str, Any]:
    service = operation.service_model.service_name
    moto_operation = _moto_model(service).operation_model(operation.name)
    serializer = get_serializer_class(service, operation.service_model.protocol)(moto_operation)
    return dict(serializer.serialize(result))


def error_response(
    request: AWSPreparedRequest,
    operation: OperationModel,
    code: str,
    message: str,
    *,
    status: int | None = None,
    fields: Mapping[str, Any] | None = None,
) -> AWSResponse:
    """The error answer of ``operation`` with ``code``, as the service writes it."""
    written = _serialize(operation, InjectedError(code, message, fields))
    status = status or int(written["status_code"])
    if status == 400 and error_shape(operation, code) is None and code in SERVER_ERROR_CODES:
        status = 503 if code == "ServiceUnavailable" else 500  # unmodeled server errors are 5xx
    return _response(request, operation, status, written["headers"], written["body"])


def _parse(operation: OperationModel, answer: AWSResponse) -> dict[str, Any]:
    parser = botocore.parsers.create_parser(operation.service_model.protocol)
    parsed = parser.parse(
        {"status_code": answer.status_code, "headers": answer.headers, "body": answer.content},
        operation.output_shape,
    )
    parsed.pop("ResponseMetadata", None)
    return dict(parsed)


def _send_params(
    request: AWSPreparedRequest, operation: OperationModel, params: dict[str, Any], send: Send
) -> AWSResponse:
    """Send the request again with ``params`` as its body (botocore's own serializer)."""
    serializer = botocore.serialize.create_serializer(operation.service_model.protocol)
    body = serializer.serialize_to_request(params, operation)["body"]
    if isinstance(body, dict):  # the query protocol's form, encoded as botocore encodes it
        body = urlencode([(str(k), str(v)) for k, v in body.items()], doseq=True)
    data = body if isinstance(body, bytes) else str(body).encode()
    request.body = data
    request.headers["Content-Length"] = str(len(data))
    return send(request)


# --- answers with failed entries (inside a 200, or a cancelled transaction) -------------------

Send = Callable[[AWSPreparedRequest], AWSResponse]


@dataclass(frozen=True)
class EntryFailure:
    """What a failed entry says: its code, message and whether it was the sender's fault."""

    code: str
    message: str
    sender_fault: bool


BATCH_OPERATIONS = {
    "sns": ("PublishBatch",),
    "sqs": ("SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch"),
    "dynamodb": (
        "BatchExecuteStatement",
        "TransactWriteItems",
        "TransactGetItems",
        "BatchGetItem",
        "BatchWriteItem",
    ),
}
"""The calls whose entries can fail one by one: per-entry failures inside a 200 answer
(PublishBatch, SQS batches, BatchExecuteStatement), unprocessed keys or items (BatchGetItem,
BatchWriteItem), or a cancelled transaction's reasons (TransactWriteItems, TransactGetItems)."""

_ENTRIES = {
    "PublishBatch": "PublishBatchRequestEntries",
    "SendMessageBatch": "Entries",
    "DeleteMessageBatch": "Entries",
    "ChangeMessageVisibilityBatch": "Entries",
    "BatchExecuteStatement": "Statements",
    "TransactWriteItems": "TransactItems",
    "TransactGetItems": "TransactItems",
}


def entries(operation: str, params: Mapping[str, Any]) -> list[Any]:
    """The entries of a batch call, in request order, as its parameters hold them; an entry of
    BatchGetItem / BatchWriteItem is ``{"TableName": ..., "Key": ...}`` /
    ``{"TableName": ..., "PutRequest" or "DeleteRequest": ...}``."""
    if operation in _ENTRIES:
        return list(params.get(_ENTRIES[operation]) or [])
    if operation == "BatchGetItem":
        return [
            {"TableName": table, "Key": key}
            for table, request in (params.get("RequestItems") or {}).items()
            for key in request.get("Keys") or []
        ]
    if operation == "BatchWriteItem":
        return [
            {"TableName": table, **entry}
            for table, requests in (params.get("RequestItems") or {}).items()
            for entry in requests
        ]
    raise ValueError(f"{operation} is not a batch call with entries")


def _split_table_items(
    params: dict[str, Any], failed: set[int], get: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """BatchGetItem / BatchWriteItem RequestItems -> (kept, left unprocessed)."""
    kept: dict[str, Any] = {}
    left: dict[str, Any] = {}
    index = 0
    for table, request in (params.get("RequestItems") or {}).items():
        items = (request.get("Keys") or []) if get else request
        keep: list[Any] = []
        leave: list[Any] = []
        for item in items:
            (leave if index in failed else keep).append(item)
            index += 1
        for target, chosen in ((kept, keep), (left, leave)):
            if chosen:
                target[table] = {**request, "Keys": chosen} if get else chosen
    return kept, left


def answer_with_failed_entries(
    request: AWSPreparedRequest,
    operation: OperationModel,
    params: dict[str, Any],
    failed: list[int],
    failure: EntryFailure,
    send: Send,
) -> AWSResponse:
    """Send the call without the ``failed`` entries (indexes into ``entries(...)``) and answer
    as the service answers when exactly those entries fail."""
    name = operation.name
    chosen = set(failed)
    if name in ("TransactWriteItems", "TransactGetItems"):
        reasons = [
            {"Code": failure.code, "Message": failure.message} if i in chosen else {"Code": "None"}
            for i in range(len(entries(name, params)))
        ]
        return error_response(
            request,
            operation,
            "TransactionCanceledException",
            "Transaction cancelled, please refer cancellation reasons for specific reasons "
            f"[{', '.join(r['Code'] for r in reasons)}]",
            fields={"CancellationReasons": reasons},
        )
    kept = copy.deepcopy(params)
    all_entries: list[Any] = []
    left: dict[str, Any] = {}
    if name in _ENTRIES:
        all_entries = entries(name, params)
        kept[_ENTRIES[name]] = [e for i, e in enumerate(all_entries) if i not in chosen]
        anything = bool(kept[_ENTRIES[name]])
    else:
        kept["RequestItems"], left = _split_table_items(params, chosen, name == "BatchGetItem")
        anything = bool(kept["RequestItems"])
    answer = _send_params(request, operation, kept, send) if anything else None
    if answer is not None and answer.status_code >= 300:
        return answer
    result = _parse(operation, answer) if answer is not None else {}
    if name in ("PublishBatch", "SendMessageBatch", "DeleteMessageBatch",
                "ChangeMessageVisibilityBatch"):  # fmt: skip
        result.setdefault("Successful", [])
        result["Failed"] = list(result.get("Failed") or []) + [
            {
                "Id": all_entries[i].get("Id"),
                "Code": failure.code,
                "Message": failure.message,
                "SenderFault": failure.sender_fault,
            }
            for i in sorted(chosen)
        ]
    elif name == "BatchExecuteStatement":
        sent = iter(result.get("Responses") or [])
        result["Responses"] = [
            {"Error": {"Code": failure.code, "Message": failure.message}}
            if i in chosen
            else next(sent)
            for i in range(len(all_entries))
        ]
    else:
        field = "UnprocessedKeys" if name == "BatchGetItem" else "UnprocessedItems"
        unprocessed = dict(result.get(field) or {})
        for table, value in left.items():
            if name == "BatchGetItem":
                merged = unprocessed.get(table) or {**value, "Keys": []}
                merged["Keys"] = list(merged.get("Keys") or []) + value["Keys"]
                unprocessed[table] = merged
            else:
                unprocessed[table] = list(unprocessed.get(table) or []) + value
        result[field] = unprocessed
        if name == "BatchGetItem":
            result.setdefault("Responses", {})
    written = _serialize(operation, result)
    headers = dict(answer.headers.items()) if answer is not None else written["headers"]
    return _response(request, operation, 200, headers, written["body"])
