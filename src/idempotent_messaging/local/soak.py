"""`make soak`: the reference stack under load, with real concurrency and a seeded fault schedule.

    python -m idempotent_messaging.local.soak [--seed N] [--events N] [--svg PATH] [--json PATH]

Through the public local API (``local_stack``) it deploys the reference dev stack on the
embedded emulator and drives its orders consumer with thousands of messages:

1. **load**: every event once, producer re-sends of some (same event id and body, new message
   id), poison (not JSON, no event id, no order id, a reserved field), sent by a producer
   thread while the mapping runs up to its maximumConcurrency invocations at once, each in an
   execution environment of its own (local.isolation). Failed records come back after the
   queue's visibility timeout on an accelerated clock (``visibility_scale``), so SQS's
   maxReceiveCount and the runtime's last-receive quarantine are reached, and copies of one
   event (re-sends, redeliveries) meet in concurrent invocations;
2. **conflicts**: re-sends of recorded event ids with other content, and more re-sends;
3. **redrive**: the faults removed, the DLQ redriven (``ops redrive``); poison and conflicts
   come back to it, everything else is processed;
4. **ops owed**: claims still owing a notification are republished (``ops owed --republish``).

Faults, seeded per event (the same seed gives the same messages and the same plan of faults
per event; with real concurrency the interleaving differs from run to run, and with it which
batch a planned fault hits): at botocore's HTTP stage (local.faults), on the calls the function
makes, deaths BEFORE and AFTER applied calls (the claim, the publish, the receipt, the DLQ copy),
throttles that botocore retries and throttles that outlast its retries (redelivery), a claim
statement failing until the last receive (quarantined, then redriven), per-entry failures
inside 200 answers (PublishBatch entries, BatchExecuteStatement statements, BatchGetItem
UnprocessedKeys), plus a background rate of throttles on every service the function calls.

Then ``soak_check.check`` verifies per event: one row, >= 1 notification, the first effect
unchanged, every poison and conflict in the DLQ with its reason, nothing lost. It prints the
throughput, the faults by kind and the seed (a failing seed replays: ``make soak SEED=...``),
and draws the run (invocations in flight, faults, DLQ and queue depth over time) as an SVG
(``local.soak_chart``). Exit 1 when any rule is violated.

``make test`` runs a bounded soak (tests/e2e/test_docs_literals.py); ``make soak`` the full size.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import random
import re
import signal
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from idempotent_messaging.local import moto_patches
from idempotent_messaging.local.deploy import PROJECT_DIR
from idempotent_messaging.local.faults import Fault, FaultInjector
from idempotent_messaging.local.invoke import handler_output_to
from idempotent_messaging.local.observe import Observer, queue_counts, scan_all
from idempotent_messaging.local.soak_chart import Sample, svg
from idempotent_messaging.local.soak_check import DeadLetter, EndState, Violation, check, summary
from idempotent_messaging.local.stack import LocalStack, local_stack
from idempotent_messaging.ops import dlq as ops_dlq
from idempotent_messaging.ops import owed as ops_owed
from idempotent_messaging.ops.outputs import emulator_state_dir
from idempotent_messaging.runtime import env as runtime_env

DEFAULT_SEED = 20260601
ORDER_FIELDS = ("order_id", "item", "quantity")
SEND_BATCH = 10  # SendMessageBatch entries
BACKGROUND_OPERATIONS = (
    "dynamodb:BatchExecuteStatement",
    "dynamodb:BatchGetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "sns:PublishBatch",
    "sqs:SendMessageBatch",
)
"""Every call the orders function makes (claims, redelivery reads, receipts, owed markings,
notifications, DLQ copies): each gets background throttles."""


@dataclass(frozen=True, kw_only=True)
class SoakConfig:
    """What a soak run does. Every default's reason is beside it."""

    seed: int = DEFAULT_SEED
    """Decides every message and every event's planned fault: a failing seed replays."""
    events: int = 2_000
    """Distinct order events: thousands, so a backlog of that size is held and drained."""
    resend_rate: float = 0.12
    """Share of events a producer re-sends (same id and body, new message id)."""
    conflict_rate: float = 0.03
    """Share of recorded events re-sent with the same id and other content (quarantined)."""
    poison_rate: float = 0.02
    """Poison messages per event sent (never processable: quarantined with a reason)."""
    fault_rate: float = 0.1
    """Share of events with a planned fault (a death, a throttle, a failed entry)."""
    background_throttle_rate: float = 0.02
    """Share of ALL the function's attempts answered with a throttle (botocore retries them)."""
    visibility_scale: float = 0.005
    """Visibility timeouts last this share of real time: dev's 190 s in ~1 s."""
    retry_sleep_scale: float = 0.02
    """botocore's retry backoff on the same accelerated clock (its 1 s throttle base: 20 ms)."""
    concurrency: int | None = None
    """A cap on concurrent invocations (None: the mapping's maximumConcurrency, 5 in dev)."""
    stack: str = "dev"
    consumer: str = "orders"
    project_dir: Path = PROJECT_DIR
    timeout_s: float = 900.0
    """A phase that has not settled by then fails the run (nothing hangs)."""
    sample_every_s: float = 0.2
    """How often the picture samples the run."""

    def __post_init__(self) -> None:
        if self.events < 1:
            raise ValueError(f"events={self.events}: must be >= 1")
        for name in ("resend_rate", "conflict_rate", "poison_rate", "fault_rate",
                     "background_throttle_rate"):  # fmt: skip
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"{name}={value}: must be between 0 and 1")
        for name in ("visibility_scale", "retry_sleep_scale"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"{name}={value}: must be > 0 and <= 1 (1: real time)")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"concurrency={self.concurrency}: must be >= 1")


# --- the plan: messages and faults, from the seed -------------------------------------------------

FAULT_KINDS: tuple[tuple[str, str, str], ...] = (
    # (kind, how, operation)
    ("death before the claim", "crash_before", "dynamodb:BatchExecuteStatement"),
    ("death after the claim", "crash_after", "dynamodb:BatchExecuteStatement"),
    ("death before the publish", "crash_before", "sns:PublishBatch"),
    ("death after the publish", "crash_after", "sns:PublishBatch"),
    ("death after the receipt", "crash_after", "dynamodb:PutItem"),
    ("death after a DLQ copy", "crash_after", "sqs:SendMessageBatch"),
    ("claim throttled, botocore retries", "throttle2", "dynamodb:BatchExecuteStatement"),
    ("claim throttled past botocore's retries", "throttle5", "dynamodb:BatchExecuteStatement"),
    ("publish throttled past botocore's retries", "throttle4", "sns:PublishBatch"),
    (
        "claim statement throttled until the last receive",
        "entry-exhaust:ProvisionedThroughputExceeded",
        "dynamodb:BatchExecuteStatement",
    ),
    ("publish entry failed (InternalError)", "entry:InternalError", "sns:PublishBatch"),
    ("publish entry failed (KMSThrottling)", "entry:KMSThrottling", "sns:PublishBatch"),
    (
        "claim statement failed (ProvisionedThroughputExceeded)",
        "entry:ProvisionedThroughputExceeded",
        "dynamodb:BatchExecuteStatement",
    ),
    (
        "claim statement failed (InternalServerError)",
        "entry:InternalServerError",
        "dynamodb:BatchExecuteStatement",
    ),
    ("redelivery read unprocessed (UnprocessedKeys)", "entry:-", "dynamodb:BatchGetItem"),
)
"""The planned faults, each a kind the checker's rules must survive. Deaths raise
``SimulatedCrash`` (the invocation fails, SQS redelivers the batch after its visibility
timeout); "after" means the service applied the call and the answer was lost."""


@dataclass(frozen=True)
class Message:
    kind: str  # event, resend, conflict, poison
    body: str
    event_id: str | None = None


@dataclass
class Plan:
    seed: int
    events: dict[str, dict[str, Any]]
    """Event id -> its order (the effect its row must hold)."""
    load: list[Message]
    """Phase 1, in send order."""
    conflict_candidates: list[str]
    """Events that get a conflicting re-send in phase 2 (those recorded by then)."""
    late_resends: list[str]
    faults: dict[str, str]
    """Event id -> the kind of its planned fault (FAULT_KINDS' first column)."""


def event_id(seed: int, number: int) -> str:
    return f"s{seed}-{number:05d}"


def order_body(event: str, order: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"event_id": event, "order": {**order, **extra}}, sort_keys=True)


def plan_run(config: SoakConfig) -> Plan:
    """Every message and planned fault of a run: a function of the config (the seed) alone."""
    rng = random.Random(config.seed)
    events = {
        event_id(config.seed, i): {
            "order_id": f"ord-{i:05d}",
            "item": rng.choice(("book", "pen", "lamp", "mug", "desk")),
            "quantity": rng.randint(1, 9),
        }
        for i in range(1, config.events + 1)
    }
    load = [Message("event", order_body(e, o), e) for e, o in events.items()]
    for e in sorted(events):
        if rng.random() < config.resend_rate:
            load.append(Message("resend", order_body(e, events[e]), e))
    for n in range(round(config.events * config.poison_rate) or 1):
        load.append(Message("poison", _poison(config.seed, n, rng)))
    rng.shuffle(load)
    kinds = [k for k, _, _ in FAULT_KINDS]
    ids = sorted(events)
    faults: dict[str, str] = {}
    # Each kind at least once (a bounded run tests every one), the rest by the fault rate.
    for kind, e in zip(kinds, rng.sample(ids, min(len(ids), len(kinds))), strict=False):
        faults[e] = kind
    for e in ids:
        if e not in faults and rng.random() < config.fault_rate:
            faults[e] = rng.choice(kinds)
    conflicts = [e for e in ids if rng.random() < config.conflict_rate] or ids[:1]
    late = [e for e in ids if rng.random() < config.resend_rate / 2]
    return Plan(config.seed, events, load, conflicts, late, faults)


def _poison(seed: int, n: int, rng: random.Random) -> str:
    nonce = f"p{seed}-{n:04d}"
    shapes = (
        f"not json {{ {nonce}",
        json.dumps({"order": {"order_id": nonce}}),  # no event id
        json.dumps({"event_id": nonce, "order": {"item": "pen"}}),  # no order id
        json.dumps({"event_id": nonce, "order": {"order_id": nonce, "recorded_at": 1}}),  # reserved
    )
    return shapes[rng.randrange(len(shapes))]


# --- the fault schedule: a handful of faults whose matchers read the plan ---------------------


class FaultSchedule:
    """Arms one fault per planned kind; a fault acts on a call that carries an event planned for
    its kind with budget left (then that budget shrinks), so thousands of per-event faults cost
    one pass over a handful of matchers per attempt."""

    def __init__(self, plan: Plan, config: SoakConfig, injector: FaultInjector) -> None:
        self.plan = plan
        self.injector = injector
        self.pattern = re.compile(rf"s{plan.seed}-\d{{5}}")
        self.budget: dict[tuple[str, str], int | None] = {}
        for e, kind in plan.faults.items():
            how = next(h for k, h, _ in FAULT_KINDS if k == kind)
            self.budget[(kind, e)] = None if how.startswith("entry-exhaust") else _times(how)
        self.taken = threading.local()
        self.rng = random.Random(config.seed ^ 0x5EED)
        self.faults: list[Fault] = []
        self.config = config

    def _events(self, params: dict[str, Any]) -> set[str]:
        return set(self.pattern.findall(json.dumps(params, default=str)))

    def _take(self, kind: str) -> Callable[[str, dict[str, Any]], bool]:
        def match(operation: str, params: dict[str, Any]) -> bool:
            for e in sorted(self._events(params)):
                key = (kind, e)
                if key not in self.budget:
                    continue
                left = self.budget[key]
                if left is None or left > 0:
                    if left is not None:
                        self.budget[key] = left - 1
                    self.taken.event = e
                    return True
            return False

        return match

    def _entry(self, entry: dict[str, Any]) -> bool:
        event: str = getattr(self.taken, "event", "")
        return bool(event) and event in json.dumps(entry, default=str)

    def arm(self) -> None:
        f = self.injector
        for kind, how, operation in FAULT_KINDS:
            common: dict[str, Any] = {
                "matcher": self._take(kind),
                "functions_only": True,
                "required": False,
                "label": kind,
                "times": None,
            }
            if how in ("crash_before", "crash_after"):
                self.faults.append(f.crash(operation, after=how == "crash_after", **common))
            elif how.startswith("throttle"):
                self.faults.append(f.throttle(operation, **common))
            else:
                code = how.split(":", 1)[1]
                self.faults.append(
                    f.fail_entries(
                        operation,
                        code="InternalError" if code == "-" else code,
                        entry=self._entry,
                        **common,
                    )
                )
        rng, rate = self.rng, self.config.background_throttle_rate

        def background(operation: str, params: dict[str, Any]) -> bool:
            return rng.random() < rate

        for operation in BACKGROUND_OPERATIONS:
            self.faults.append(
                f.throttle(
                    operation,
                    matcher=background,
                    functions_only=True,
                    required=False,
                    label=f"background throttle {operation}",
                )
            )

    def disarm(self) -> None:
        for fault in self.faults:
            self.injector.remove(fault)


def _times(how: str) -> int:
    if how.startswith("throttle"):
        return int(how.removeprefix("throttle"))
    if how.startswith("entry:"):
        return 2
    return 1


def _category(how: str, operation: str) -> str:
    if how == "crash_before":
        return "death before a call"
    if how == "crash_after":
        return "death after an applied call"
    if how.startswith("throttle"):
        return "throttle"
    return "unprocessed keys" if operation.endswith("BatchGetItem") else "failed entry in a 200"


CATEGORIES = {kind: _category(how, operation) for kind, how, operation in FAULT_KINDS}


def fault_category(label: str) -> str:
    """A fault's label -> the kind the report and the picture count it under."""
    return CATEGORIES.get(label, "throttle")  # the rest: background throttles


# --- the picture's samples ----------------------------------------------------------------------


class Sampler:
    def __init__(self, stack: LocalStack, queue_url: str, dlq_url: str, every_s: float) -> None:
        self.stack = stack
        self.queue_url = queue_url
        self.dlq_url = dlq_url
        self.every_s = every_s
        self.samples: list[Sample] = []
        self.faults: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)
        self.sqs = stack.client("sqs")

    def fired(self, fault: Fault, call: Any) -> None:
        with self.lock:
            self.faults[fault_category(fault.label)] += 1

    def sample(self) -> None:
        queue = queue_counts(self.sqs, self.queue_url)
        dlq = queue_counts(self.sqs, self.dlq_url)
        with self.lock:
            self.samples.append(
                Sample(
                    round(time.monotonic() - self.started, 3),
                    sum(self.stack.poller.running.values()),
                    dict(self.faults),
                    dlq["visible"] + dlq["in_flight"],
                    queue["visible"],
                    queue["in_flight"],
                )
            )

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.sample()
            except Exception:  # a sample lost to a busy emulator is a gap in the picture
                continue

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


# --- the run --------------------------------------------------------------------------------------


@dataclass
class SoakResult:
    config: dict[str, Any]
    sent: Counter[str]
    redriven: int
    republished: int
    invocations: int
    invocation_errors: int
    records_delivered: int
    peak_concurrency: int
    max_concurrency: int
    outcomes: dict[str, int]
    faults: Counter[str]
    faults_by_label: Counter[str]
    phases: dict[str, float]
    load_seconds: float
    violations: list[Violation]
    samples: list[Sample] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def messages(self) -> int:
        return sum(self.sent.values())

    def throughput(self) -> float:
        """Messages of the load phase per second, from the first send to a drained queue."""
        return self.sent_in_load / self.load_seconds if self.load_seconds else 0.0

    @property
    def sent_in_load(self) -> int:
        return self.sent["event"] + self.sent["resend"] + self.sent["poison"]

    def to_json(self) -> dict[str, Any]:
        # Not asdict(): it rebuilds a Counter from (key, value) pairs, counting the pairs.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in data.items():
            if isinstance(value, Counter):
                data[name] = dict(value)
        data["samples"] = [asdict(sample) for sample in self.samples]
        data["violations"] = [asdict(v) for v in self.violations]
        data["ok"] = self.ok
        data["throughput_messages_per_s"] = round(self.throughput(), 1)
        return data

    def title(self) -> str:
        verdict = "RESULT OK" if self.ok else f"{len(self.violations)} VIOLATIONS"
        return (
            f"soak seed {self.config['seed']}: {self.messages:,} messages, "
            f"{self.invocations:,} invocations, {sum(self.faults.values()):,} faults, {verdict}"
        )

    def picture(self) -> str:
        """The run as an SVG: invocations in flight, faults, queue depths over time."""
        return svg(self.samples, title=self.title(), max_concurrency=self.max_concurrency)

    def lines(self) -> list[str]:
        seed = self.config["seed"]
        out = [
            f"soak seed={seed}: {self.messages:,} messages sent "
            f"({self.sent['event']:,} events, {self.sent['resend']:,} re-sends, "
            f"{self.sent['conflict']:,} conflicts, {self.sent['poison']:,} poison) "
            f"+ {self.redriven:,} redriven from the DLQ",
            f"  invocations {self.invocations:,} ({self.invocation_errors:,} failed: deaths and "
            f"timeouts), records delivered {self.records_delivered:,}, concurrency reached "
            f"{self.peak_concurrency} of {self.max_concurrency}",
            f"  throughput: {self.sent_in_load:,} messages in {self.load_seconds:.1f} s = "
            f"{self.throughput():.0f} messages/s (load phase, sent to drained)",
            "  outcomes: " + ", ".join(f"{k} {v:,}" for k, v in sorted(self.outcomes.items()) if v),
            "  faults by kind: "
            + (", ".join(f"{k} {v:,}" for k, v in sorted(self.faults.items())) or "none"),
            f"  ops owed republished {self.republished}",
            "  phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.phases.items()),
            "  checker: "
            + ", ".join(f"{rule} {n}" for rule, n in summary(self.violations).items()),
        ]
        for violation in self.violations[:40]:
            out.append(f"    {violation}")
        if len(self.violations) > 40:
            out.append(f"    ... {len(self.violations) - 40} more")
        out.append(f"  replay: make soak SEED={seed} EVENTS={self.config['events']}")
        out.append(f"RESULT: {'OK' if self.ok else 'VIOLATED'}")
        return out


def _send(sqs: Any, url: str, messages: list[Message], sent: Counter[str]) -> None:
    for start in range(0, len(messages), SEND_BATCH):
        chunk = messages[start : start + SEND_BATCH]
        response = sqs.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "MessageBody": m.body} for i, m in enumerate(chunk)],
        )
        if response.get("Failed"):
            raise RuntimeError(f"send to {url} failed: {response['Failed']}")
        sent.update(m.kind for m in chunk)


def _drain_while(stack: LocalStack, busy: Callable[[], bool], timeout_s: float) -> None:
    """Drain until the producer is done and a drain finds nothing more to do."""
    deadline = time.monotonic() + timeout_s
    while True:
        stack.drain(timeout_s=max(1.0, deadline - time.monotonic()))
        if not busy():
            stack.drain(timeout_s=max(1.0, deadline - time.monotonic()))
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the load did not drain within {timeout_s:.0f} s")
        time.sleep(0.05)


_DESERIALIZE = TypeDeserializer()


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _DESERIALIZE.deserialize(v) for k, v in item.items()}


def run(
    config: SoakConfig,
    progress: Callable[[str], None] = lambda _: None,
    *,
    stack: LocalStack | None = None,
) -> SoakResult:
    """One soak run on a fresh deploy of ``config.stack`` (or on ``stack``, already running:
    the run reads only its own events back); raises only for a run that could not happen (the
    checker's verdict is in the result)."""
    if stack is not None:
        return _on(stack, config, progress)
    with local_stack(
        config.project_dir,
        config.stack,
        progress=progress,
        visibility_scale=config.visibility_scale,
    ) as own:
        return _on(own, config, progress)


def _on(stack: LocalStack, config: SoakConfig, progress: Callable[[str], None]) -> SoakResult:
    plan = plan_run(config)
    phases: dict[str, float] = {}
    sent: Counter[str] = Counter()
    ours = re.compile(rf"[sp]{config.seed}-\d")  # this run's event ids and poison nonces
    progress_before = stack.progress
    stack.progress = lambda _: None  # the run's own lines; not one per failed invocation
    scale_before = moto_patches.visibility_scale()
    release_before = stack.poller.release_failed
    concurrency_before = stack.poller.concurrency
    moto_patches.set_visibility_scale(config.visibility_scale)
    stack.poller.release_failed = False  # failed records wait out their visibility timeout
    try:
        consumer = stack.consumer(config.consumer)
        environment = consumer.function.environment
        topic = environment[runtime_env.NOTIFICATION_TOPIC_ARN]
        table = environment[runtime_env.BUSINESS_TABLE]
        state_table = environment[runtime_env.STATE_TABLE]
        assert consumer.dlq_url, f"consumer {consumer.name} has no DLQ"
        sqs, sns, ddb = stack.client("sqs"), stack.client("sns"), stack.client("dynamodb")
        observer = Observer.subscribe(sqs, sns, topic, f"soak-observer-{config.seed}")
        stack.poller.concurrency = config.concurrency
        sampler = Sampler(stack, consumer.queue_url, consumer.dlq_url, config.sample_every_s)
        injector = FaultInjector(retry_sleep_scale=config.retry_sleep_scale, on_fire=sampler.fired)
        schedule = FaultSchedule(plan, config, injector)
        with injector.installed(check_fired=False):
            schedule.arm()
            sampler.start()
            progress(
                f"load: {len(plan.load):,} messages ({config.events:,} events) to "
                f"{consumer.queue_name}, up to {stack.poller.concurrency_of(consumer.mapping)} "
                f"invocations at once, {len(plan.faults):,} events with a planned fault"
            )
            started = time.monotonic()
            producer = threading.Thread(
                target=_send, args=(sqs, consumer.queue_url, plan.load, sent), name="producer"
            )
            producer.start()
            try:
                _drain_while(stack, producer.is_alive, config.timeout_s)
            finally:
                producer.join()
            phases["load"] = time.monotonic() - started

            started = time.monotonic()
            recorded = {str(r.get("event_id", {}).get("S")) for r in scan_all(ddb, table)}
            conflicts: dict[str, list[str]] = {}
            late: list[Message] = []
            for e in plan.conflict_candidates:
                if e in recorded:
                    body = order_body(e, plan.events[e], quantity=plan.events[e]["quantity"] + 100)
                    conflicts[e] = [body]
                    late.append(Message("conflict", body, e))
            late += [Message("resend", order_body(e, plan.events[e]), e) for e in plan.late_resends]
            progress(f"conflicts and late re-sends: {len(late):,} messages")
            _send(sqs, consumer.queue_url, late, sent)
            stack.drain(timeout_s=config.timeout_s)
            phases["conflicts"] = time.monotonic() - started

            started = time.monotonic()
            schedule.disarm()
            # The operator's tools hold messages with SQS's real visibility (60 s), as on AWS.
            moto_patches.set_visibility_scale(1)
            redrive = ops_dlq.redrive(sqs, consumer.dlq_url, consumer.queue_url, method="manual")
            moto_patches.set_visibility_scale(config.visibility_scale)
            progress(f"redrive: {redrive.moved:,} messages moved back from the DLQ")
            stack.drain(timeout_s=config.timeout_s)
            phases["redrive"] = time.monotonic() - started
        sampler.stop()

        started = time.monotonic()
        republished = 0
        for claim in list(
            ops_owed.owed_claims(
                ddb, table, older_than_s=0, now=int(time.time()) + 1, receipts_table=state_table
            )
        ):
            ops_owed.republish(ddb, sns, table, topic, claim, int(time.time()))
            republished += 1
        phases["ops owed"] = time.monotonic() - started

        moto_patches.set_visibility_scale(1)  # reading the end state holds messages as on AWS
        counts = queue_counts(sqs, consumer.queue_url)
        dlq_depth = queue_counts(sqs, consumer.dlq_url)["visible"]
        dead = [
            DeadLetter(
                m.body,
                m.reasons().get("failure_kind"),
                m.reasons().get("failure_reason"),
                m.message_id,
            )
            for m in ops_dlq.peek(sqs, consumer.dlq_url, dlq_depth + 10)
            if ours.search(m.body)
        ]
        state = EndState(
            effects=plan.events,
            poison=[m.body for m in plan.load if m.kind == "poison"],
            conflicts=conflicts,
            rows=[
                row
                for row in (_plain(r) for r in scan_all(ddb, table))
                if ours.match(str(row.get("event_id")))
            ],
            row_key="event_id",
            notifications=observer.by_key("event_id"),
            dlq=dead,
            left_in_queue=counts["visible"] + counts["in_flight"] + counts["delayed"],
        )
        stats = stack.poller.stats.get(consumer.mapping.uuid)
        outcomes = stack.outcomes.of(consumer.function.name)
        labels: Counter[str] = Counter({f.label: f.fired for f in injector.armed if f.fired})
        return SoakResult(
            config={k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
            sent=sent,
            redriven=redrive.moved,
            republished=republished,
            invocations=stats.invocations if stats else 0,
            invocation_errors=stats.invocation_errors if stats else 0,
            records_delivered=stats.records_delivered if stats else 0,
            peak_concurrency=stats.peak_concurrency if stats else 0,
            max_concurrency=stack.poller.concurrency_of(consumer.mapping),
            outcomes=dict(outcomes.counts) if outcomes else {},
            faults=Counter({k: v for k, v in sampler.faults.items()}),
            faults_by_label=labels,
            phases={k: round(v, 2) for k, v in phases.items()},
            load_seconds=phases["load"],
            violations=check(state),
            samples=list(sampler.samples),
        )
    finally:
        moto_patches.set_visibility_scale(scale_before)
        stack.poller.release_failed = release_before
        stack.poller.concurrency = concurrency_before
        stack.progress = progress_before


def main(argv: list[str] | None = None) -> int:
    from idempotent_messaging.local import Console

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="default: a new random seed")
    parser.add_argument("--events", type=int, default=SoakConfig.events)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--project", type=Path, default=PROJECT_DIR)
    parser.add_argument("--svg", type=Path, default=None, help="default: .emulator/soak-SEED.svg")
    parser.add_argument("--json", type=Path, default=None, help="write the result as JSON")
    parser.add_argument("--verbose", action="store_true", help="show the handlers' log lines")
    args = parser.parse_args(argv)
    # A run that seems stuck: `kill -USR1 <pid>` prints every thread's stack on stderr.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    seed = args.seed if args.seed is not None else uuid.uuid4().int % 1_000_000_000
    config = SoakConfig(
        seed=seed,
        events=args.events,
        concurrency=args.concurrency,
        stack=args.stack,
        project_dir=args.project,
    )
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    folder = emulator_state_dir()
    log = None if args.verbose else folder / f"soak-{seed}.log"
    with handler_output_to(log) as stream:
        console = Console(stream)
        console.step(f"soak seed {seed}: {config.events:,} events on stack {config.stack}")
        result = run(config, console.step)
        picture = args.svg or folder / f"soak-{seed}.svg"
        picture.parent.mkdir(parents=True, exist_ok=True)
        picture.write_text(result.picture())
        for line in result.lines():
            console.line(line)
        console.line(f"  picture: {picture}")
        if log is not None:
            console.line(f"  handler logs: {log}")
        if args.json:
            args.json.write_text(json.dumps(result.to_json(), indent=1, default=str))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
