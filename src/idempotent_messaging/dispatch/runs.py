"""The run record: one DynamoDB item per billing month, for operators and for resuming.

Attributes (runs table, partition key ``month`` S):
  month, status (running|finished), generation, trigger (schedule|manual: who started this
  generation), scheduled_time, started_at, updated_at, finished_at, items_enqueued,
  items_rejected, invocations, schedule_fires, manual_runs, total_segments,
  segments_remaining, segments {"<i>": {v, cursor, done, hops, enqueued}}, last_error,
  last_error_at, previous (summaries of earlier generations).

Every checkpoint is a compare-and-swap on (generation, segments.<i>.v): two invocations that
work on the same segment (a double-fired schedule, a redelivered control message) can both
send a page (FIFO dedup and the consumer absorb it), but only one advances the cursor; the
other sees ``False`` and stops working on that segment. Counts therefore count each page once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import env
from .sources import Cursor

# Run-record writes from the segment threads of one process go one at a time. DynamoDB applies
# each conditional update atomically anyway (that is what protects separate invocations);
# emulators such as moto do not under thread concurrency, and one update per page costs nothing.
_WRITE_LOCK = threading.Lock()

STATUS_RUNNING = "running"
STATUS_FINISHED = "finished"
RUN_KEY = env.RUNS_HASH_KEY


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class SegmentState:
    index: int
    version: int
    cursor: Cursor | None
    done: bool
    hops: int


@dataclass(frozen=True, slots=True)
class RunView:
    month: str
    status: str
    generation: int
    trigger: str
    total_segments: int
    items_enqueued: int
    segments: dict[int, SegmentState]
    source_version: str | None = None
    """The item source's version pinned when this generation started (an S3 manifest's ETag);
    None for sources that have none (the accounts table)."""

    def open_segments(self) -> list[SegmentState]:
        return [s for _, s in sorted(self.segments.items()) if not s.done]


@dataclass(frozen=True, slots=True)
class Begin:
    """Outcome of a trigger: the run to work on, or None when there is nothing to do."""

    run: RunView | None
    started_new_generation: bool
    reason: str


def _fresh_segments(total: int) -> dict[str, Any]:
    seg = {
        "M": {
            "v": {"N": "0"},
            "cursor": {"NULL": True},
            "done": {"BOOL": False},
            "hops": {"N": "0"},
            "enqueued": {"N": "0"},
        }
    }
    return {"M": {str(i): seg for i in range(total)}}


def _view(item: dict[str, Any]) -> RunView:
    segments: dict[int, SegmentState] = {}
    for key, raw in item["segments"]["M"].items():
        seg = raw["M"]
        cursor_attr = seg.get("cursor", {"NULL": True})
        segments[int(key)] = SegmentState(
            index=int(key),
            version=int(seg["v"]["N"]),
            cursor=None if "NULL" in cursor_attr else json.loads(cursor_attr["S"]),
            done=seg["done"]["BOOL"],
            hops=int(seg["hops"]["N"]),
        )
    return RunView(
        month=item[RUN_KEY]["S"],
        status=item["status"]["S"],
        generation=int(item["generation"]["N"]),
        trigger=item["trigger"]["S"],
        total_segments=int(item["total_segments"]["N"]),
        items_enqueued=int(item["items_enqueued"]["N"]),
        segments=segments,
        source_version=item.get("source_version", {}).get("S"),
    )


class RunStore:
    def __init__(self, client: Any, table_name: str, now: Callable[[], str] = _now) -> None:
        self._client = client
        self._table = table_name
        self._now = now

    def _update(self, **kwargs: Any) -> Any:
        with _WRITE_LOCK:
            return self._client.update_item(TableName=self._table, **kwargs)

    def load(self, month: str) -> RunView | None:
        item = self._client.get_item(
            TableName=self._table, Key={RUN_KEY: {"S": month}}, ConsistentRead=True
        ).get("Item")
        return _view(item) if item else None

    def begin(
        self,
        month: str,
        trigger: str,
        scheduled_time: str | None,
        total_segments: int,
        restart: bool,
        source_version: str | None = None,
    ) -> Begin:
        """Start (or join) the month's run. Schedule fires after completion are no-ops; a
        manual run after completion (or with restart) starts a new generation that re-sends
        everything: the consumer's idempotency turns every repeat into a duplicate skip."""
        now = self._now()
        try:
            with _WRITE_LOCK:
                self._client.put_item(
                    TableName=self._table,
                    Item=self._new_generation_item(
                        month, trigger, scheduled_time, total_segments, 1, now, source_version
                    ),
                    ConditionExpression="attribute_not_exists(#m)",
                    ExpressionAttributeNames={"#m": RUN_KEY},
                )
            return Begin(self.load(month), True, "first trigger of the month")
        except self._client.exceptions.ConditionalCheckFailedException:
            pass
        current = self.load(month)
        assert current is not None  # the conditional put just proved it exists
        counter = "schedule_fires" if trigger == "schedule" else "manual_runs"
        if current.status == STATUS_FINISHED and trigger == "schedule":
            self._touch(month, counter)
            return Begin(None, False, "month already finished; duplicate or late schedule fire")
        if current.status == STATUS_FINISHED or restart:
            pin_set, pin_remove, pin_values = "", "", {}
            if source_version is not None:
                pin_set = ", source_version = :sv"
                pin_values = {":sv": {"S": source_version}}
            else:
                pin_remove = ", source_version"
            try:
                self._update(
                    Key={RUN_KEY: {"S": month}},
                    UpdateExpression=(
                        "SET generation = :g1, #st = :running, #tr = :trigger, started_at = :now, "
                        "updated_at = :now, items_enqueued = :zero, items_rejected = :zero, "
                        "total_segments = :total, segments_remaining = :total, #segs = :segs, "
                        "previous = list_append(if_not_exists(previous, :empty), :summary), "
                        "invocations = invocations + :one, "
                        f"{counter} = if_not_exists({counter}, :zero) + :one{pin_set} "
                        f"REMOVE finished_at, last_error, last_error_at, scheduled_time{pin_remove}"
                    ),
                    ConditionExpression="generation = :g0",
                    ExpressionAttributeNames={
                        "#st": "status",
                        "#tr": "trigger",
                        "#segs": "segments",
                    },
                    ExpressionAttributeValues={
                        **pin_values,
                        **self._rerun_values(current, trigger, now, total_segments),
                    },
                )
            except self._client.exceptions.ConditionalCheckFailedException:
                # Another re-run of this month moved the generation first: it does the work.
                return Begin(
                    None,
                    False,
                    f"concurrent re-run: another invocation started generation "
                    f"{current.generation + 1} of {month} first; this one stops",
                )
            return Begin(self.load(month), True, "manual re-run: new generation")
        self._touch(month, counter)
        return Begin(self.load(month), False, "run in progress: resuming from its checkpoints")

    @staticmethod
    def _rerun_values(
        current: RunView, trigger: str, now: str, total_segments: int
    ) -> dict[str, Any]:
        return {
            ":g0": {"N": str(current.generation)},
            ":g1": {"N": str(current.generation + 1)},
            ":running": {"S": STATUS_RUNNING},
            ":trigger": {"S": trigger},
            ":now": {"S": now},
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
            ":total": {"N": str(total_segments)},
            ":segs": _fresh_segments(total_segments),
            ":empty": {"L": []},
            ":summary": {
                "L": [
                    {
                        "M": {
                            "generation": {"N": str(current.generation)},
                            "status": {"S": current.status},
                            "trigger": {"S": current.trigger},
                            "items_enqueued": {"N": str(current.items_enqueued)},
                        }
                    }
                ]
            },
        }

    def _new_generation_item(
        self,
        month: str,
        trigger: str,
        scheduled_time: str | None,
        total_segments: int,
        generation: int,
        now: str,
        source_version: str | None = None,
    ) -> dict[str, Any]:
        item: dict[str, Any] = {
            RUN_KEY: {"S": month},
            "status": {"S": STATUS_RUNNING},
            "generation": {"N": str(generation)},
            "trigger": {"S": trigger},
            "started_at": {"S": now},
            "updated_at": {"S": now},
            "items_enqueued": {"N": "0"},
            "items_rejected": {"N": "0"},
            "invocations": {"N": "1"},
            "schedule_fires": {"N": "1" if trigger == "schedule" else "0"},
            "manual_runs": {"N": "1" if trigger == "manual" else "0"},
            "total_segments": {"N": str(total_segments)},
            "segments_remaining": {"N": str(total_segments)},
            "segments": _fresh_segments(total_segments),
        }
        if scheduled_time:
            item["scheduled_time"] = {"S": scheduled_time}
        if source_version is not None:
            item["source_version"] = {"S": source_version}
        return item

    def _touch(self, month: str, counter: str | None = None) -> None:
        """Count an invocation (and a trigger) on the record."""
        expression = "SET invocations = invocations + :one, updated_at = :now"
        if counter:
            expression += f", {counter} = if_not_exists({counter}, :zero) + :one"
        self._update(
            Key={RUN_KEY: {"S": month}},
            UpdateExpression=expression,
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":now": {"S": self._now()},
                **({":zero": {"N": "0"}} if counter else {}),
            },
        )

    def count_invocation(self, month: str) -> None:
        self._touch(month)

    def checkpoint(
        self,
        month: str,
        generation: int,
        segment: int,
        expected_version: int,
        next_cursor: Cursor | None,
        enqueued: int,
        rejected: int,
        hops: int,
    ) -> tuple[bool, bool]:
        """Advance a segment after its page was enqueued: (still owner, run finished now)."""
        done = next_cursor is None
        names = {"#s": str(segment), "#st": "status", "#segs": "segments", "#cur": "cursor"}
        values: dict[str, Any] = {
            ":g": {"N": str(generation)},
            ":v": {"N": str(expected_version)},
            ":nv": {"N": str(expected_version + 1)},
            ":cursor": {"NULL": True} if done else {"S": json.dumps(next_cursor)},
            ":done": {"BOOL": done},
            ":hops": {"N": str(hops)},
            ":n": {"N": str(enqueued)},
            ":r": {"N": str(rejected)},
            ":now": {"S": self._now()},
            ":running": {"S": STATUS_RUNNING},
        }
        expression = (
            "SET #segs.#s.v = :nv, #segs.#s.#cur = :cursor, #segs.#s.done = :done, "
            "#segs.#s.hops = :hops, #segs.#s.enqueued = #segs.#s.enqueued + :n, "
            "items_enqueued = items_enqueued + :n, items_rejected = items_rejected + :r, "
            "updated_at = :now"
        )
        if done:
            expression += ", segments_remaining = segments_remaining - :one"
            values[":one"] = {"N": "1"}
        try:
            response = self._update(
                Key={RUN_KEY: {"S": month}},
                UpdateExpression=expression,
                ConditionExpression=("generation = :g AND #st = :running AND #segs.#s.v = :v"),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_NEW",
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False, False
        remaining = response["Attributes"].get("segments_remaining")
        if done and remaining is not None and int(remaining["N"]) == 0:
            return True, self.finish(month, generation)
        return True, False

    def finish(self, month: str, generation: int) -> bool:
        """Mark the generation finished (once); False when it already was or moved on."""
        try:
            self._update(
                Key={RUN_KEY: {"S": month}},
                UpdateExpression="SET #st = :finished, finished_at = :now, updated_at = :now",
                ConditionExpression="generation = :g AND #st = :running",
                ExpressionAttributeNames={"#st": "status"},
                ExpressionAttributeValues={
                    ":finished": {"S": STATUS_FINISHED},
                    ":running": {"S": STATUS_RUNNING},
                    ":g": {"N": str(generation)},
                    ":now": {"S": self._now()},
                },
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def record_error(self, month: str, message: str) -> None:
        """Make a failure visible on the record (the raise makes it visible to AWS)."""
        self._update(
            Key={RUN_KEY: {"S": month}},
            UpdateExpression="SET last_error = :e, last_error_at = :now, updated_at = :now",
            ExpressionAttributeValues={":e": {"S": message[:1000]}, ":now": {"S": self._now()}},
        )
