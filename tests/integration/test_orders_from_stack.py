"""The consumers as the STACK deploys them, driven on moto.

Nothing here is configured by hand: ``__main__.py`` runs with ``Pulumi.dev.yaml`` under
Pulumi mocks (``policy.program.run_program``); each consumer function's handler string and
environment are read from the program's Lambda resource; its tables (with the key schemas
the stack declares), notification topic, DLQ and source queue (visibility, redrive policy,
FIFO settings) are created in moto from the same resources' inputs; the environment's names,
ARNs and URLs are mapped onto the moto resources. Then a poller plays Lambda's part: receive
up to the mapping's batch size, invoke the handler in-process, delete what the partial batch
response does not name. It drives duplicates, a process crash after the commit and poison
messages, and counts rows, notifications, DLQ contents and AWS calls per batch.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

# Imported BEFORE run_program: it unloads the project modules a program run imports, and the
# handlers must stay the very modules whose client cache the tests reset and instrument.
import handlers.charges
import handlers.orders
from idempotent_messaging.dispatch.keys import BillableItem, charge_message
from idempotent_messaging.offline import ProgramRun, RecordedResource, run_program
from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.clients import clients_from_env, reset_clients
from idempotent_messaging.runtime.quarantine import (
    ATTR_FAILURE_CLASS,
    ATTR_FAILURE_KIND,
    ATTR_FAILURE_REASON,
    ATTR_RECEIVE_COUNT,
)
from tests.integration.test_runtime_world import FakeContext, _drain, scan

pytestmark = pytest.mark.integration

PROJECT_DIR = Path(__file__).resolve().parents[2]
FUNCTION = "aws:lambda/function:Function"
ESM = "aws:lambda/eventSourceMapping:EventSourceMapping"
TABLE = "aws:dynamodb/table:Table"
TOPIC = "aws:sns/topic:Topic"
QUEUE = "aws:sqs/queue:Queue"
MONTH = "2026-06"


class Crash(BaseException):
    """A process death: ``except Exception`` inside the handler cannot swallow it."""


@pytest.fixture(scope="module")
def dev_stack() -> ProgramRun:
    return run_program(PROJECT_DIR, "dev")


@dataclass(frozen=True)
class StackConsumer:
    """One consumer function of the stack and the resources it is wired to."""

    handler: str
    environment: dict[str, str]
    batch_size: int
    source: RecordedResource
    dlq: RecordedResource
    resources: list[RecordedResource]
    """Tables, topics and queues the environment names (by name, ARN or URL)."""


def consumer_from_stack(run: ProgramRun, function_name_output: str) -> StackConsumer:
    name = run.stack_outputs[function_name_output]
    (fn,) = [r for r in run.resources if r.type == FUNCTION and r.inputs["name"] == name]
    (esm,) = [
        r
        for r in run.resources
        if r.type == ESM and r.property_dependencies["functionName"] == [fn.urn]
    ]
    (source_urn,) = esm.property_dependencies["eventSourceArn"]
    source = run.by_urn[source_urn]
    (dlq_urn,) = source.property_dependencies["redrivePolicy"]
    environment: dict[str, str] = fn.inputs["environment"]["variables"]
    values = set(environment.values())
    named = [
        r
        for r in run.resources
        if r.type in (TABLE, TOPIC, QUEUE)
        and values & {r.outputs.get("name"), r.outputs.get("arn"), r.outputs.get("url")}
    ]
    return StackConsumer(
        handler=fn.inputs["handler"],
        environment=dict(environment),
        batch_size=int(esm.inputs["batchSize"]),
        source=source,
        dlq=run.by_urn[dlq_urn],
        resources=named,
    )


def _lambda_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """An SQS message as Lambda's poller hands it to the function."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            k: {"stringValue": v.get("StringValue"), "dataType": v["DataType"]}
            for k, v in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


@dataclass
class Deployed:
    """The stack's consumer materialised in moto, with a Lambda-like poller."""

    spec: StackConsumer
    handler: Callable[[dict[str, Any], Any], dict[str, Any]]
    sqs: Any
    dynamodb: Any
    source_url: str
    source_arn: str
    dlq_url: str
    notes_url: str
    calls: list[str] = field(default_factory=list)
    """Operation names of every AWS call the HANDLER made (its own clients only)."""
    in_flight: list[str] = field(default_factory=list)

    def table(self, env_name: str) -> list[dict[str, Any]]:
        return scan(self.dynamodb, self.spec.environment[env_name])

    def send(self, body: str, **kwargs: Any) -> None:
        self.sqs.send_message(QueueUrl=self.source_url, MessageBody=body, **kwargs)

    def invoke(self) -> tuple[dict[str, Any] | None, list[str]]:
        """One Lambda invocation: (partial batch response or None after a crash, its calls)."""
        answer = self.sqs.receive_message(
            QueueUrl=self.source_url,
            MaxNumberOfMessages=self.spec.batch_size,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = answer.get("Messages", [])
        if not messages:
            return {"batchItemFailures": []}, []
        self.calls.clear()
        event = {"Records": [_lambda_record(m, self.source_arn) for m in messages]}
        try:
            response = self.handler(event, FakeContext())
        except Crash:
            # Nothing is acknowledged: the batch comes back after the visibility timeout.
            self.in_flight.extend(m["ReceiptHandle"] for m in messages)
            return None, list(self.calls)
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        for m in messages:
            if m["MessageId"] in failed:
                self.in_flight.append(m["ReceiptHandle"])
            else:
                self.sqs.delete_message(QueueUrl=self.source_url, ReceiptHandle=m["ReceiptHandle"])
        return response, list(self.calls)

    def visibility_timeout_passes(self) -> None:
        """Unacknowledged messages become visible again (as after the visibility timeout)."""
        for handle in self.in_flight:
            self.sqs.change_message_visibility(
                QueueUrl=self.source_url, ReceiptHandle=handle, VisibilityTimeout=0
            )
        self.in_flight.clear()

    def drain(self, rounds: int = 20) -> None:
        for _ in range(rounds):
            response, calls = self.invoke()
            if response is not None and not calls and not self.in_flight:
                return  # an empty receive: nothing left
            self.visibility_timeout_passes()
        raise AssertionError(f"source queue not drained after {rounds} invocations")

    def notifications(self) -> list[dict[str, Any]]:
        return [json.loads(m["Body"]) for m in _drain(self.sqs, self.notes_url)]

    def dead_letters(self) -> list[dict[str, Any]]:
        return _drain(self.sqs, self.dlq_url, attributes=True)


def _queue_attributes(queue: RecordedResource) -> dict[str, str]:
    inputs = queue.inputs
    attributes = {
        "MessageRetentionPeriod": str(int(inputs["messageRetentionSeconds"])),
        "VisibilityTimeout": str(int(inputs["visibilityTimeoutSeconds"])),
    }
    if inputs.get("fifoQueue"):
        attributes["FifoQueue"] = "true"
        attributes["ContentBasedDeduplication"] = str(
            bool(inputs.get("contentBasedDeduplication"))
        ).lower()
        for prop, attr in (
            ("deduplicationScope", "DeduplicationScope"),
            ("fifoThroughputLimit", "FifoThroughputLimit"),
        ):
            if prop in inputs:
                attributes[attr] = inputs[prop]
    return attributes


def deploy(spec: StackConsumer, monkeypatch: pytest.MonkeyPatch) -> Deployed:
    """Create the consumer's resources in moto (inside mock_aws) and point its env at them."""
    region = spec.source.outputs["arn"].split(":")[3]
    session = boto3.session.Session(region_name=region)
    sqs, sns, dynamodb = (session.client(s) for s in ("sqs", "sns", "dynamodb"))
    moto_value: dict[str, str] = {}  # stack name/ARN/URL -> moto's
    for r in spec.resources:
        if r.type == TABLE:
            keys = [("HASH", r.inputs["hashKey"])]
            if r.inputs.get("rangeKey"):
                keys.append(("RANGE", r.inputs["rangeKey"]))
            dynamodb.create_table(
                TableName=r.inputs["name"],
                KeySchema=[{"AttributeName": name, "KeyType": kind} for kind, name in keys],
                AttributeDefinitions=[
                    {"AttributeName": a["name"], "AttributeType": a["type"]}
                    for a in r.inputs["attributes"]
                ],
                BillingMode=r.inputs["billingMode"],
            )
            moto_value[r.outputs["name"]] = r.inputs["name"]
        elif r.type == TOPIC:
            moto_value[r.outputs["arn"]] = sns.create_topic(Name=r.inputs["name"])["TopicArn"]
        elif r.type == QUEUE and r.urn != spec.dlq.urn:
            raise AssertionError(f"unexpected queue in the environment: {r.inputs['name']}")
    dlq_url = sqs.create_queue(
        QueueName=spec.dlq.inputs["name"], Attributes=_queue_attributes(spec.dlq)
    )["QueueUrl"]
    moto_value[spec.dlq.outputs["url"]] = dlq_url
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = json.loads(spec.source.inputs["redrivePolicy"])
    source_url = sqs.create_queue(
        QueueName=spec.source.inputs["name"],
        Attributes={
            **_queue_attributes(spec.source),
            "RedrivePolicy": json.dumps({**redrive, "deadLetterTargetArn": dlq_arn}),
        },
    )["QueueUrl"]
    source_arn = sqs.get_queue_attributes(QueueUrl=source_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    # Every notification lands in a queue the test reads (raw: the published message itself).
    notes_url = sqs.create_queue(QueueName="captured-notifications")["QueueUrl"]
    notes_arn = sqs.get_queue_attributes(QueueUrl=notes_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    topic_arn = moto_value[spec.environment[env.NOTIFICATION_TOPIC_ARN]]
    sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=notes_arn,
        Attributes={"RawMessageDelivery": "true"},
    )

    for name, value in spec.environment.items():
        mapped = moto_value.get(value, value)
        # A name/ARN/URL of a stack resource the test did not create would be a silent gap.
        assert mapped in moto_value.values() or not value.startswith(("arn:", "https://")), name
        monkeypatch.setenv(name, mapped)
    reset_clients()
    deployed = Deployed(
        spec=StackConsumer(
            handler=spec.handler,
            environment={k: moto_value.get(v, v) for k, v in spec.environment.items()},
            batch_size=spec.batch_size,
            source=spec.source,
            dlq=spec.dlq,
            resources=spec.resources,
        ),
        handler=_resolve_handler(spec.handler),
        sqs=sqs,
        dynamodb=dynamodb,
        source_url=source_url,
        source_arn=source_arn,
        dlq_url=dlq_url,
        notes_url=notes_url,
    )
    # The handler's own clients (built from this environment) are the ones counted.
    for client in vars(clients_from_env()).values():
        client.meta.events.register(
            "before-call.*.*", lambda model, **_: deployed.calls.append(model.name)
        )
    return deployed


def _resolve_handler(handler: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    module, _, attribute = handler.rpartition(".")
    fn: Callable[[dict[str, Any], Any], dict[str, Any]] = getattr(
        importlib.import_module(module), attribute
    )
    return fn


def crash_once_before(deployed: Deployed, operation: str) -> None:
    """Kill the handler's process the first time it is about to call ``operation``."""
    fired: list[bool] = []

    def hook(model: Any, **_: Any) -> None:
        if model.name == operation and not fired:
            fired.append(True)
            raise Crash(f"process died before {operation}")

    for client in vars(clients_from_env()).values():
        client.meta.events.register("before-call.*.*", hook)


def _deployed_consumer(
    dev_stack: ProgramRun, function_name_output: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployed]:
    spec = consumer_from_stack(dev_stack, function_name_output)
    with mock_aws():
        yield deploy(spec, monkeypatch)
    reset_clients()


@pytest.fixture
def orders(
    dev_stack: ProgramRun, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployed]:
    yield from _deployed_consumer(dev_stack, "orders_function_name", monkeypatch)


@pytest.fixture
def charges(
    dev_stack: ProgramRun, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployed]:
    yield from _deployed_consumer(dev_stack, "monthly_charge_consumer_function_name", monkeypatch)


def order(event_id: str, order_id: str | None = None) -> str:
    return json.dumps(
        {"event_id": event_id, "order": {"order_id": order_id or f"o-{event_id}", "qty": 1}}
    )


# --- the orders consumer --------------------------------------------------------------------


def test_the_stack_wires_the_orders_handler_to_its_tables_topic_and_dlq(
    dev_stack: ProgramRun,
) -> None:
    spec = consumer_from_stack(dev_stack, "orders_function_name")
    assert spec.handler == "handlers.orders.handler"
    assert _resolve_handler(spec.handler) is handlers.orders.handler
    by_name = {r.inputs["name"]: r for r in spec.resources}
    state = by_name[spec.environment[env.STATE_TABLE]]
    business = by_name[spec.environment[env.BUSINESS_TABLE]]
    assert state.inputs["hashKey"] == env.EVENT_ID_KEY
    assert business.inputs["hashKey"] == handlers.orders.ORDER_KEY  # the row is the event's
    assert spec.environment[env.DLQ_URL] == spec.dlq.outputs["url"]
    assert spec.environment[env.SOURCE_QUEUE_FIFO] == "false"
    assert "fifoQueue" not in spec.source.inputs


def _published(deployed: Deployed) -> dict[str, str | None]:
    """{event id: the claim's status as the runtime reads it} (receipts from the state table:
    a pending claim its receipt lists is sent, ``claims.published_status``)."""
    from idempotent_messaging.runtime.claims import is_receipt, published_status

    receipts = {
        (i.get("pk") or i["event_id"])["S"]: frozenset(i[env.RECEIPT_PUBLISHED]["SS"])
        for i in deployed.table(env.STATE_TABLE)
        if is_receipt(i)
    }
    return {
        c[env.ITEM_CLAIM_EVENT_ID]["S"]: published_status(c, receipts)
        for c in deployed.table(env.BUSINESS_TABLE)
    }


def _only_receipts(deployed: Deployed) -> bool:
    from idempotent_messaging.runtime.claims import is_receipt

    return all(is_receipt(i) for i in deployed.table(env.STATE_TABLE))


def test_ten_fresh_orders_cost_three_calls_and_their_duplicates_at_most_three(
    orders: Deployed,
) -> None:
    for i in range(10):
        orders.send(order(f"e{i}"))
    response, calls = orders.invoke()
    assert response == {"batchItemFailures": []}
    assert len(calls) <= 3, calls
    # The producer re-sends all ten (new messageIds): nothing new is written or published.
    for i in range(10):
        orders.send(order(f"e{i}"))
    response, calls = orders.invoke()
    assert response == {"batchItemFailures": []}
    # The refused INSERTs, the rows' read, their receipt's read (issue 26).
    assert len(calls) <= 3, calls
    rows = orders.table(env.BUSINESS_TABLE)
    assert sorted(r["order_id"]["S"] for r in rows) == sorted(f"o-e{i}" for i in range(10))
    notes = orders.notifications()
    assert Counter(n["event_id"] for n in notes) == {f"e{i}": 1 for i in range(10)}
    assert all(n["order_id"] == f"o-{n['event_id']}" for n in notes)
    # The orders consumer keeps each claim in its order row (SingleItemEffect).
    assert _published(orders) == {f"e{i}": env.STATUS_SENT for i in range(10)}
    assert _only_receipts(orders)  # the state table holds the batch's receipt, no claim
    assert orders.dead_letters() == []


def test_a_crash_after_the_commit_is_completed_by_redelivery_without_a_second_row(
    orders: Deployed,
) -> None:
    for i in range(3):
        orders.send(order(f"c{i}"))
    crash_once_before(orders, "PublishBatch")
    response, calls = orders.invoke()
    assert response is None and calls == ["BatchExecuteStatement", "PublishBatch"]
    claims = orders.table(env.BUSINESS_TABLE)
    assert {c[env.ITEM_CLAIM_STATUS]["S"] for c in claims} == {env.STATUS_PENDING}
    assert orders.notifications() == []
    orders.visibility_timeout_passes()
    response, calls = orders.invoke()
    assert response == {"batchItemFailures": []}
    assert "PublishBatch" in calls
    assert len(orders.table(env.BUSINESS_TABLE)) == 3
    assert sorted(n["event_id"] for n in orders.notifications()) == ["c0", "c1", "c2"]
    assert set(_published(orders).values()) == {env.STATUS_SENT}
    assert orders.dead_letters() == []


def test_poison_messages_land_in_the_stacks_dlq_with_reasons_while_neighbours_succeed(
    orders: Deployed,
) -> None:
    orders.send(order("ok-1"))
    orders.send("{not json")
    orders.send(json.dumps({"order": {"order_id": "no-event"}}))
    orders.send(json.dumps({"event_id": "no-order-id", "order": {"qty": 1}}))
    orders.send(order("ok-2"))
    orders.send(order("ok-1", order_id="o-other"))  # the same event id, another order in its body
    orders.drain()
    rows = orders.table(env.BUSINESS_TABLE)
    assert sorted(r["order_id"]["S"] for r in rows) == ["o-ok-1", "o-ok-2"]
    assert sorted(n["event_id"] for n in orders.notifications()) == ["ok-1", "ok-2"]
    dead = orders.dead_letters()
    # Three poison messages, and the re-sent ok-1 with another order: a conflicting duplicate
    # (same event id, other content: never a silent duplicate), its first effect untouched.
    assert len(dead) == 4
    kinds = sorted(m["MessageAttributes"][ATTR_FAILURE_KIND]["StringValue"] for m in dead)
    assert kinds.count("conflicting_duplicate") == 1, kinds
    for message in dead:
        attributes = message["MessageAttributes"]
        assert attributes[ATTR_FAILURE_CLASS]["StringValue"] == "permanent"
        assert attributes[ATTR_FAILURE_REASON]["StringValue"]
    # Quarantined at their first receive: SQS burnt no retries on them.
    assert {m["MessageAttributes"][ATTR_RECEIVE_COUNT]["StringValue"] for m in dead} == {"1"}
    claims = {c[env.ITEM_CLAIM_EVENT_ID]["S"] for c in orders.table(env.BUSINESS_TABLE)}
    assert claims == {"ok-1", "ok-2"}  # the re-sent ok-1 claimed nothing: a duplicate
    assert _only_receipts(orders)


# --- the monthly charge consumer (FIFO, tenant claims, ledger) -------------------------------


def charge(tenant: str, employee: str, amount: int = 1000) -> Any:
    return charge_message(BillableItem(tenant, employee, amount, "JPY"), MONTH)


def send_charge(charges: Deployed, tenant: str, employee: str, dedup: str | None = None) -> None:
    message = charge(tenant, employee)
    charges.send(
        message.body,
        MessageGroupId=message.group_id,
        MessageDeduplicationId=dedup or message.deduplication_id,
    )


def test_the_stack_wires_the_charge_handler_to_a_high_throughput_fifo_queue(
    dev_stack: ProgramRun,
) -> None:
    spec = consumer_from_stack(dev_stack, "monthly_charge_consumer_function_name")
    assert spec.handler == "handlers.charges.handler"
    assert _resolve_handler(spec.handler) is handlers.charges.handler
    assert spec.environment[env.STATE_KEY_LAYOUT] == env.LAYOUT_TENANT
    assert spec.source.inputs["fifoQueue"] is True and spec.dlq.inputs["fifoQueue"] is True
    assert spec.source.inputs["deduplicationScope"] == "messageGroup"
    assert spec.source.inputs["fifoThroughputLimit"] == "perMessageGroupId"


def test_charges_from_the_stack_are_written_once_per_employee_and_month_despite_a_crash(
    charges: Deployed,
) -> None:
    employees = [("t1", f"e{i}") for i in range(6)] + [("t2", f"e{i}") for i in range(4)]
    for tenant, employee in employees:
        send_charge(charges, tenant, employee)
    for tenant, employee in employees[:3]:  # re-sent beyond FIFO's dedup (new dedup id)
        send_charge(charges, tenant, employee, dedup=f"resend-{tenant}-{employee}")
    crash_once_before(charges, "PublishBatch")
    response, calls = charges.invoke()
    assert response is None and calls == [
        "TransactWriteItems",
        "PublishBatch",
    ]  # FIFO: one transaction
    charges.visibility_timeout_passes()
    charges.drain()
    ledger = Counter(
        (row["tenant_id"]["S"], row["ledger_key"]["S"]) for row in charges.table(env.BUSINESS_TABLE)
    )
    assert ledger == {(t, f"{e}#{MONTH}"): 1 for t, e in employees}
    notified = {n["idempotency_key"] for n in charges.notifications()}
    assert notified == {f"{t}:{e}:{MONTH}" for t, e in employees}
    # Each charge's claim lives in its ledger row (SingleItemEffect over the ledger key).
    claims = charges.table(env.BUSINESS_TABLE)
    assert {c[env.ITEM_CLAIM_EVENT_ID]["S"] for c in claims} == {
        f"{t}:{e}:{MONTH}" for t, e in employees
    }
    assert set(_published(charges).values()) == {env.STATUS_SENT}
    assert _only_receipts(charges)
    assert charges.dead_letters() == []


def test_ten_fresh_charges_of_one_group_cost_one_transaction_ordered_publishes_one_status(
    charges: Deployed,
) -> None:
    """One transaction and one receipt (PutItem) for the batch; notifications of ONE message
    group go one PublishBatch call each: PublishBatch reports per entry, so a later entry of
    the group could succeed after an earlier one failed and reach subscribers first."""
    for i in range(10):
        send_charge(charges, "t1", f"e{i}")
    response, calls = charges.invoke()
    assert response == {"batchItemFailures": []}
    assert calls == ["TransactWriteItems"] + ["PublishBatch"] * 10 + ["PutItem"]
    assert len(charges.table(env.BUSINESS_TABLE)) == 10


def test_ten_fresh_charges_of_ten_groups_cost_three_calls(charges: Deployed) -> None:
    for i in range(10):
        send_charge(charges, f"t{i}", f"e{i}")
    response, calls = charges.invoke()
    assert response == {"batchItemFailures": []}
    assert len(calls) <= 3, calls
    assert len(charges.table(env.BUSINESS_TABLE)) == 10
