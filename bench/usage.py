"""What each AWS call does, in the units AWS bills and the latency model reads.

`describe` turns one recorded call (service, operation, the request in DynamoDB's / SQS's
wire format or SNS's API parameters, the parsed response, the error code) into a `CallUsage`:
how many items it carried, whether it was transactional, the DynamoDB write and read request
units it consumed, and the SNS / SQS requests it is billed as. `aggregate` sums them per
operation. Both are pure, so the cost and latency models (bench/model.py) follow whatever the
implementations actually send: when the runtime changes its calls, the figures change with it.

The billing rules are AWS facts, cited where they are applied; prices live in
bench/aws_model.toml.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

KB = 1024
# DynamoDB developer guide, "Read and write operations" / on-demand capacity: one write request
# unit writes an item up to 1 KB; one read request unit reads an item up to 4 KB strongly
# consistent, or two such reads eventually consistent (0.5 unit each).
WRITE_UNIT_BYTES = 1 * KB
READ_UNIT_BYTES = 4 * KB
# SNS and SQS pricing pages: each 64 KB chunk of a request's payload is billed as one request.
REQUEST_CHUNK_BYTES = 64 * KB
# Where the runtime keeps a claim's content fingerprint (runtime.env.STATE_CLAIM_FINGERPRINT,
# runtime.env.ITEM_CLAIM_FINGERPRINT): the write units it adds are billed separately too, so
# the results show what the conflict guard of a claim costs on the wire.
FINGERPRINT_ATTRIBUTES = frozenset({"fingerprint", "claim_fingerprint"})


@dataclass(frozen=True)
class CallUsage:
    """One call in the units the models need."""

    key: str  # "dynamodb.TransactWriteItems"
    items: int  # items / statements / entries / messages the call carries (>= 1)
    transactional: bool = False
    write_units: float = 0.0
    read_units: float = 0.0
    billed_requests: int = 0  # SNS / SQS requests after the 64 KB chunk rule
    failed: bool = False
    cancelled_transaction: bool = False
    fingerprinted_items: int = 0  # written items carrying a claim fingerprint
    fingerprint_write_units: float = 0.0  # of write_units: billed only because of it


@dataclass
class OperationUsage:
    calls: int = 0
    items: int = 0
    failed_calls: int = 0
    write_units: float = 0.0
    read_units: float = 0.0
    billed_requests: int = 0
    cancelled_transaction_write_units: float = 0.0  # included in write_units
    fingerprinted_items: int = 0
    fingerprint_write_units: float = 0.0  # included in write_units

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["write_units"] = round(self.write_units, 3)
        out["fingerprint_write_units"] = round(self.fingerprint_write_units, 3)
        out["read_units"] = round(self.read_units, 3)
        out["cancelled_transaction_write_units"] = round(self.cancelled_transaction_write_units, 3)
        return out


def aggregate(calls: Iterable[CallUsage]) -> dict[str, dict[str, Any]]:
    """Per operation: calls, items, failed calls, write/read units, billed requests."""
    per_op: dict[str, OperationUsage] = {}
    for call in calls:
        op = per_op.setdefault(call.key, OperationUsage())
        op.calls += 1
        op.items += call.items
        op.failed_calls += int(call.failed)
        op.write_units += call.write_units
        op.read_units += call.read_units
        op.billed_requests += call.billed_requests
        op.fingerprinted_items += call.fingerprinted_items
        op.fingerprint_write_units += call.fingerprint_write_units
        if call.cancelled_transaction:
            op.cancelled_transaction_write_units += call.write_units
    return {key: per_op[key].as_dict() for key in sorted(per_op)}


# --- DynamoDB item sizes -------------------------------------------------------------------------


def attribute_value_size(value: Mapping[str, Any]) -> int:
    """Bytes DynamoDB counts for one AttributeValue in wire format.

    DynamoDB developer guide, "Item sizes and formats": strings and binaries by their length
    (UTF-8), numbers about 1 byte per two significant digits plus 1, null and boolean 1 byte,
    lists and maps 3 bytes plus 1 byte per element plus the elements (map keys included).
    """
    if len(value) != 1:
        raise ValueError(f"not a DynamoDB AttributeValue (expected one type key): {value!r}")
    (kind, data), *_ = value.items()
    if kind == "S":
        return len(str(data).encode())
    if kind == "B":
        return len(data) if isinstance(data, bytes | bytearray) else math.ceil(len(data) * 3 / 4)
    if kind == "N":
        return _number_size(str(data))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in data)
    if kind == "NS":
        return sum(_number_size(str(n)) for n in data)
    if kind == "BS":
        return sum(attribute_value_size({"B": b}) for b in data)
    if kind == "L":
        return 3 + sum(1 + attribute_value_size(v) for v in data)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + attribute_value_size(v) for k, v in data.items())
    raise ValueError(f"unknown DynamoDB AttributeValue type {kind!r}")


def _number_size(text: str) -> int:
    digits = text.lstrip("-+").split("e")[0].split("E")[0].replace(".", "").strip("0")
    return math.ceil(max(1, len(digits)) / 2) + 1


def item_size(item: Mapping[str, Any]) -> int:
    """Bytes of an item: attribute names plus values (DynamoDB's item size rule)."""
    return sum(len(name.encode()) + attribute_value_size(v) for name, v in item.items())


def write_units(size: int) -> float:
    """Write request units for writing `size` bytes: 1 per started KB, at least 1."""
    return float(max(1, math.ceil(size / WRITE_UNIT_BYTES)))


def read_units(size: int, consistent: bool) -> float:
    """Read request units for reading one item of `size` bytes: 1 per started 4 KB, at least
    1 (a missing item still costs the minimum); half for an eventually consistent read."""
    units = float(max(1, math.ceil(size / READ_UNIT_BYTES)))
    return units if consistent else units / 2


def _write_size(action: Mapping[str, Any]) -> int:
    """Size of what a Put / Update / Delete / ConditionCheck writes.

    Put: the item. Update: the key plus every value it sets (the existing item is not read,
    so an update of a large item is undercounted; exact below 1 KB, where all ours are).
    Delete / ConditionCheck: the key.
    """
    if "Item" in action:
        return item_size(action["Item"])
    size = item_size(action.get("Key", {}))
    values = action.get("ExpressionAttributeValues", {})
    return size + sum(attribute_value_size(v) for v in values.values())


def _partiql_is_read(statement: str) -> bool:
    return statement.lstrip().upper().startswith("SELECT")


# One field of the runtime's INSERT form, ``'name': ?`` (a quote in a name doubles).
INSERT_FIELD = re.compile(r"'((?:[^']|'')*)'\s*:\s*\?")


def _partiql_item(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The item an ``INSERT INTO "t" VALUE {'a': ?, ...}`` writes (every value a parameter,
    the form the runtime sends), or None for any other statement."""
    statement = str(entry.get("Statement", ""))
    if not statement.lstrip().upper().startswith("INSERT"):
        return None
    names = [n.replace("''", "'") for n in INSERT_FIELD.findall(statement)]
    parameters = entry.get("Parameters", [])
    if len(names) != len(parameters):
        return None
    return dict(zip(names, parameters, strict=True))


def _partiql_size(entry: Mapping[str, Any]) -> int:
    """Bytes a write statement writes: an INSERT's item (names and values, as any item is
    sized); other statements: their parameters (the key and the values they set)."""
    item = _partiql_item(entry)
    if item is not None:
        return item_size(item)
    return sum(attribute_value_size(p) for p in entry.get("Parameters", []))


def _fingerprint_cost(items: Iterable[Mapping[str, Any]], factor: float = 1.0) -> tuple[int, float]:
    """(items carrying a claim fingerprint, write units they cost only because of it)."""
    count, extra = 0, 0.0
    for item in items:
        if not FINGERPRINT_ATTRIBUTES & set(item):
            continue
        count += 1
        without = {k: v for k, v in item.items() if k not in FINGERPRINT_ATTRIBUTES}
        extra += factor * (write_units(item_size(item)) - write_units(item_size(without)))
    return count, extra


def _written_items(operation: str, request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The whole items a write call creates (Put items, INSERT items)."""
    if operation == "TransactWriteItems":
        return [a["Put"]["Item"] for a in request.get("TransactItems", []) if "Put" in a]
    if operation == "PutItem":
        return [request.get("Item", {})]
    if operation == "BatchWriteItem":
        return [
            r["PutRequest"]["Item"]
            for requests in request.get("RequestItems", {}).values()
            for r in requests
            if "PutRequest" in r
        ]
    if operation in ("BatchExecuteStatement", "ExecuteStatement", "ExecuteTransaction"):
        entries = request.get("Statements") or request.get("TransactStatements") or [request]
        return [item for e in entries if (item := _partiql_item(e)) is not None]
    return []


def describe_dynamodb(
    operation: str,
    request: Mapping[str, Any],
    response: Mapping[str, Any] | None,
    error_code: str | None,
) -> CallUsage:
    """Units of one DynamoDB call from its wire-format request and parsed response.

    Transactions: DynamoDB performs two underlying writes (reads) per transactional item, so
    each item costs double (developer guide, "Capacity management for transactions").
    A conditional write whose condition fails still consumes write units (developer guide,
    "Read and write operations"). A cancelled transaction keeps its units but is flagged, so
    the cost model can bill it or not (`cancelled_transactions_billed` in aws_model.toml).
    A throttled or otherwise rejected request consumes nothing.
    """
    usage = _dynamodb_usage(operation, request, response or {})
    transactional = 2.0 if usage.transactional else 1.0
    count, extra = _fingerprint_cost(_written_items(operation, request), transactional)
    usage = replace(usage, fingerprinted_items=count, fingerprint_write_units=extra)
    if error_code is None:
        return usage
    if error_code == "ConditionalCheckFailedException":
        return replace(usage, failed=True)
    if error_code == "TransactionCanceledException":
        return replace(usage, failed=True, cancelled_transaction=True)
    return replace(usage, write_units=0.0, read_units=0.0, fingerprint_write_units=0.0, failed=True)


def _dynamodb_usage(
    operation: str, request: Mapping[str, Any], response: Mapping[str, Any]
) -> CallUsage:
    key = f"dynamodb.{operation}"
    if operation == "TransactWriteItems":
        actions = [next(iter(a.values())) for a in request.get("TransactItems", [])]
        units = sum(2 * write_units(_write_size(a)) for a in actions)
        return CallUsage(key, max(1, len(actions)), True, write_units=units)
    if operation == "ExecuteTransaction":
        statements = request.get("TransactStatements", [])
        w = sum(2 * write_units(_partiql_size(s)) for s in statements)
        return CallUsage(key, max(1, len(statements)), True, write_units=w)
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        return CallUsage(key, 1, write_units=write_units(_write_size(request)))
    if operation == "BatchWriteItem":
        sizes = [
            _write_size(next(iter(r.values())))
            for requests in request.get("RequestItems", {}).values()
            for r in requests
        ]
        return CallUsage(key, max(1, len(sizes)), write_units=sum(map(write_units, sizes)))
    if operation in ("BatchExecuteStatement", "ExecuteStatement"):
        statements = request.get("Statements") or [request]
        answers = response.get("Responses") or [response]
        w = r = 0.0
        for index, s in enumerate(statements):
            if _partiql_is_read(s.get("Statement", "")):
                answer = answers[index] if index < len(answers) else {}
                item = answer.get("Item") or (answer.get("Items") or [{}])[0]
                r += read_units(item_size(item), bool(s.get("ConsistentRead", False)))
            else:
                w += write_units(_partiql_size(s))
        return CallUsage(key, max(1, len(statements)), write_units=w, read_units=r)
    if operation == "GetItem":
        consistent = bool(request.get("ConsistentRead", False))
        size = item_size(response.get("Item", {}))
        return CallUsage(key, 1, read_units=read_units(size, consistent))
    if operation == "BatchGetItem":
        r, items = 0.0, 0
        returned = response.get("Responses", {})
        for table, spec in request.get("RequestItems", {}).items():
            consistent = bool(spec.get("ConsistentRead", False))
            sizes = [item_size(i) for i in returned.get(table, [])]
            missing = max(0, len(spec.get("Keys", [])) - len(sizes))
            r += sum(read_units(s, consistent) for s in sizes) + missing * read_units(0, consistent)
            items += len(spec.get("Keys", []))
        return CallUsage(key, max(1, items), read_units=r)
    if operation == "TransactGetItems":
        sizes = [item_size(r.get("Item", {})) for r in response.get("Responses", [])]
        return CallUsage(
            key, max(1, len(sizes)), True, read_units=sum(2 * read_units(s, True) for s in sizes)
        )
    if operation in ("Query", "Scan"):
        # Query / Scan round the SUM of the returned items' sizes, not each item.
        size = sum(item_size(i) for i in response.get("Items", []))
        consistent = bool(request.get("ConsistentRead", False))
        return CallUsage(key, 1, read_units=read_units(size, consistent))
    raise ValueError(
        f"dynamodb.{operation}: the cost model has no billing rule for this operation; "
        "add one in bench/usage.py"
    )


# --- SNS and SQS ---------------------------------------------------------------------------------


def _chunks(size: int) -> int:
    return max(1, math.ceil(size / REQUEST_CHUNK_BYTES))


def _attributes_size(attributes: Mapping[str, Any] | None) -> int:
    if not attributes:
        return 0
    total = 0
    for name, value in attributes.items():
        total += len(name.encode()) + len(str(value.get("DataType", "")).encode())
        text = value.get("StringValue") or value.get("BinaryValue") or ""
        total += len(text) if isinstance(text, bytes | bytearray) else len(str(text).encode())
    return total


def message_size(body: str, attributes: Mapping[str, Any] | None = None) -> int:
    """Payload bytes of an SNS / SQS message: body plus message attributes (names, types,
    values), which both services count towards the message size."""
    return len(body.encode()) + _attributes_size(attributes)


def describe_sns(operation: str, params: Mapping[str, Any], error_code: str | None) -> CallUsage:
    """SNS publishes: each 64 KB chunk of published data is one request (SNS pricing page); a
    PublishBatch is one request per 64 KB chunk of its entries' total, as SQS bills a batch
    (SNS developer guide, "Amazon SNS message batching": batching "can reduce the costs ...
    by a factor of up to 10", which only a per-request bill gives). Deliveries to SQS and
    Lambda are free."""
    key = f"sns.{operation}"
    if error_code is not None:
        return CallUsage(key, 1, failed=True)
    if operation == "Publish":
        size = message_size(str(params.get("Message", "")), params.get("MessageAttributes"))
        return CallUsage(key, 1, billed_requests=_chunks(size))
    if operation == "PublishBatch":
        entries = params.get("PublishBatchRequestEntries", [])
        size = sum(
            message_size(str(e.get("Message", "")), e.get("MessageAttributes")) for e in entries
        )
        return CallUsage(key, max(1, len(entries)), billed_requests=_chunks(size))
    return CallUsage(key, 1, billed_requests=1)


def describe_sqs(operation: str, params: Mapping[str, Any], error_code: str | None) -> CallUsage:
    """SQS requests: every API action is a request, each 64 KB chunk of its payload billed as
    one (SQS pricing page); a batch's payload is the sum of its entries."""
    key = f"sqs.{operation}"
    if error_code is not None:
        return CallUsage(key, 1, failed=True)
    if operation == "SendMessage":
        size = message_size(str(params.get("MessageBody", "")), params.get("MessageAttributes"))
        return CallUsage(key, 1, billed_requests=_chunks(size))
    if operation == "SendMessageBatch":
        entries = params.get("Entries", [])
        size = sum(
            message_size(str(e.get("MessageBody", "")), e.get("MessageAttributes")) for e in entries
        )
        return CallUsage(key, max(1, len(entries)), billed_requests=_chunks(size))
    if operation.endswith("Batch"):
        return CallUsage(key, max(1, len(params.get("Entries", []))), billed_requests=1)
    return CallUsage(key, 1, billed_requests=1)


def describe(
    service: str,
    operation: str,
    request: Mapping[str, Any],
    response: Mapping[str, Any] | None,
    error_code: str | None,
) -> CallUsage:
    """Units of one call of any service the benchmark's implementations use."""
    if service == "dynamodb":
        return describe_dynamodb(operation, request, response, error_code)
    if service == "sns":
        return describe_sns(operation, request, error_code)
    if service == "sqs":
        return describe_sqs(operation, request, error_code)
    return CallUsage(f"{service}.{operation}", 1, failed=error_code is not None)
