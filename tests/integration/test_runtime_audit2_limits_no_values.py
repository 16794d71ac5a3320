"""No business value reaches a log line or a DLQ reason, on any rejection path of the runtime
or the dispatcher (issue 22, item 4).

Logs go to CloudWatch Logs, read by whoever operates the functions; DLQ reasons travel with
the copy. Both say which key broke which rule ("log the key and the rule, never the value").
Before: the dispatcher logged a rejected billing item as ``amount='123456.78': must be an
integer`` (and currency, ids likewise). Marker values ride through every rejection branch
(bad JSON, missing event id, bad types, DynamoDB's value limits, writes() errors, notification
errors, the last receive, billing items from the table and from an S3 manifest); no log line
(Powertools' JSON and std logging) and no DLQ reason attribute may contain them.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, cast

import pytest

from handlers import orders
from handlers.orders import ORDER_KEY
from idempotent_messaging.dispatch import app
from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.runtime import (
    Consumer,
    Notification,
    WriteContext,
    env,
    lambda_handler,
    logger,
)
from idempotent_messaging.runtime.clients import clients_from_env, reset_clients
from idempotent_messaging.runtime.quarantine import RESERVED_ATTRIBUTES
from tests.integration.test_dispatch_world import World, account
from tests.integration.test_dispatch_world import world as world
from tests.integration.test_runtime_world import (
    BUSINESS_TABLE,
    Aws,
    FakeContext,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration

MARKER = "MARKER-7f3a"
NUMBER_MARKER = "7319468250"  # a business number: must not be logged either
BIG_NUMBER_MARKER = "7319468250731946825"  # above the dispatcher's 10^15 amount ceiling


@pytest.fixture
def captured(capfd: pytest.CaptureFixture[str]) -> Iterator[io.StringIO]:
    """Everything logged: Powertools' JSON lines of the runtime and the dispatcher (a handler
    with their formatter), std logging from any logger (root), and the process's own output."""
    stream = io.StringIO()
    targets = [logging.getLogger(name) for name in {logger.name, app.logger.name}]
    handlers = []
    for target in targets:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logger.registered_formatter)
        target.addHandler(handler)
        handlers.append((target, handler))
    root = logging.StreamHandler(stream)
    root.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s %(exc_text)s"))
    logging.getLogger().addHandler(root)
    yield stream
    logging.getLogger().removeHandler(root)
    for target, handler in handlers:
        target.removeHandler(handler)
    out, err = capfd.readouterr()
    stream.write(out + err)


def assert_no_marker(text: str) -> None:
    for marker in (MARKER, NUMBER_MARKER):
        assert marker not in text, text[max(0, text.find(marker) - 400) : text.find(marker) + 200]


def assert_reasons_clean(world: Aws) -> list[dict[str, Any]]:
    copies = world.dlq_messages()
    for copy in copies:
        ours = {
            k: v for k, v in copy.get("MessageAttributes", {}).items() if k in RESERVED_ATTRIBUTES
        }
        assert_no_marker(json.dumps(ours))
    return copies


@pytest.fixture
def lambda_env(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in aws.env(**{env.MAX_RECEIVE_COUNT: "5"}).items():
        monkeypatch.setenv(name, value)
    aws.claims_in_items = True
    reset_clients()
    yield aws
    reset_clients()


def _deep(levels: int) -> Any:
    value: Any = MARKER
    for _ in range(levels):
        value = {"n": value}
    return value


def test_orders_rejections_never_log_or_dlq_a_value(lambda_env: Aws, captured: io.StringIO) -> None:
    order = {"order_id": "o-1", "note": MARKER}
    bodies = [
        f'{{"event_id": "bad-json", "note": "{MARKER}"',  # not JSON
        json.dumps({"order": order}),  # missing event id
        json.dumps({"event_id": {"v": MARKER}, "order": order}),  # event id of a bad type
        json.dumps({"event_id": "t-1", "order": MARKER}),  # order of a bad type
        json.dumps({"event_id": "t-2", "order": {"order_id": [MARKER]}}),
        json.dumps({"event_id": "t-3", "order": {**order, "recorded_at": MARKER}}),
        # DynamoDB's value limits: range, digits, NaN, nesting, invalid text
        f'{{"event_id": "v-1", "order": {{"order_id": "o-v1", "n": 1E+200, "note": "{MARKER}"}}}}',
        f'{{"event_id": "v-2", "order": {{"order_id": "o-v2", "n": {NUMBER_MARKER * 5}}}}}',
        json.dumps({"event_id": "v-3", "order": {"order_id": "o-v3", "d": _deep(40)}}),
        '{"event_id": "v-4", "order": {"order_id": "o-v4", "s": "\\udc80' + MARKER + '"}}',
        f'{{"event_id": "v-5", "order": {{"order_id": "o-v5", "n": NaN, "m": "{MARKER}"}}}}',
    ]
    records = [record(body) for body in bodies]
    records.append(record(json.dumps({"event_id": "last", "order": MARKER}), receive_count=5))
    response = orders.handler(sqs_event(*records), FakeContext())
    failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
    assert len(failed) <= 1  # only the lone surrogate, which SQS could never carry
    copies = assert_reasons_clean(lambda_env)
    assert len(copies) >= len(records) - 1
    assert_no_marker(captured.getvalue())


def _raising(kind: type[BaseException]) -> Any:
    def plug_in(message: Any, *_: Any) -> Any:
        raise kind(f"cannot use {message.get('value')!r}")

    return plug_in


def _writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    return [
        {
            "Put": {
                "TableName": BUSINESS_TABLE,
                "Item": {ORDER_KEY: {"S": ctx.event_id}, "value": {"S": str(message["value"])}},
            }
        }
    ]


def test_plug_in_and_notification_errors_never_log_or_dlq_a_value(
    lambda_env: Aws, captured: io.StringIO
) -> None:
    def body(event_id: str) -> str:
        return json.dumps(
            {"event_id": event_id, "value": MARKER, "amount": Decimal(NUMBER_MARKER)}, default=str
        )

    consumers = [
        Consumer(writes=_raising(KeyError)),
        Consumer(writes=_raising(ValueError)),
        Consumer(writes=_raising(RuntimeError)),  # a plug-in bug: failed, retried
        Consumer(writes=_writes, notification=_raising(TypeError)),
        Consumer(writes=_writes, notification=cast(Any, lambda m, e: {"message": m["value"]})),
        Consumer(writes=_writes, notification=lambda m, e: Notification("x" * 300_000 + MARKER)),
        Consumer(
            writes=lambda m, c: [
                {
                    "Put": {
                        "TableName": BUSINESS_TABLE,
                        "Item": {ORDER_KEY: {"S": c.event_id}, "v": {"N": MARKER}},
                    }
                }
            ]
        ),
    ]
    for i, consumer in enumerate(consumers):
        lambda_handler(consumer)(sqs_event(record(body(f"p-{i}"))), FakeContext())
    # SNS refuses the notification for good (an entry with SenderFault): owed, quarantined.
    sns = clients_from_env().sns

    def refuse(parsed: dict[str, Any], **_: Any) -> None:
        ids = [ok["Id"] for ok in parsed.get("Successful", [])]
        parsed["Successful"] = []
        parsed["Failed"] = [
            {
                "Id": i,
                "Code": "InvalidParameter",
                "Message": "Invalid parameter",
                "SenderFault": True,
            }
            for i in ids
        ]

    sns.meta.events.register("after-call.sns.PublishBatch", refuse)
    notify = Consumer(
        writes=_writes,
        notification=lambda m, e: Notification(
            json.dumps({"v": m["value"]}), attributes={"v": MARKER}
        ),
    )
    lambda_handler(notify)(sqs_event(record(body("owed-1"))), FakeContext())
    sns.meta.events.unregister("after-call.sns.PublishBatch", refuse)
    assert_reasons_clean(lambda_env)
    assert_no_marker(captured.getvalue())


def test_billing_items_are_rejected_by_key_and_rule_never_by_value(
    world: World, captured: io.StringIO
) -> None:
    """The accounts table and the S3 manifest: each invalid item is logged by its key (tenant/
    employee, or its byte offset) and the rule it broke."""
    items = [account("acme", "ok")]
    for n, (name, value) in enumerate(
        [
            ("amount", {"S": MARKER}),  # not a number
            ("amount", {"N": "3.1415" + NUMBER_MARKER}),  # not an integer
            ("amount", {"N": BIG_NUMBER_MARKER}),  # above the ceiling
            ("amount", {"N": "-" + NUMBER_MARKER}),  # negative
            ("currency", {"S": MARKER}),
        ]
    ):
        item = account("acme", f"bad-{n}")
        item[name] = value
        items.append(item)
    world.seed(items)
    world.dispatch({"month": "2026-06"})
    lines = [
        {"tenant_id": "acme", "employee_id": "m-ok", "amount": 1, "currency": "JPY"},
        {"tenant_id": "acme", "employee_id": "m-1", "amount": MARKER, "currency": "JPY"},
        {
            "tenant_id": "acme",
            "employee_id": "m-2",
            "amount": float(NUMBER_MARKER) + 0.5,
            "currency": "JPY",
        },
        {"tenant_id": "acme", "employee_id": "m-3", "amount": 1, "currency": MARKER},
        {"tenant_id": f"{MARKER}:x", "employee_id": "m-4", "amount": 1, "currency": "JPY"},
        {"tenant_id": "acme", "employee_id": ["m", MARKER], "amount": 1, "currency": "JPY"},
    ]
    world.s3.put_object(
        Bucket="billing-manifests",
        Key="billing/2026-07.jsonl",
        Body=("\n".join(json.dumps(line) for line in lines) + "\n").encode(),
    )
    world.dispatcher_env(
        **{
            denv.ITEM_SOURCE: denv.SOURCE_S3,
            denv.MANIFEST_BUCKET: "billing-manifests",
            denv.MANIFEST_KEY_TEMPLATE: "billing/{month}.jsonl",
        }
    )
    world.dispatch({"month": "2026-07"})
    text = captured.getvalue()
    rejected = [json.loads(line) for line in text.splitlines() if '"item rejected"' in line]
    refs = sorted(r["item"] for r in rejected)
    assert refs[:5] == [f"acme/bad-{n}" for n in range(5)]  # the table's key
    assert len(refs) == 10 and all(ref.startswith("byte ") for ref in refs[5:])  # the offset
    for line in rejected:
        assert line["reason"].split(":")[0] in {"amount", "currency", "tenant_id", "employee_id"}
    assert_no_marker(text)
