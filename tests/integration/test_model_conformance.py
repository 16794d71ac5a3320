"""Model traces replayed on the REAL consumer under moto: model and code cannot drift.

Each trace (tests/model/traces.py: one shortest run to every kind of step of a configuration,
completed fault-free, so every crash point of the graph is replayed) drives
``handlers.orders.ORDERS`` (the claim in the order row) or a separate-claim consumer whose
effect is a counter (a second application would show), through ``Consumer.process``, in one
thread per invocation. Each thread is parked at every point where the model lets another
party move (its remaining-time guard before each guarded call, its AWS calls, its return)
and goes on only when the trace says so, with the outcome the trace gives the call: moto
applies it, or the call is answered with a fault (refused; applied and then an error; one
statement, key or entry failed). SQS (the source queue), the event source mapping, SQS's own
redrive, DynamoDB's TTL deletion, the clock and the operator's redrive are driven by the
trace too; the DLQ, the tables and the topic are moto's.

Checked on every trace:

* each real call is the one the model makes next (operation and number of records), and
  each returned partial batch response fails exactly the records the model fails;
* at the end, the real tables, DLQ and topic hold what the model's final state holds
  (effects and their bodies, claim statuses, owed notifications stored, notifications per
  event, DLQ copies and their kinds);
* the invariants, read from the real resources alone: at most one effect per event, every
  content sent applied or in the DLQ, a notification per effect unless a DLQ copy says it
  is owed, every runtime DLQ copy with a kind and a reason, nothing acknowledged without its
  effect or a DLQ copy, FIFO notifications in group order.
"""

from __future__ import annotations

import copy
import functools
import json
import queue
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import boto3
import botocore
import pytest
from moto import mock_aws

from handlers import orders_by_order
from handlers.orders import ORDERS, order_notification
from idempotent_messaging.ops import dlq as ops_dlq
from idempotent_messaging.runtime import (
    Consumer,
    EventTimeFromBody,
    Runtime,
    Settings,
    WriteContext,
    env,
)
from idempotent_messaging.runtime.claims import is_receipt
from idempotent_messaging.runtime.clients import BOTOCORE_CONFIG
from tests.integration.test_runtime_world import _BOTOCORE, REGION, Crash, scan
from tests.model import configs
from tests.model.protocol import (
    FAILED,
    Config,
    Features,
    Model,
    State,
    Step,
    owing_kinds,
)
from tests.model.traces import OPERATION, Trace, counterexample_trace, select, sequential

pytestmark = pytest.mark.integration

STATE_TABLE = "processed_events"
ORDERS_TABLE = "order_records"
EFFECTS_TABLE = "effects"
ARTICLE_TABLE = "article_order_records"  # the source article's: keyed by order_id
TOPIC = "order-notifications"
DLQ = "orders-dlq"
DAY = 86_400
HANG_GUARD_S = 300.0
HOLD_S = 300
"""The visibility timeout of the replay's own receives: longer than any replay, so a message
received and not released stays out of the next receive (no timing to race)."""
"""How long the driver and an invocation's thread wait for each other: a hang guard, not a
budget. A step takes milliseconds (well under a second on a loaded 2-core machine); only a
thread that never parks again reaches it, and the replay then fails naming the invocation."""
FEATURES = Features.of_code()
AMOUNTS = (1200, 3400)  # body variant 0 and 1 of an event


def counter_writes(message: Any, ctx: WriteContext) -> list[dict[str, Any]]:
    """The separate-claim consumer's effect: a counter (+ the amounts applied), so a second
    application of an event shows as ``applications = 2``."""
    amount = str(message["order"]["amount"])
    return [
        {
            "Update": {
                "TableName": ctx.business_table,
                "Key": {"event_id": {"S": ctx.event_id}},
                "UpdateExpression": "ADD applications :one, amounts :amount",
                "ExpressionAttributeValues": {":one": {"N": "1"}, ":amount": {"NS": [amount]}},
            }
        }
    ]


# --- which traces ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    config: Config
    consumer: str
    """"orders" (handlers.orders.ORDERS, the claim in the row), "counter" (a separate claim,
    a counter ADD), "article" (handlers.orders_by_order: DomainKeyedCreate, the row keyed by
    order_id written after its claim)."""


CASES: dict[str, Case] = {
    c.config.name: c
    for c in (
        Case(configs.standard("small", "item", FEATURES), "orders"),
        Case(configs.duplicates("small", "item", FEATURES), "orders"),
        Case(configs.poison("small", "item", FEATURES), "orders"),
        Case(configs.fifo("small", "item", FEATURES), "orders"),
        Case(configs.duplicates("small", "separate", FEATURES), "counter"),
        Case(configs.fifo("small", "separate", FEATURES), "counter"),
        Case(configs.redrive("small", FEATURES), "counter"),
        Case(
            replace(
                configs.late_resend("small", FEATURES),
                name="late-resend/separate-claim/event-time-on",
                event_time=True,
            ),
            "counter",
        ),
        # DomainKeyedCreate (the source article's tables): a death, a time-out or a fault
        # before and after the claim and the row, a concurrent copy, the row completed or
        # verified on redelivery; two events for one business row.
        Case(configs.duplicates("small", "domain", FEATURES), "article"),
        Case(configs.business_conflict("small", FEATURES), "article"),
    )
}


def _group(case: Case) -> tuple[str, bool]:
    return case.consumer, case.config.fifo


@functools.cache
def traces_of(name: str) -> list[Trace]:
    """Every death and time-out trace of the case (each crash point of its graph), the clean
    run, one per other kind of step, and each fault (call, outcome) not already replayed by
    an earlier case of the same consumer and queue kind."""
    case = CASES[name]
    taken: set[tuple[Any, ...]] = set()
    for other in CASES.values():
        if other is case:
            break
        if _group(other) == _group(case):
            taken |= {t.signature for t in traces_of(other.config.name)}
    return [t for t in select(case.config) if t.signature[0] != "fault" or t.signature not in taken]


# --- the world ------------------------------------------------------------------------------


class _Http:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.headers: dict[str, str] = {}
        self.content = b""


def _error(code: str = "InternalServerError", status: int = 500) -> tuple[_Http, dict[str, Any]]:
    return _Http(status), {
        "Error": {"Code": code, "Message": "injected by the model trace"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }


def _ok(parsed: dict[str, Any]) -> tuple[_Http, dict[str, Any]]:
    parsed = dict(parsed)
    parsed["ResponseMetadata"] = {"HTTPStatusCode": 200}
    return _Http(200), parsed


class Drift(AssertionError):
    """The real code did something the model did not."""


class RealViolation(AssertionError):
    """An invariant does not hold on the real resources."""


def _holds(condition: object, message: str) -> None:
    if not condition:
        raise RealViolation(message)


def _same(real: object, model: object, what: str) -> None:
    if real != model:
        raise Drift(f"{what}: the real world holds {real}, the model {model}")


@dataclass
class SimMessage:
    mid: int
    real_id: str
    content: int
    body: str
    group: str | None
    sent_ms: int
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)


class Abandoned(BaseException):
    """Raised in an invocation's thread at its parking point when its replay is over (done or
    failed): the thread unwinds out of the consumer (``except Exception`` cannot swallow it)
    and ends, instead of running on into a later test."""


_THREADS: list[threading.Thread] = []
"""Every invocation thread this module started (the fixture below checks that each ended)."""


class Invocation:
    """One consumer invocation in its own thread, parked at every point the model names."""

    def __init__(self, replay: Replay, iid: int, records: list[dict[str, Any]]) -> None:
        self.replay = replay
        self.iid = iid
        self.records = records
        self.to_thread: queue.Queue[Any] = queue.Queue()
        self.to_driver: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.late = False
        self.params: dict[str, Any] = {}
        self.parked: tuple[str, Any] = ("starting", None)
        clients = replay.world.runtime_clients
        self.runtime = Runtime(replay.settings, clients["dynamodb"], clients["sns"], clients["sqs"])
        self.thread = threading.Thread(target=self._main, daemon=True, name=f"replay-i{iid}")

    # --- in the thread -------------------------------------------------------------------------
    def get_remaining_time_in_millis(self) -> int:
        if self.late:
            return 0
        command = self._park("guard", None)
        if command == "crash":
            raise Crash(f"i{self.iid} dies before a call")
        if command == "late":
            self.late = True
            return 0
        return 600_000

    def stash(self, params: dict[str, Any]) -> None:
        self.params = copy.deepcopy(params)

    def before_call(self, model: Any) -> Any:
        command = self._park("call", model.name)
        if command == "crash":
            raise Crash(f"i{self.iid} dies before {model.name}")
        name, outcome, idxs, expected = command
        return self.replay.answer(self, model.name, self.params, name, outcome, idxs, expected)

    def _park(self, kind: str, info: Any) -> Any:
        self.to_driver.put((kind, info))
        try:
            command = self.to_thread.get(timeout=HANG_GUARD_S)
        except queue.Empty:  # the driver is gone: end, never run on (see Abandoned)
            raise Abandoned(f"i{self.iid}: no command for {HANG_GUARD_S} s") from None
        if command == "abandon":
            raise Abandoned(f"i{self.iid}: its replay is over")
        return command

    def _main(self) -> None:
        event = {"Records": self.records}
        self.replay.world.by_thread[threading.get_ident()] = self
        try:
            response = self.replay.consumer.process(event, self, self.runtime)
        except Crash:
            self.to_driver.put(("dead", None))
            return
        except Abandoned:
            return
        except BaseException as exc:  # a failure of the harness or the code: the driver fails
            self.to_driver.put(("error", exc))
            return
        self.to_driver.put(("return", response))

    # --- from the driver -----------------------------------------------------------------------
    def start(self) -> None:
        _THREADS.append(self.thread)
        self.thread.start()
        self.wait()

    def wait(self) -> tuple[str, Any]:
        try:
            self.parked = self.to_driver.get(timeout=HANG_GUARD_S)
        except queue.Empty:
            raise Drift(f"i{self.iid} did not reach its next point in {HANG_GUARD_S} s") from None
        if self.parked[0] == "error":
            raise self.parked[1]
        return self.parked

    def tell(self, command: Any) -> tuple[str, Any]:
        self.to_thread.put(command)
        return self.wait()

    def join(self) -> None:
        """Wait for the thread's end (it returned, died, or was abandoned); fail if it lives."""
        self.thread.join(HANG_GUARD_S)
        if self.thread.is_alive():
            raise AssertionError(f"i{self.iid}'s thread did not end in {HANG_GUARD_S} s")

    def stop(self) -> None:
        """End the thread wherever it is parked (the replay is over)."""
        if self.thread.is_alive():
            self.to_thread.put("abandon")
        self.join()


ITEM_KEY = ORDERS.effect.key[0] if ORDERS.effect else "event_id"
TABLES = {
    STATE_TABLE: env.EVENT_ID_KEY,
    ORDERS_TABLE: ITEM_KEY,
    EFFECTS_TABLE: "event_id",
    ARTICLE_TABLE: orders_by_order.ORDER_KEY,
}


class World:
    """The moto resources every replay of this module runs on (created once per module: a
    world costs about as much as a short trace), emptied before each replay: the tables, the
    topic, a standard and a FIFO DLQ, and a queue subscribed to the topic. The consumer's
    clients park the calling invocation's thread (``by_thread``: the invocation each thread
    runs, whichever replay it belongs to)."""

    def __init__(self) -> None:
        # One botocore session (loaded service models cached): a client costs milliseconds.
        self.session = boto3.session.Session(botocore_session=_BOTOCORE, region_name=REGION)
        self.shadow = {name: self.client(name) for name in ("dynamodb", "sns", "sqs")}
        self.by_thread: dict[int, Invocation] = {}
        self.used: set[str] = set()  # the tables and queues to empty at the next reset
        self.left: dict[str, list[dict[str, Any]]] = {}  # their items, when known
        self.runtime_clients = {name: self.client(name) for name in ("dynamodb", "sns", "sqs")}
        for client in self.runtime_clients.values():
            client.meta.events.register("before-parameter-build.*.*", self._stash)
            client.meta.events.register_first("before-call.*.*", self._before_call)
        ddb, sns, sqs = self.shadow["dynamodb"], self.shadow["sns"], self.shadow["sqs"]
        for table, key in TABLES.items():
            ddb.create_table(
                TableName=table,
                KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
        self.topic_arn = sns.create_topic(Name=TOPIC)["TopicArn"]
        self.queues = {
            name: self._create_queue(name) for name in (DLQ, DLQ + ".fifo", "notifications")
        }
        self.notes_url = self.queues["notifications"]
        arn = sqs.get_queue_attributes(QueueUrl=self.notes_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        sns.subscribe(
            TopicArn=self.topic_arn,
            Protocol="sqs",
            Endpoint=arn,
            Attributes={"RawMessageDelivery": "true"},
        )

    def client(self, name: str) -> Any:
        return self.session.client(name, config=BOTOCORE_CONFIG)

    def dlq_url(self, fifo: bool) -> str:
        return self.queues[DLQ + (".fifo" if fifo else "")]

    def _create_queue(self, name: str) -> str:
        attributes = {"FifoQueue": "true"} if name.endswith(".fifo") else {}
        url: str = self.shadow["sqs"].create_queue(QueueName=name, Attributes=attributes)[
            "QueueUrl"
        ]
        return url

    def _stash(self, params: dict[str, Any], **_: Any) -> None:
        self.by_thread[threading.get_ident()].stash(params)

    def _before_call(self, model: Any, **_: Any) -> Any:
        return self.by_thread[threading.get_ident()].before_call(model)

    def reset(self, fifo: bool, business_table: str) -> None:
        """Empty the tables and queues the last replay used, as a fresh world has them: the
        items deleted, each queue deleted and created again under its name (its URL, ARN and
        the topic's subscription stay; no message, in flight or not, and no FIFO
        deduplication id remains). The next replay's are the ones to empty next time. A
        replay that ended with its final comparison left what it read there (``left``: the
        items of its tables, nothing writes after it); any other is read again."""
        ddb = self.shadow["dynamodb"]
        for table in self.used & set(TABLES):
            key = TABLES[table]
            items = self.left[table] if table in self.left else scan(ddb, table, (key,))
            for chunk in range(0, len(items), 25):
                left = ddb.batch_write_item(
                    RequestItems={
                        table: [
                            {"DeleteRequest": {"Key": {key: item[key]}}}
                            for item in items[chunk : chunk + 25]
                        ]
                    }
                )["UnprocessedItems"]
                assert not left, f"{table}: the reset left {left}"
        for name in self.used - set(TABLES):
            self.shadow["sqs"].delete_queue(QueueUrl=self.queues[name])
            assert self._create_queue(name) == self.queues[name], name
        self.used = {DLQ + (".fifo" if fifo else ""), "notifications", STATE_TABLE, business_table}
        self.left = {}
        self.by_thread.clear()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    """One moto world for the module's replays (each replay empties it first)."""
    with mock_aws():
        yield World()


@pytest.fixture(autouse=True)
def every_invocation_thread_ends() -> Iterator[None]:
    """No invocation thread outlives its test: each replay stops its threads (``Replay.close``);
    one still alive here fails the test loudly (it would run on, and print, into a later one)."""
    yield
    alive = [t.name for t in _THREADS if t.is_alive()]
    _THREADS.clear()
    assert not alive, f"invocation threads still running after the test: {alive}"


class Replay:
    """One trace on the module's world, emptied first."""

    def __init__(self, world: World, case: Case, trace: Trace) -> None:
        self.world = world
        self.case = case
        self.trace = trace
        self.config = trace.config
        self.model = Model(trace.config)
        self.fifo = trace.config.fifo
        self.t0 = int(time.time())
        self.clock = 0
        self.item = case.consumer == "orders"
        self.article = case.consumer == "article"
        self.business_table = (
            ORDERS_TABLE if self.item else ARTICLE_TABLE if self.article else EFFECTS_TABLE
        )
        world.reset(self.fifo, self.business_table)
        self.shadow = world.shadow
        self.topic_arn = world.topic_arn
        self.dlq_url = world.dlq_url(self.fifo)
        self.notes_url = world.notes_url
        self.item_key = ITEM_KEY
        ttl = trace.config.claim_ttl if trace.config.time else 90
        if "ttl-shorter-than-retention" in trace.config.mutations:  # pragma: no cover
            raise AssertionError("mutations are not replayed")
        self.settings = Settings(
            state_table=STATE_TABLE,
            business_table=self.business_table,
            topic_arn=self.topic_arn,
            dlq_url=self.dlq_url,
            remaining_time_guard_ms=1_000,
            source_fifo=self.fifo,
            claim_ttl_seconds=ttl * DAY,
            source_retention_seconds=trace.config.source_retention * DAY
            if trace.config.time
            else None,
            dlq_retention_seconds=trace.config.dlq_retention * DAY if trace.config.time else None,
            max_receive_count=trace.config.max_receive,
        )
        if self.item:
            self.consumer = ORDERS
        elif self.article:
            self.consumer = Consumer(
                writes=orders_by_order.order_writes,
                notification=order_notification,
                namespace="order",
                requires_business_table=True,
                effect=orders_by_order.ORDERS_BY_ORDER.effect,
                clock=lambda: self.t0 + self.clock * DAY,
                sleep=lambda _s: None,
                event_time=EventTimeFromBody("occurred_at") if trace.config.event_time else None,
            )
        else:
            self.consumer = Consumer(
                writes=counter_writes,
                notification=order_notification,
                namespace="order",
                requires_business_table=True,
                clock=lambda: self.t0 + self.clock * DAY,
                sleep=lambda _s: None,
                event_time=EventTimeFromBody("occurred_at") if trace.config.event_time else None,
            )
        self.queue: dict[int, SimMessage] = {}
        self.invs: dict[int, Invocation] = {}
        self.started: list[Invocation] = []  # every invocation, popped or not
        self.acknowledged: list[str] = []  # event ids of successful PublishBatch entries
        self.published: dict[str, str] = {}
        self.bare: dict[str, int] = {}  # DLQ message id of a bare copy -> its message
        self.gone: list[tuple[int, str, bool]] = []  # DLQ copies redriven or expired
        self.expired: list[tuple[int, str, bool]] = []  # ... of which expired (retention)

    # --- contents -------------------------------------------------------------------------------
    def event_name(self, event: int) -> str:
        return self.config.events[event]

    def body_of(self, content: int) -> str:
        event, body = self.config.contents[content][:2]
        if event < 0:
            return "not json"
        name = self.event_name(event)
        # The order id names the content's business row (DomainKeyedCreate): another body of
        # an event is another order; a content may name another event's row (a conflict).
        order = {"order_id": f"order-{self.model.row_of(content)}", "amount": AMOUNTS[body]}
        message: dict[str, Any] = {"event_id": name, "order": order}
        if self.config.event_time:  # the event happened at time 0 (protocol.Model._new_msg)
            message["occurred_at"] = self.t0
        return json.dumps(message)

    def content_of(self, body: str) -> int:
        for n in range(len(self.config.contents)):
            if self.body_of(n) == body:
                return n
        raise AssertionError(f"a body no content has: {body!r}")

    # --- the trace ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every invocation thread, wherever the replay ended (done, or failed at a
        step); a thread that does not end fails the replay."""
        for inv in self.started:
            inv.stop()

    def run(self) -> None:
        for c in self.model.initial().queue:
            self._enqueue(c.mid, c.content, c.group, c.sent_at, {})
        for k, step in enumerate(self.trace.steps):
            before, after = self.trace.states[k], self.trace.states[k + 1]
            try:
                getattr(self, "step_" + step[0].replace("-", "_"))(step, before, after)
            except Drift as exc:
                raise Drift(f"step {k + 1} ({self.model.describe(step)}): {exc}") from None
        self.compare(self.trace.states[-1])

    def _enqueue(
        self, mid: int, content: int, group: str | None, sent: int, attrs: dict[str, Any]
    ) -> None:
        self.queue[mid] = SimMessage(
            mid,
            f"m{mid}-{uuid.uuid4().hex[:8]}",
            content,
            self.body_of(content),
            group,
            (self.t0 + sent * DAY) * 1000,
            attrs,
        )

    def record(self, m: SimMessage, receive_count: int) -> dict[str, Any]:
        attributes = {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": str(m.sent_ms),
        }
        if m.group is not None:
            attributes["MessageGroupId"] = m.group
        source = "orders.fifo" if self.fifo else "orders"
        return {
            "messageId": m.real_id,
            "receiptHandle": "handle",
            "body": m.body,
            "attributes": attributes,
            "messageAttributes": m.attributes,
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": f"arn:aws:sqs:{REGION}:123456789012:{source}",
            "awsRegion": REGION,
        }

    def step_send(self, step: Step, before: State, after: State) -> None:
        _, content, mid = step
        m = next(m for m in after.queue if m.mid == mid)
        self._enqueue(mid, content, m.group, m.sent_at, {})

    def step_receive(self, step: Step, before: State, after: State) -> None:
        _, iid, batch = step
        records = [self.record(self.queue[mid], rc) for mid, _, rc in batch]
        inv = Invocation(self, iid, records)
        self.invs[iid] = inv
        self.started.append(inv)
        inv.start()
        self._expect_parked(inv, after)

    def _model_inv(self, state: State, iid: int) -> Any:
        return next((v for v in state.invs if v.iid == iid), None)

    def _expect_parked(self, inv: Invocation, state: State) -> None:
        """The real invocation waits where the model's does."""
        model_inv = self._model_inv(state, inv.iid)
        kind, info = inv.parked
        if model_inv is None:
            if kind not in ("return", "dead"):
                raise Drift(f"i{inv.iid}: the model is done, the code waits at {kind} {info}")
            return
        name = model_inv.call[0]
        unguarded = name in ("owe", "release")  # no remaining-time guard before these
        want = "return" if name == "return" else "call" if unguarded else "guard"
        if kind != want:
            raise Drift(f"i{inv.iid}: the model waits before {name}, the code at {kind} {info}")
        if want == "call" and info != OPERATION[name]:
            raise Drift(f"i{inv.iid}: the model's next call is {name}, the code's {info}")

    def step_call(self, step: Step, before: State, after: State) -> None:
        _, iid, name, _mids, outcome = step
        inv = self.invs[iid]
        model_inv = self._model_inv(before, iid)
        idxs = model_inv.call[1]
        if inv.parked[0] == "guard":
            kind, op = inv.tell("proceed")
            if kind != "call":
                raise Drift(f"i{iid}: after its guard the code went to {kind} {op}, not {name}")
        if inv.parked != ("call", OPERATION[name]):
            raise Drift(f"i{iid}: the model calls {name}, the code is at {inv.parked}")
        expected = len(idxs)
        if name == "receipt-read":  # one key per receipt, whatever the records naming it
            expected = len({model_inv.recs[i].found for i in idxs})
        if name == "row-read":  # one key per business row
            expected = len({self.model.row_of(model_inv.recs[i].content) for i in idxs})
        inv.tell((name, outcome, idxs, expected))
        self._expect_parked(inv, after)

    def step_timeout(self, step: Step, before: State, after: State) -> None:
        inv = self.invs[step[1]]
        if inv.parked[0] != "guard":
            raise Drift(f"i{inv.iid}: time-out at {inv.parked}, not at a guard")
        inv.tell("late")
        self._expect_parked(inv, after)

    def step_crash(self, step: Step, before: State, after: State) -> None:
        inv = self.invs.pop(step[1])
        if inv.parked[0] in ("guard", "call"):
            kind, _ = inv.tell("crash")
            if kind != "dead":
                raise Drift(f"i{inv.iid} did not die: {kind}")
        elif inv.parked[0] != "return":
            raise Drift(f"i{inv.iid}: crash at {inv.parked}")
        inv.join()

    def step_return(self, step: Step, before: State, after: State) -> None:
        inv = self.invs.pop(step[1])
        kind, response = inv.parked
        if kind != "return":
            raise Drift(f"i{inv.iid}: the model returns, the code is at {inv.parked}")
        inv.join()
        model_inv = self._model_inv(before, inv.iid)
        by_real = {r["messageId"]: r for r in inv.records}
        real_failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        mids = {self.queue[mid].real_id: mid for mid in self.queue}
        model_failed = {self.queue[r.mid].real_id for r in model_inv.recs if r.outcome == FAILED}
        if real_failed != model_failed:
            raise Drift(
                f"i{inv.iid} reports failed {sorted(mids[i] for i in real_failed)}, the model "
                f"{sorted(mids[i] for i in model_failed)}"
            )
        # What the mapping deletes, read once: nothing changes the world between its deletes.
        acknowledged = [self.queue.pop(mids[real_id]) for real_id in set(by_real) - real_failed]
        if acknowledged:
            effects, copies = self.effects(), self.dlq_copies()
            for m in acknowledged:
                self.check_acknowledged(m, effects, copies)

    def step_sqs_redrive(self, step: Step, before: State, after: State) -> None:
        m = self.queue.pop(step[1])
        entry: dict[str, Any] = {"QueueUrl": self.dlq_url, "MessageBody": m.body}
        if m.attributes:
            entry["MessageAttributes"] = {
                name: {"DataType": v["dataType"], "StringValue": v["stringValue"]}
                for name, v in m.attributes.items()
            }
        if self.fifo:
            entry["MessageGroupId"] = m.group or "g"
            entry["MessageDeduplicationId"] = uuid.uuid4().hex
        sent = self.shadow["sqs"].send_message(**entry)
        self.bare[sent["MessageId"]] = m.mid

    def step_tick(self, step: Step, before: State, after: State) -> None:
        self.clock += 1
        kept = {(c.source, c.kind) for c in after.dlq}
        gone = [c for c in before.dlq if (c.source, c.kind) not in kept]
        if gone:
            self._remove_dlq(
                lambda m: (self._source_mid(m), self._kind(m)) in {(c.source, c.kind) for c in gone}
            )

    def step_ttl_delete(self, step: Step, before: State, after: State) -> None:
        event = self.event_name(step[1])
        self.shadow["dynamodb"].delete_item(
            TableName=STATE_TABLE, Key={env.EVENT_ID_KEY: {"S": event}}
        )

    def step_ops_redrive(self, step: Step, before: State, after: State) -> None:
        _, cid, mid = step
        copy_, message = self._take_dlq(before, cid)
        # The operator's redrive as ops.dlq builds it (attributes, first-seen time), from the
        # copy's SentTimestamp as SQS would hold it (the trace drives SQS's clock).
        message.setdefault("Attributes", {})["SentTimestamp"] = str(
            (self.t0 + copy_.sent_at * DAY) * 1000
        )
        retention = self.config.source_retention * DAY if self.fifo else None
        entry = ops_dlq._send_entry(message, self.fifo, None, retention)
        self._enqueue(mid, copy_.content, copy_.group, self.clock, _attributes(entry))

    def step_native_move(self, step: Step, before: State, after: State) -> None:
        """StartMessageMoveTask (moto has none): a new message with the copy's attributes."""
        _, cid, mid = step
        copy_, message = self._take_dlq(before, cid)
        entry = {"MessageAttributes": message.get("MessageAttributes") or {}}
        self._enqueue(mid, copy_.content, copy_.group, self.clock, _attributes(entry))

    def step_receipt_ttl_delete(self, step: Step, before: State, after: State) -> None:
        """DynamoDB's TTL deletes an expired receipt: the one the model deletes, found by the
        events it lists (receipt ids are the model's own numbering)."""
        rid = step[1]
        events = sorted(self.event_name(e) for r, e, _ in before.receipts if r == rid)
        items = self.shadow["dynamodb"].scan(TableName=STATE_TABLE, ConsistentRead=True)["Items"]
        match = [
            i for i in items if is_receipt(i) and sorted(i[env.RECEIPT_PUBLISHED]["SS"]) == events
        ]
        if not match:
            raise Drift(f"no receipt listing {events}")
        self.shadow["dynamodb"].delete_item(
            TableName=STATE_TABLE, Key={env.EVENT_ID_KEY: match[0][env.EVENT_ID_KEY]}
        )

    def _take_dlq(self, before: State, cid: int) -> tuple[Any, dict[str, Any]]:
        """The DLQ message of the model's copy ``cid``, deleted from the DLQ."""
        copy_ = next(c for c in before.dlq if c.cid == cid)
        held = self._dlq_all()
        match = [
            m for m in held if (self._source_mid(m), self._kind(m)) == (copy_.source, copy_.kind)
        ]
        if not match:
            raise Drift(f"no DLQ message for copy c{cid}")
        message = match[0]
        self.gone.append(self._copy(message))
        self.shadow["sqs"].delete_message(
            QueueUrl=self.dlq_url, ReceiptHandle=message["ReceiptHandle"]
        )
        self._release([m for m in held if m is not message])
        return copy_, message

    # --- the DLQ ----------------------------------------------------------------------------
    def _dlq_all(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            got = (
                self.shadow["sqs"]
                .receive_message(
                    QueueUrl=self.dlq_url,
                    MaxNumberOfMessages=10,
                    MessageAttributeNames=["All"],
                    AttributeNames=["All"],
                    VisibilityTimeout=HOLD_S,
                    WaitTimeSeconds=0,
                )
                .get("Messages", [])
            )
            if not got:
                return out
            out += got

    def _release(self, messages: list[dict[str, Any]]) -> None:
        for m in messages:
            self.shadow["sqs"].change_message_visibility(
                QueueUrl=self.dlq_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
            )

    def _remove_dlq(self, gone: Callable[[dict[str, Any]], bool]) -> None:
        held = self._dlq_all()
        for m in held:
            if gone(m):
                self.gone.append(self._copy(m))
                self.expired.append(self._copy(m))
                self.shadow["sqs"].delete_message(
                    QueueUrl=self.dlq_url, ReceiptHandle=m["ReceiptHandle"]
                )
        self._release([m for m in held if not gone(m)])

    def _kind(self, message: dict[str, Any]) -> str:
        attrs = message.get("MessageAttributes") or {}
        if "failure_kind" not in attrs:
            return ""
        return str(attrs["failure_kind"]["StringValue"])

    def _source_mid(self, message: dict[str, Any]) -> int:
        attrs = message.get("MessageAttributes") or {}
        if "original_message_id" not in attrs:  # a bare copy, sent by the trace
            return self.bare[message["MessageId"]]
        real = str(attrs["original_message_id"]["StringValue"])
        return int(real.split("-")[0][1:])

    def _copy(self, message: dict[str, Any]) -> tuple[int, str, bool]:
        attrs = message.get("MessageAttributes") or {}
        reason = bool(attrs.get("failure_reason", {}).get("StringValue"))
        return self.content_of(message["Body"]), self._kind(message), reason

    # --- the invariants and the model's final state ---------------------------------------------
    def answer(
        self,
        inv: Invocation,
        operation: str,
        params: dict[str, Any],
        name: str,
        outcome: tuple[Any, ...],
        idxs: tuple[int, ...],
        expected: int,
    ) -> Any:
        """The model's outcome of one call, on moto."""
        self._check_arity(operation, params, name, idxs, expected)
        kind = outcome[0]
        target = outcome[1] if len(outcome) > 1 else None
        client = self._shadow_for(operation)
        method = getattr(client, botocore.xform_name(operation))
        if kind == "ok":
            if operation == "PublishBatch":
                self._remember_publish(inv, params, None)
            return None
        if kind in (
            "receipt-fail",
            "commit-fail",
            "read-fail",
            "publish-fail",
            "mark-fail",
            "dlq-fail",
            "owe-fail",
            "release-fail",
        ):
            return _error(
                "ServiceUnavailable" if operation == "SendMessageBatch" else "InternalServerError"
            )
        if kind in (
            "commit-ambiguous",
            "publish-ambiguous",
            "mark-ambiguous",
            "dlq-ambiguous",
            "receipt-ambiguous",
        ):
            try:
                answer = method(**params)
            except botocore.exceptions.ClientError:
                answer = None
            if operation == "PublishBatch" and answer is not None:
                self._remember_publish(inv, params, answer)
            return _error()
        assert isinstance(target, int)
        position = idxs.index(target)
        if kind == "stmt-transient":
            statements = params["Statements"]
            rest = [s for n, s in enumerate(statements) if n != position]
            answers = method(Statements=rest)["Responses"] if rest else []
            answers.insert(
                position, {"Error": {"Code": "InternalServerError", "Message": "injected"}}
            )
            return _ok({"Responses": answers})
        if kind == "read-unprocessed":
            table, request = next(iter(params["RequestItems"].items()))
            key = self._key_of(inv, target, name)
            rest = [k for k in request["Keys"] if k != key]
            responses: dict[str, Any] = {table: []}
            if rest:
                responses = method(RequestItems={table: {**request, "Keys": rest}})["Responses"]
            unprocessed = {table: {**request, "Keys": [key]}}
            return _ok({"Responses": responses, "UnprocessedKeys": unprocessed})
        if kind.startswith("entry-"):
            entries = params["PublishBatchRequestEntries"]
            wanted = f"r{target}"
            publish = [e for e in entries if e["Id"] != wanted or kind == "entry-ambiguous"]
            answer = method(TopicArn=params["TopicArn"], PublishBatchRequestEntries=publish)
            self._remember_publish(inv, {"PublishBatchRequestEntries": publish}, answer)
            successful = [s for s in answer.get("Successful", []) if s["Id"] != wanted]
            failed = []
            if kind != "entry-ambiguous":
                failed.append(
                    {
                        "Id": wanted,
                        "Code": "InvalidParameter" if kind == "entry-sender" else "InternalError",
                        "Message": "injected",
                        "SenderFault": kind == "entry-sender",
                    }
                )
            return _ok({"Successful": successful, "Failed": failed})
        if kind == "dlq-entry":
            wanted = f"q{target}"
            entries = [e for e in params["Entries"] if e["Id"] != wanted]
            answer = method(QueueUrl=params["QueueUrl"], Entries=entries) if entries else {}
            failed = [
                {"Id": wanted, "Code": "InternalError", "Message": "injected", "SenderFault": False}
            ]
            return _ok({"Successful": answer.get("Successful", []), "Failed": failed})
        raise AssertionError(f"unknown outcome {outcome}")  # pragma: no cover

    def _shadow_for(self, operation: str) -> Any:
        if operation in ("PublishBatch",):
            return self.shadow["sns"]
        if operation in ("SendMessageBatch",):
            return self.shadow["sqs"]
        return self.shadow["dynamodb"]

    def _key_of(self, inv: Invocation, i: int, name: str) -> dict[str, Any]:
        body = json.loads(inv.records[i]["body"])
        if name == "row-read":
            return {orders_by_order.ORDER_KEY: {"S": body["order"]["order_id"]}}
        return {(self.item_key if self.item else env.EVENT_ID_KEY): {"S": body["event_id"]}}

    def _check_arity(
        self,
        operation: str,
        params: dict[str, Any],
        name: str,
        idxs: tuple[int, ...],
        expected: int,
    ) -> None:
        count: int | None = None
        ids: set[str] | None = None
        if operation == "BatchExecuteStatement":
            count = len(params["Statements"])
        elif operation == "TransactWriteItems":
            count = len(params["TransactItems"]) // (1 if self.item else 2)
        elif operation == "BatchGetItem":
            count = len(next(iter(params["RequestItems"].values()))["Keys"])
        elif operation == "PutItem":  # the receipt: one entry per record it lists
            count = len(params["Item"][env.RECEIPT_PUBLISHED]["SS"])
        elif operation == "PublishBatch":
            ids = {e["Id"] for e in params["PublishBatchRequestEntries"]}
            if ids != {f"r{i}" for i in idxs}:
                raise Drift(f"{operation} publishes {sorted(ids)}, the model records {idxs}")
        elif operation == "SendMessageBatch":
            ids = {e["Id"] for e in params["Entries"]}
            if ids != {f"q{i}" for i in idxs}:
                raise Drift(f"{operation} quarantines {sorted(ids)}, the model records {idxs}")
        if count is not None and count != expected:
            raise Drift(f"{operation} serves {count} records, the model's {name} {expected}")

    def _remember_publish(
        self, inv: Invocation, params: dict[str, Any], answer: dict[str, Any] | None
    ) -> None:
        for entry in params.get("PublishBatchRequestEntries", []):
            self.published[entry["Id"] + f"@{inv.iid}"] = json.loads(entry["Message"])["event_id"]
        if answer is None:  # an ok call: every entry is acknowledged
            self.acknowledged += [
                json.loads(e["Message"])["event_id"]
                for e in params.get("PublishBatchRequestEntries", [])
            ]
        else:
            ok = {s["Id"] for s in answer.get("Successful", [])}
            self.acknowledged += [
                json.loads(e["Message"])["event_id"]
                for e in params["PublishBatchRequestEntries"]
                if e["Id"] in ok
            ]

    # --- reading the real world ---------------------------------------------------------------
    def rows(self) -> dict[str, dict[str, Any]]:
        table = self.business_table
        key = (
            self.item_key
            if self.item
            else orders_by_order.ORDER_KEY
            if self.article
            else "event_id"
        )
        items = self.shadow["dynamodb"].scan(TableName=table, ConsistentRead=True)["Items"]
        return {item[key]["S"]: item for item in items}

    def state_items(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.shadow["dynamodb"].scan(
            TableName=STATE_TABLE, ConsistentRead=True
        )["Items"]
        return items

    def claims(
        self,
        rows: dict[str, dict[str, Any]] | None = None,
        state: list[dict[str, Any]] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """The claims (``rows``/``state``: the business rows and state-table items, when
        already read)."""
        if self.item:
            return {
                e: {"status": r[env.ITEM_CLAIM_STATUS]["S"], "owed": env.ITEM_CLAIM_OWED in r}
                for e, r in (self.rows() if rows is None else rows).items()
                if env.ITEM_CLAIM_EVENT_ID in r
            }
        items = self.state_items() if state is None else state
        return {
            i[env.EVENT_ID_KEY]["S"]: {"status": i["status"]["S"], "owed": "owed_notification" in i}
            for i in items
            if not is_receipt(i)
        }

    def receipts(self, state: list[dict[str, Any]] | None = None) -> list[list[str]]:
        """The event ids each publication receipt lists (sorted)."""
        items = self.state_items() if state is None else state
        return sorted(sorted(i[env.RECEIPT_PUBLISHED]["SS"]) for i in items if is_receipt(i))

    def effects(self, rows: dict[str, dict[str, Any]] | None = None) -> dict[str, list[int]]:
        """Per event id, the body variants applied (one per application)."""
        out: dict[str, list[int]] = {}
        for event_id, row in (self.rows() if rows is None else rows).items():
            if self.article:  # keyed by order: the event is the one the row records
                applied = row[env.ROW_EVENT_ID]["S"]
                out.setdefault(applied, []).append(AMOUNTS.index(int(row["amount"]["N"])))
            elif self.item:
                out[event_id] = [AMOUNTS.index(int(row["amount"]["N"]))]
            else:
                n = int(row["applications"]["N"])
                amounts = sorted(AMOUNTS.index(int(a)) for a in row["amounts"]["NS"])
                out[event_id] = (amounts * n)[:n] if len(amounts) == 1 else amounts
        return out

    def notes(self) -> Counter[str]:
        """Every notification delivered, by event id: each received once (then invisible for
        the rest of the replay; the next replay's reset empties the queue)."""
        counts: Counter[str] = Counter()
        while True:
            got = (
                self.shadow["sqs"]
                .receive_message(
                    QueueUrl=self.notes_url,
                    MaxNumberOfMessages=10,
                    VisibilityTimeout=HOLD_S,
                    WaitTimeSeconds=0,
                )
                .get("Messages", [])
            )
            if not got:
                return counts
            for m in got:
                counts[json.loads(m["Body"])["event_id"]] += 1

    def dlq_copies(self, release: bool = True) -> list[tuple[int, str, bool]]:
        """(content, kind, has a reason) of every DLQ message ("" kind: a bare copy); made
        visible again unless ``release`` is false (the final read)."""
        held = self._dlq_all()
        assert len(held) < 10, "one receive must see the whole DLQ (moto: FIFO groups)"
        if release:
            self._release(held)
        return [self._copy(m) for m in held]

    def check_acknowledged(
        self,
        m: SimMessage,
        effects: dict[str, list[int]],
        copies: list[tuple[int, str, bool]],
    ) -> None:
        """no-silent-delete on the real world: what the mapping deletes has its effect (this
        content) or a DLQ copy (``effects()`` and ``dlq_copies()`` read when it is deleted)."""
        event, body = self.config.contents[m.content][:2]
        applied = event >= 0 and body in effects.get(self.event_name(event), [])
        copied = any(c == m.content for c, _, _ in copies)
        _holds(
            applied or copied,
            f"no-silent-delete on the real world: m{m.mid} ({self.model.content_name(m.content)})"
            " acknowledged without its effect or a DLQ copy",
        )

    def compare(self, final: State) -> None:
        rows, state = self.rows(), self.state_items()
        # What the next reset deletes (nothing writes after this read).
        self.world.left = {self.business_table: list(rows.values()), STATE_TABLE: state}
        effects, claims, notes = self.effects(rows), self.claims(rows, state), self.notes()
        copies = self.dlq_copies(release=False)
        names = self.config.events
        model_effects = {names[e]: list(b) for e, b in enumerate(final.effects) if b}
        model_claims = {
            names[e]: {"status": c.status, "owed": c.owed}
            for e, c in enumerate(final.claims)
            if c is not None
        }
        model_notes = {names[e]: n for e, n in enumerate(final.notes) if n}
        real_notes = {e: min(2, n) for e, n in notes.items()}
        model_copies = sorted((c.content, c.kind) for c in final.dlq)
        real_copies = sorted((c, k) for c, k, _ in copies)
        effects = {e: sorted(b) for e, b in effects.items()}
        model_effects = {e: sorted(b) for e, b in model_effects.items()}
        _same(effects, model_effects, "effects (body variants applied)")
        _same(claims, model_claims, "claims")
        _same(real_notes, model_notes, "notifications per event")
        _same(real_copies, model_copies, "DLQ copies (content, kind)")
        _same(sorted(self.queue), [m.mid for m in final.queue], "source queue")
        listed: dict[int, list[str]] = {}
        for receipt, event, _ in final.receipts:
            listed.setdefault(receipt, []).append(names[event])
        _same(self.receipts(state), sorted(sorted(v) for v in listed.values()), "receipts")
        # The invariants, on the real resources alone.
        for event_id, applied in effects.items():
            _holds(len(applied) <= 1, f"at-most-once: {event_id} applied {len(applied)} times")
        ever = copies + self.gone  # every DLQ copy made, redriven or expired since included
        dead = {c for c, _, _ in ever}
        for content, (event, body, *_) in enumerate(self.config.contents):
            if not final.sent >> content & 1 or content in dead:
                continue
            _holds(
                event >= 0 and body in effects.get(names[event], []),
                f"exactly-once: {self.model.content_name(content)} neither applied nor in the DLQ",
            )
        # A copy excuses a missing notification while it is in the DLQ (or expired there); a
        # redriven one's redelivery had to publish, or leave an owing copy again.
        owing = {
            names[self.config.contents[c].event]
            for c, k, _ in copies + self.expired
            if self.config.contents[c].event >= 0 and (k in owing_kinds(FEATURES) or k == "")
        }
        for event_id in effects:
            _holds(
                notes.get(event_id) or event_id in owing,
                f"notified: {event_id} applied, no notification, no DLQ copy says it is owed",
            )
        for _, kind, reason in ever:
            _holds(kind == "" or reason, f"dlq-explained: a {kind} copy without a reason")
        if self.fifo:
            dead_events = {
                names[self.config.contents[c].event]
                for c in dead
                if self.config.contents[c].event >= 0
            }
            for group in {s.group for s in self.config.sends if s.group}:
                order = list(
                    dict.fromkeys(
                        names[self.config.contents[s.content].event]
                        for s in self.config.sends
                        if s.group == group and self.config.contents[s.content].event >= 0
                    )
                )
                firsts = [
                    e
                    for e in dict.fromkeys(self.acknowledged)
                    if e in order and e not in dead_events
                ]
                _holds(
                    firsts == [e for e in order if e in firsts],
                    f"fifo-order: group {group} first notifications {firsts}, sent {order}",
                )


def _attributes(entry: dict[str, Any]) -> dict[str, dict[str, str]]:
    """A SendMessage entry's string attributes as a Lambda record carries them."""
    return {
        name: {"dataType": v["DataType"], "stringValue": v["StringValue"]}
        for name, v in (entry.get("MessageAttributes") or {}).items()
        if "StringValue" in v
    }


def replay(world: World, case: Case, trace: Trace) -> None:
    run = Replay(world, case, trace)
    try:
        run.run()
    finally:
        run.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_traces_replay_on_the_real_consumer(
    world: World,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    request: pytest.FixtureRequest,
) -> None:
    """Every trace of the case replays with the model's calls, responses, final state and
    invariants; the first that does not fails the test with the trace."""
    case = CASES[name]
    monkeypatch.setattr(ORDERS, "sleep", lambda _s: None)
    traces = traces_of(name)
    crash_points = sorted({t.signature[1:] for t in traces if t.signature[0] == "crash"})
    request.node.user_properties.append(
        (
            "model",
            f"[conformance] {name}: {len(traces)} traces replayed on the {case.consumer}"
            f" consumer, crash points {crash_points}",
        )
    )
    for trace in traces:
        replay_or_explain(world, case, trace)
    assert len(traces) >= 10


def replay_or_explain(world: World, case: Case, trace: Trace) -> None:
    """Replay; a failure keeps its kind (Drift, RealViolation) and names the trace."""
    try:
        replay(world, case, trace)
    except AssertionError as exc:
        raise type(exc)(f"{exc}\ntrace {trace.name}:\n{trace.describe()}") from None


# --- what the model must not be able to do: differ from the code ---------------------------


@pytest.mark.parametrize(
    ("name", "mutation"),
    [
        ("duplicates/item", "pending-as-sent"),
        ("duplicates/separate", "mark-before-publish"),
        ("fifo/item", "no-fifo-hold"),
        ("poison/item", "no-last-receive-quarantine"),
    ],
)
def test_a_model_that_differs_from_the_code_fails_its_replay(
    world: World,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    mutation: str,
) -> None:
    """The replay is not vacuous: the counterexample of a mutated model (a rule of the code
    broken in the model only) cannot be replayed on the real consumer."""
    monkeypatch.setattr(ORDERS, "sleep", lambda _s: None)
    case = CASES[name]
    mutated = replace(case.config, mutations=frozenset({mutation}))
    trace = counterexample_trace(mutated)
    with pytest.raises(Drift):
        replay(world, replace(case, config=mutated), trace)


def test_a_replay_that_fails_midway_leaves_no_invocation_thread_running(
    world: World, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay that stops at a Drift (here: a mutated model's counterexample, whose
    invocations are parked mid-batch) ends its threads before it raises. A thread left parked
    would time out later, inside the consumer, and run on (and print) into another test."""
    monkeypatch.setattr(ORDERS, "sleep", lambda _s: None)
    case = CASES["duplicates/item"]
    mutated = replace(case.config, mutations=frozenset({"pending-as-sent"}))
    trace = counterexample_trace(mutated)
    with pytest.raises(Drift):
        replay(world, replace(case, config=mutated), trace)
    running = [  # a live thread still knows its target: an invocation's _main
        t.name
        for t in threading.enumerate()
        if isinstance(getattr(getattr(t, "_target", None), "__self__", None), Invocation)
    ]
    assert not running


def test_a_late_resend_without_the_event_time_is_applied_again_as_documented(
    world: World,
    aws_env: dict[str, str],
) -> None:
    """The documented limit (no defect): a producer re-send later than claim TTL - source
    retention, when the consumer declares no event time, is a NEW message to the runtime;
    once its claim is deleted it applies the effect again, on the real code as in the model.
    ``EventTimeFromBody`` closes it (the event-time-on case above replays clean)."""
    config = configs.late_resend("small", FEATURES)
    trace = counterexample_trace(replace(config, name=f"{config.name}/event-time-off"))
    with pytest.raises(RealViolation, match="at-most-once"):
        replay(world, Case(trace.config, "counter"), trace)


# --- issue 36: the domain-keyed single-item effect (claim, then row) ------------------------------


def test_a_row_written_before_its_claim_is_known_to_be_this_copys_fails_its_replay(
    world: World,
    aws_env: dict[str, str],
) -> None:
    """The mutation that issue 36's protocol must refuse: a copy whose claim INSERT was
    refused writes its row before its claim is read (e1 re-sent with another order: a second
    row, a second effect of one event). The real consumer reads the claim first and
    quarantines the copy as a conflict, so the mutated model's counterexample cannot be
    replayed."""
    config = configs.different_body("small", "domain", replace(FEATURES, fingerprint=True))
    trace = counterexample_trace(replace(config, mutations=frozenset({"row-before-claim"})))
    assert any(s[0] == "call" and s[2] == "row-insert" for s in trace.steps), trace.describe()
    with pytest.raises(Drift):
        replay(world, Case(trace.config, "article"), trace)


# --- issue 37, item 1: redrive never defeats the dedup horizon ------------------------------------


def test_the_native_move_task_defeats_the_horizon_where_the_dlq_policy_allows_it(
    world: World,
    aws_env: dict[str, str],
) -> None:
    """Why the component's DLQ policy denies the native move: the model's counterexample with
    the move allowed (commit, a death before the publish on the last receive, SQS's bare copy,
    a native move, a death before the commit, bare again, the claim deleted, ``ops redrive``
    stamps the move's time) applies the counter ``ADD`` twice on the real consumer too."""
    config = configs.native_move("small", FEATURES)
    trace = counterexample_trace(
        replace(config, mutations=frozenset({"native-move-allowed"}), only=None)
    )
    assert any(s[0] == "native-move" for s in trace.steps), trace.describe()
    with pytest.raises(RealViolation, match="at-most-once"):
        replay(world, Case(trace.config, "counter"), trace)


def test_a_copy_refused_unread_behind_the_horizon_no_longer_replays(
    world: World,
    aws_env: dict[str, str],
) -> None:
    """The owed notification lost behind the horizon: the model of the old rule (a copy beyond
    the horizon refused before reading its claim) reaches a live pending claim whose redriven
    copy is quarantined; the real consumer reads the claim and publishes instead (Drift)."""
    config = replace(
        configs.redrive("small", FEATURES), mutations=frozenset({"horizon-refuses-unread"})
    )
    trace = counterexample_trace(config)
    with pytest.raises(Drift):
        replay(world, Case(trace.config, "counter"), trace)


# --- the content fingerprint: conflicting duplicates, and a defect the model found ---------------

_CONSUMER = {"item": "orders", "separate": "counter", "domain": "article"}
_FINGERPRINT = pytest.mark.skipif(
    not FEATURES.fingerprint, reason="the code has no content fingerprint (conflicting_duplicate)"
)


@_FINGERPRINT
@pytest.mark.parametrize("placement", ["item", "separate", "domain"])
def test_a_same_id_different_body_resend_goes_to_the_dlq_as_a_conflicting_duplicate(
    world: World,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    placement: str,
) -> None:
    """e1 is processed, then e1' (same id, another body) arrives: the model and the code
    quarantine it as ``conflicting_duplicate``; the first effect stands, nothing is dropped."""
    monkeypatch.setattr(ORDERS, "sleep", lambda _s: None)
    trace = sequential(configs.different_body("small", placement, FEATURES))
    assert any(s[0] == "call" and s[2] == "quarantine" for s in trace.steps), trace.describe()
    replay_or_explain(world, Case(trace.config, _CONSUMER[placement]), trace)
    final = trace.states[-1]
    assert [c.kind for c in final.dlq] == ["conflicting_duplicate"]


def _in_batch_conflict(placement: str, mutations: frozenset[str] = frozenset()) -> Config:
    config = configs.different_body("small", placement, replace(FEATURES, fingerprint=True))
    return replace(config, only=frozenset({"notified"}), mutations=mutations)


@_FINGERPRINT
@pytest.mark.parametrize("placement", ["item", "separate"])
def test_an_in_batch_conflict_with_a_pending_claim_keeps_its_notification(
    world: World,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    placement: str,
) -> None:
    """Regression test of the defect the model found (configs.DEFECT_IN_BATCH_CONFLICT): the
    defect's trace, from the model with the old in-batch rule (`early-in-batch-conflict`), no
    longer replays on the real consumer (the code now fails the later copy instead of
    quarantining it), and the model of the code as it is keeps `notified` on every trace."""
    monkeypatch.setattr(ORDERS, "sleep", lambda _s: None)
    defect = counterexample_trace(
        _in_batch_conflict(placement, frozenset({"early-in-batch-conflict"}))
    )
    assert any(s[0] == "call" and s[2] == "quarantine" for s in defect.steps), defect.describe()
    with pytest.raises(Drift):
        replay(world, Case(defect.config, _CONSUMER[placement]), defect)
    with pytest.raises(AssertionError, match="no counterexample"):
        counterexample_trace(_in_batch_conflict(placement))
