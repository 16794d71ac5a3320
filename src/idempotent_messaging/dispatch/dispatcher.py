"""The dispatch loop: segments in parallel, page by page, checkpoint after every page, hand
off to a fresh invocation (a control message) when the time budget runs low.

Never silent: a page is checkpointed only after all its charges were accepted by SQS; an error
is written to the run record and raised (Lambda's async retry / the control queue's redrive
re-run the work from the last checkpoint, and their DLQs alarm); running out of time hands
every unfinished segment to a continuation message before returning.
"""

from __future__ import annotations

import contextvars
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .keys import charge_message, validate_month
from .months import Trigger
from .runs import STATUS_RUNNING, RunStore, RunView, SegmentState
from .sender import WorkQueueSender
from .sources import ItemSource

DONE = "done"
HANDOFF = "handoff"
LOST = "lost"  # another invocation advanced this segment first: it owns it now
STOPPED = "stopped"  # a sibling segment failed: stop at the page boundary


class RunawayRun(RuntimeError):
    """A segment needed more continuations than DISPATCH_MAX_HOPS allows."""


class InvalidControlMessage(ValueError):
    """A control-queue message that is not a continuation this dispatcher wrote."""


@dataclass(frozen=True, slots=True)
class Budget:
    """Remaining invocation time (from the Lambda context) against a reserve."""

    remaining_ms: Callable[[], int]
    reserve_ms: int

    @classmethod
    def starting_now(cls, remaining_ms: Callable[[], int], reserve_ms: int) -> Budget:
        """The reserve is at most a quarter of the time this invocation starts with: an
        invocation always uses three quarters of its time, so a caller with a short budget
        (a local or test call) still makes progress instead of handing everything off."""
        return cls.starting_with(remaining_ms, reserve_ms, remaining_ms())

    @classmethod
    def starting_with(
        cls, remaining_ms: Callable[[], int], reserve_ms: int, start_ms: float
    ) -> Budget:
        """``starting_now`` with the invocation's first reading already taken (the same one
        that sets the deadline of its AWS calls)."""
        return cls(remaining_ms, min(reserve_ms, int(start_ms) // 4))

    def low(self) -> bool:
        return self.remaining_ms() < self.reserve_ms


@dataclass(frozen=True, slots=True)
class Continuation:
    """Body of a control message: 'resume this segment of this generation'."""

    month: str
    generation: int
    segment: int
    hop: int

    def body(self) -> str:
        return json.dumps(
            {
                "month": self.month,
                "generation": self.generation,
                "segment": self.segment,
                "hop": self.hop,
            },
            sort_keys=True,
        )

    @classmethod
    def parse(cls, body: str) -> Continuation:
        try:
            data = json.loads(body)
            values = (data["month"], data["generation"], data["segment"], data["hop"])
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidControlMessage(
                f"control message is not a continuation {{month, generation, segment, hop}}: "
                f"{exc!r}"
            ) from exc
        month, generation, segment, hop = values
        validate_month(month)
        for name, value in (("generation", generation), ("segment", segment), ("hop", hop)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidControlMessage(f"{name}={value!r}: must be a non-negative integer")
        return cls(month, generation, segment, hop)


@dataclass
class Outcome:
    """What one invocation did, returned to the caller and logged."""

    month: str
    generation: int | None
    reason: str
    enqueued: int = 0
    rejected: int = 0
    pages: int = 0
    segments_done: list[int] = field(default_factory=list)
    handed_off: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    run_finished: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "month": self.month,
            "generation": self.generation,
            "reason": self.reason,
            "enqueued": self.enqueued,
            "rejected": self.rejected,
            "pages": self.pages,
            "segments_done": sorted(self.segments_done),
            "handed_off": sorted(self.handed_off),
            "lost": sorted(self.lost),
            "run_finished": self.run_finished,
        }


class ControlQueue:
    """Continuation messages: FIFO group per (month, segment) so one segment never runs twice
    at once from this queue; dedup id per (generation, segment, version) so two invocations
    handing off the same checkpoint send one message."""

    def __init__(self, client: Any, queue_url: str | None) -> None:
        self._client = client
        self._url = queue_url

    def hand_off(self, continuation: Continuation, version: int) -> None:
        if self._url is None:
            raise RuntimeError(
                "time budget ran low but CONTROL_QUEUE_URL is not set: cannot continue the run "
                "in a fresh invocation (the run record keeps the cursors; re-invoke to resume)"
            )
        c = continuation
        self._client.send_message(
            QueueUrl=self._url,
            MessageBody=c.body(),
            MessageGroupId=f"{c.month}#{c.segment}",
            MessageDeduplicationId=f"{c.month}:{c.generation}:{c.segment}:{version}",
        )


class Dispatcher:
    def __init__(
        self,
        source: ItemSource,
        sender: WorkQueueSender,
        runs: RunStore,
        control: ControlQueue,
        segment_concurrency: int,
        max_hops: int,
        logger: logging.Logger | Any,
    ) -> None:
        self._source = source
        self._sender = sender
        self._runs = runs
        self._control = control
        self._segment_concurrency = segment_concurrency
        self._max_hops = max_hops
        self._log = logger

    # --- entry points ---------------------------------------------------------------------
    def start(self, trigger: Trigger, total_segments: int, budget: Budget) -> Outcome:
        """A schedule fire or a manual run: create/join the month's run, work on every open
        segment until done or until the budget runs low."""
        version = getattr(self._source, "version", None)
        begin = self._runs.begin(
            trigger.month,
            trigger.trigger,
            trigger.scheduled_time,
            total_segments,
            trigger.restart,
            source_version=version(trigger.month) if version is not None else None,
        )
        self._log.info(
            "trigger",
            extra={
                "month": trigger.month,
                "trigger": trigger.trigger,
                "scheduled_time": trigger.scheduled_time,
                "decision": begin.reason,
            },
        )
        if begin.run is None:
            return Outcome(trigger.month, None, begin.reason)
        run = begin.run
        if not run.open_segments():
            # Every segment is done but an earlier invocation died before marking the run
            # finished: finish it now rather than leaving it 'running' forever.
            outcome = Outcome(run.month, run.generation, "all segments were already done")
            outcome.run_finished = self._runs.finish(run.month, run.generation)
            return outcome
        return self._work(run, run.open_segments(), 0, begin.reason, budget)

    def resume(self, continuation: Continuation, budget: Budget) -> Outcome:
        """A control message: continue one segment from the run record's checkpoint."""
        c = continuation
        run = self._runs.load(c.month)
        if run is None:
            raise InvalidControlMessage(f"no run record for month {c.month!r}")
        if run.generation != c.generation or run.status != STATUS_RUNNING:
            return Outcome(c.month, run.generation, "stale continuation: run moved on")
        segment = run.segments.get(c.segment)
        if segment is None:
            raise InvalidControlMessage(
                f"segment={c.segment}: run {c.month} has {run.total_segments} segments"
            )
        if segment.done:
            return Outcome(c.month, run.generation, "stale continuation: segment done")
        self._runs.count_invocation(c.month)
        if c.hop > self._max_hops:
            message = (
                f"segment {c.segment} of {c.month} needed hop {c.hop} > DISPATCH_MAX_HOPS "
                f"{self._max_hops}: the run is too slow for its segment count; raise "
                "scan_segments or investigate throttling, then re-run the month manually"
            )
            self._runs.record_error(c.month, message)
            raise RunawayRun(message)
        return self._work(run, [segment], c.hop, "continuation", budget)

    # --- the loop -------------------------------------------------------------------------
    def _work(
        self, run: RunView, segments: list[SegmentState], hop: int, reason: str, budget: Budget
    ) -> Outcome:
        outcome = Outcome(run.month, run.generation, reason)
        pin = getattr(self._source, "pin", None)
        if pin is not None and run.source_version is not None:
            try:
                pin(run.month, run.source_version)
            except Exception as exc:
                self._runs.record_error(run.month, f"{type(exc).__name__}: {exc}")
                raise
        lock = threading.Lock()
        stop = threading.Event()
        versions: dict[int, int] = {}

        def one(segment: SegmentState) -> str:
            try:
                return self._segment(run, segment, hop, budget, stop, outcome, lock, versions)
            except Exception:
                stop.set()  # siblings stop at their next page boundary
                raise

        errors: list[BaseException] = []
        results: dict[int, str] = {}
        workers = max(1, min(self._segment_concurrency, len(segments)))
        with ThreadPoolExecutor(workers, thread_name_prefix="segment") as pool:
            # Each thread runs in a copy of this context: the invocation's deadline included.
            futures = {
                s.index: pool.submit(contextvars.copy_context().run, one, s) for s in segments
            }
            for index, future in futures.items():
                try:
                    results[index] = future.result()
                except Exception as exc:
                    errors.append(exc)
                    self._log.exception(
                        "segment failed", extra={"month": run.month, "segment": index}
                    )
        if errors:
            self._runs.record_error(run.month, f"{type(errors[0]).__name__}: {errors[0]}")
            raise errors[0]
        for index, result in results.items():
            if result == HANDOFF:
                self._control.hand_off(
                    Continuation(run.month, run.generation, index, hop + 1), versions[index]
                )
                outcome.handed_off.append(index)
            elif result == LOST:
                outcome.lost.append(index)
        self._log.info("dispatch invocation done", extra=outcome.as_dict())
        return outcome

    def _segment(
        self,
        run: RunView,
        segment: SegmentState,
        hop: int,
        budget: Budget,
        stop: threading.Event,
        outcome: Outcome,
        lock: threading.Lock,
        versions: dict[int, int],
    ) -> str:
        version, cursor = segment.version, segment.cursor
        with lock:
            versions[segment.index] = version
        while True:
            if stop.is_set():
                return STOPPED
            if budget.low():
                return HANDOFF
            page = self._source.read_page(run.month, segment.index, run.total_segments, cursor)
            for rejected in page.rejected:
                self._log.error(
                    "item rejected",
                    extra={"month": run.month, "item": rejected.ref, "reason": rejected.reason},
                )
            self._sender.send([charge_message(item, run.month) for item in page.items])
            owner, finished = self._runs.checkpoint(
                run.month,
                run.generation,
                segment.index,
                version,
                page.cursor,
                len(page.items),
                len(page.rejected),
                hop,
            )
            if not owner:
                return LOST
            version += 1
            cursor = page.cursor
            with lock:
                versions[segment.index] = version
                outcome.pages += 1
                outcome.enqueued += len(page.items)
                outcome.rejected += len(page.rejected)
                outcome.run_finished = outcome.run_finished or finished
                if cursor is None:
                    outcome.segments_done.append(segment.index)
            if cursor is None:
                return DONE
