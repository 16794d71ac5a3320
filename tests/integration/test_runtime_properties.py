"""Property-based: for ANY batch of adversarial bodies and plug-in exceptions, through the
orders and the charge consumers, every record ends processed, quarantined alone or failed
alone; healthy neighbours are processed in the same invocation; on FIFO only the failing
record's own group is held back, and notifications of a group are acknowledged in order."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handlers.charges import CHARGES, charge_notification, charge_writes
from handlers.orders import order_notification, order_writes
from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.runtime import Consumer, EventIdFromBody, env
from tests.integration.reused_world import reused_world
from tests.integration.test_runtime_world import (
    TENANT_STATE_TABLE,
    Aws,
    FakeContext,
    create_world,
    record,
    sqs_event,
)

pytestmark = pytest.mark.integration

LEDGER = "charge_ledger"


class PluginBug(Exception):
    """A consumer's own exception type the runtime has never heard of."""


EXCEPTIONS = [PluginBug, ZeroDivisionError, RuntimeError, OverflowError, MemoryError]

# --- adversarial JSON text ---------------------------------------------------------------------
_NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=10**37, max_value=10**45),  # around DynamoDB's 38 digits
    st.builds(
        lambda m, e: f"{m}e{e}",
        st.integers(-(10**5), 10**5),
        st.integers(-400, 400),  # DynamoDB: 1E-130 .. 9.9E+125
    ),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "0.0", "-0", "1E-130", "9.9E+125"]),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
)
_TEXT = st.text(max_size=30).map(json.dumps)  # any Unicode, surrogates included
_LEAF = st.one_of(_NUMBERS.map(str), _TEXT, st.sampled_from(["true", "false", "null"]))


def _nest(depth: int, inner: str) -> str:
    return "[" * depth + inner + "]" * depth


_JSON = st.one_of(
    _LEAF,
    st.builds(_nest, st.integers(1, 40), _LEAF),
    st.builds(_nest, st.sampled_from([200, 990, 3000]), st.just("1")),
    st.lists(_LEAF, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
    st.dictionaries(st.text(max_size=8), _LEAF, max_size=3).map(
        lambda d: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in d.items()) + "}"
    ),
)


@dataclass(frozen=True)
class Spec:
    """One record of a generated batch."""

    kind: str  # good | adversarial | raw | raises | raises_in_notification
    group: str
    payload: str = ""
    exception: int = 0


_SPECS = st.one_of(
    st.builds(Spec, st.just("good"), st.sampled_from("abc")),
    st.builds(Spec, st.just("adversarial"), st.sampled_from("abc"), _JSON),
    st.builds(Spec, st.just("raw"), st.sampled_from("abc"), st.text(max_size=40)),
    st.builds(
        Spec,
        st.sampled_from(["raises", "raises_in_notification"]),
        st.sampled_from("abc"),
        st.just(""),
        st.integers(0, len(EXCEPTIONS) - 1),
    ),
)


# --- the two consumers under test --------------------------------------------------------------
def order_body_for(index: int, spec: Spec) -> str:
    event_id = f"ev{index}"
    if spec.kind == "raw":
        return spec.payload
    if spec.kind == "adversarial":
        return (
            f'{{"event_id": "{event_id}", "order": {{"order_id": "o{index}", '
            f'"payload": {spec.payload}}}}}'
        )
    return json.dumps({"event_id": event_id, "order": {"order_id": f"o{index}", "amount": 5}})


def charge_body_for(index: int, spec: Spec) -> str:
    key = f"t{spec.group}:e{index}:2026-06"
    if spec.kind == "raw":
        return spec.payload
    amount = spec.payload if spec.kind == "adversarial" else "1200"
    return (
        f'{{"event_id": "{key}", "idempotency_key": "{key}", "tenant_id": "t{spec.group}", '
        f'"employee_id": "e{index}", "month": "2026-06", "amount": {amount}, '
        f'"currency": "JPY"}}'
    )


def raising(writes: Any, notification: Any, specs: list[Spec], marker: str) -> tuple[Any, Any]:
    """Wrap the plug-ins so that records of kind 'raises' raise their exception."""

    def index_of(message: Any) -> int | None:
        if not isinstance(message, dict):
            return None
        value = message.get(marker)
        if marker == "order":
            value = value.get("order_id") if isinstance(value, dict) else None
        if isinstance(value, str) and value[1:].isdigit():
            return int(value[1:])
        return None

    def raise_for(message: Any, kind: str) -> None:
        i = index_of(message)
        if i is not None and i < len(specs) and specs[i].kind == kind:
            raise EXCEPTIONS[specs[i].exception]("injected")

    def wrapped_writes(message: Any, ctx: Any) -> Any:
        raise_for(message, "raises")
        return writes(message, ctx)

    def wrapped_notification(message: Any, event_id: str) -> Any:
        raise_for(message, "raises_in_notification")
        return notification(message, event_id)

    return wrapped_writes, wrapped_notification


def orders_consumer(specs: list[Spec]) -> Consumer:
    writes, notification = raising(order_writes, order_notification, specs, "order")
    return Consumer(writes=writes, notification=notification, namespace="order")


def charges_consumer(specs: list[Spec]) -> Consumer:
    writes, notification = raising(charge_writes, charge_notification, specs, "employee_id")
    return Consumer(
        writes=writes,
        notification=notification,
        event_id=EventIdFromBody("idempotency_key"),
        namespace=CHARGES.namespace,
        tenant=CHARGES.tenant,
    )


def _ledger_table(world: Aws) -> None:
    world.dynamodb.create_table(
        TableName=LEDGER,
        KeySchema=[
            {"AttributeName": denv.LEDGER_HASH_KEY, "KeyType": "HASH"},
            {"AttributeName": denv.LEDGER_RANGE_KEY, "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": denv.LEDGER_HASH_KEY, "AttributeType": "S"},
            {"AttributeName": denv.LEDGER_RANGE_KEY, "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


@contextmanager
def acknowledged(world: Aws) -> Iterator[list[str]]:
    """Event ids of notifications SNS acknowledged, in order, while open."""
    acked: list[str] = []
    sent: dict[str, str] = {}

    def remember(params: dict[str, Any], **_: Any) -> None:
        for entry in params.get("PublishBatchRequestEntries", []):
            message = json.loads(entry["Message"])
            sent[entry["Id"]] = message.get("event_id") or message.get("idempotency_key")

    def collect(parsed: dict[str, Any], **_: Any) -> None:
        acked.extend(sent[ok["Id"]] for ok in parsed.get("Successful", []))

    events = world.sns.meta.events
    events.register("before-parameter-build.sns.PublishBatch", remember)
    events.register("after-call.sns.PublishBatch", collect)
    try:
        yield acked
    finally:  # the world outlives the example
        events.unregister("before-parameter-build.sns.PublishBatch", remember)
        events.unregister("after-call.sns.PublishBatch", collect)


def create_both_worlds() -> Aws:
    """The world of both consumers: the orders tables, and the charges' ledger."""
    world = create_world()
    _ledger_table(world)
    return world


Outcome = tuple[set[int], dict[int, tuple[str, str]], int, list[str]]
"""Of one batch: failed record indexes, quarantined ones (kind, reason), rows written, and
the event ids notified, in order."""


def check_batch(world: Aws, which: str, specs: list[Spec], fifo: bool) -> Outcome:
    """Run the batch on `world` (empty) and assert every record's ending."""
    with acknowledged(world) as acked:
        if which == "orders":
            consumer = orders_consumer(specs)
            bodies = [order_body_for(i, s) for i, s in enumerate(specs)]
            overrides: dict[str, Any] = {}
            event_ids = [f"ev{i}" for i in range(len(specs))]
        else:
            consumer = charges_consumer(specs)
            bodies = [charge_body_for(i, s) for i, s in enumerate(specs)]
            overrides = {
                "key_layout": env.LAYOUT_TENANT,
                "state_table": TENANT_STATE_TABLE,
                "business_table": LEDGER,
            }
            event_ids = [f"t{s.group}:e{i}:2026-06" for i, s in enumerate(specs)]
        records = [
            record(body, group_id=s.group if fifo else None, fifo=fifo)
            for body, s in zip(bodies, specs, strict=True)
        ]
        response = consumer.process(
            sqs_event(*records), FakeContext(), world.runtime(source_fifo=fifo, **overrides)
        )
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        quarantined = {
            m["MessageAttributes"]["original_message_id"]["StringValue"]: m
            for m in world.dlq_messages()
        }
        table = "order_records" if which == "orders" else LEDGER
        rows = world.dynamodb.scan(TableName=table)["Items"]
        written = len(rows)

        held: set[str] = set()  # FIFO groups stopped by an earlier failure
        processed = 0
        for rec, spec, event_id in zip(records, specs, event_ids, strict=True):
            mid = rec["messageId"]
            # Exactly one ending per record.
            assert not (mid in failed and mid in quarantined), spec
            if fifo and spec.group in held:
                assert mid in failed, f"{spec} after a failure of its group must wait"
                continue
            if spec.kind == "good":
                assert mid not in failed and mid not in quarantined, spec
                processed += 1
            elif spec.kind in ("raises", "raises_in_notification"):
                assert mid in failed, spec  # unexpected: failed alone, never quarantined
                held.add(spec.group)
            else:  # adversarial or raw: processed, or quarantined alone with kind + reason
                if mid in quarantined:
                    attrs = quarantined[mid]["MessageAttributes"]
                    assert attrs["failure_kind"]["StringValue"], spec
                    assert attrs["failure_reason"]["StringValue"], spec
                    assert quarantined[mid]["Body"] == rec["body"]
                else:
                    assert mid not in failed, f"{spec} neither processed nor quarantined"
                    processed += 1
            if mid not in failed and mid not in quarantined:
                assert event_id in acked, f"{spec} processed but not notified"
        assert written == processed
        if fifo:  # acknowledgements follow record order within each group
            for group in "abc":
                order = [e for e, s in zip(event_ids, specs, strict=True) if s.group == group]
                seen = [e for e in acked if e in order]
                assert seen == sorted(seen, key=order.index)
        index = {rec["messageId"]: i for i, rec in enumerate(records)}
        return (
            {index[mid] for mid in failed},
            {
                index[mid]: (
                    m["MessageAttributes"]["failure_kind"]["StringValue"],
                    m["MessageAttributes"]["failure_reason"]["StringValue"],
                )
                for mid, m in quarantined.items()
            },
            written,
            list(acked),
        )


COMMON = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture
def world(aws_env: dict[str, str]) -> Iterator[Callable[[], Aws]]:
    """One world per test, emptied for each example (`reused_world`)."""
    with reused_world(create_both_worlds) as fresh:
        yield fresh


@COMMON
@given(specs=st.lists(_SPECS, min_size=1, max_size=6), fifo=st.booleans())
def test_orders_any_batch_ends_processed_quarantined_alone_or_failed_alone(
    world: Callable[[], Aws], specs: list[Spec], fifo: bool
) -> None:
    check_batch(world(), "orders", specs, fifo)


@COMMON
@given(specs=st.lists(_SPECS, min_size=1, max_size=6), fifo=st.booleans())
def test_charges_any_batch_ends_processed_quarantined_alone_or_failed_alone(
    world: Callable[[], Aws], specs: list[Spec], fifo: bool
) -> None:
    check_batch(world(), "charges", specs, fifo)


MIXED = [
    Spec("good", "a"),
    Spec("adversarial", "b", "NaN"),
    Spec("raw", "a", "not json"),
    Spec("raises", "c", "", 0),
    Spec("good", "c"),
    Spec("raises_in_notification", "b", "", 2),
    Spec("good", "b"),
]


@pytest.mark.parametrize(("which", "fifo"), [("orders", False), ("charges", True)])
def test_an_emptied_world_answers_a_batch_as_a_new_world_does(
    aws_env: dict[str, str], which: str, fifo: bool
) -> None:
    """The reuse the properties rely on: after a batch that wrote rows and claims, dead-
    lettered, notified and failed records, the emptied world gives the same batch the same
    outcome as a world made from scratch (and not the duplicate skips its leftovers would
    cause)."""
    with reused_world(create_both_worlds) as new:
        from_scratch = check_batch(new(), which, MIXED, fifo)
    with reused_world(create_both_worlds) as reused:
        first = check_batch(reused(), which, MIXED, fifo)
        again = check_batch(reused(), which, MIXED, fifo)
    assert all(first), "the batch leaves every kind of state behind"
    assert again == first == from_scratch
