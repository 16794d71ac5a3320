"""What the handlers themselves emit, read as CloudWatch would: outcome log lines and EMF metrics.

``OutcomeLog`` collects the runtime's structured outcome lines (observability.record_outcome /
record_outcomes) per function: the outcome counts, the event ids behind them and the
quarantine reasons. A function that does not run on the runtime logs none, and the report says
so instead of guessing.

``MetricTap`` reads the Embedded Metric Format documents the functions print (Powertools
``Metrics`` flushes one JSON document per invocation to stdout, which CloudWatch Logs turns into
metrics): each becomes ``Datapoint``s keyed as CloudWatch keys a metric (namespace, name, the
exact dimension set), so a stack's own alarm on a custom metric can be evaluated against what
the run emitted.

Several functions share this process, each invocation in an execution environment of its own
(local.isolation): the function of a line or document is the one whose environment's
``AWS_LAMBDA_FUNCTION_NAME`` is set when it is written. Invocations run concurrently, so the
tap assembles lines per thread (``print`` writes a document and its newline separately) and
writes each whole line through: two invocations' documents never interleave.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

UNKNOWN_FUNCTION = "?"


def current_function() -> str:
    return os.environ.get("AWS_LAMBDA_FUNCTION_NAME", UNKNOWN_FUNCTION)


@dataclass
class FunctionOutcomes:
    """One function's outcome lines."""

    counts: Counter[str] = field(default_factory=Counter)
    """Outcome -> records (a processed summary line counts every record it lists)."""
    events: dict[str, set[str]] = field(default_factory=dict)
    """Outcome -> the event ids the lines name."""
    reasons: dict[str, Counter[str]] = field(default_factory=dict)
    """Outcome -> ``<failure_kind>: <reason>`` -> records (quarantined, failed, retried)."""

    def add(self, outcome: str, fields: dict[str, Any], count: int = 1) -> None:
        self.counts[outcome] += count
        event = fields.get("event_id")
        if isinstance(event, str) and event:
            self.events.setdefault(outcome, set()).add(event)
        reason = fields.get("reason")
        if reason:
            kind = fields.get("failure_kind") or fields.get("failure_class") or "-"
            self.reasons.setdefault(outcome, Counter())[f"{kind}: {reason}"] += count

    def event_ids(self, *outcomes: str) -> set[str]:
        found: set[str] = set()
        for outcome in outcomes:
            found |= self.events.get(outcome, set())
        return found


class OutcomeLog(logging.Handler):
    """The runtime's outcome lines, per function (installed on the root logger: Powertools
    loggers propagate, and every outcome line carries the ``outcome`` extra field)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.functions: dict[str, FunctionOutcomes] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        # Powertools adds a SuppressFilter to every root handler so its records are not printed
        # twice; this handler prints nothing, it only reads, so it takes them all.
        return True

    def emit(self, record: logging.LogRecord) -> None:
        outcome = getattr(record, "outcome", None)
        # DEBUG lines repeat, record by record, what a processed summary line already lists.
        if outcome is None or record.levelno < logging.INFO:
            return
        with self._lock:
            outcomes = self.functions.setdefault(current_function(), FunctionOutcomes())
            records = getattr(record, "records", None)
            if isinstance(records, list):  # one line for a batch's processed records
                for fields in records:
                    outcomes.add(str(outcome), fields if isinstance(fields, dict) else {})
                return
            outcomes.add(str(outcome), dict(record.__dict__))

    def of(self, function: str) -> FunctionOutcomes | None:
        return self.functions.get(function)

    def install(self) -> OutcomeLog:
        logging.getLogger().addHandler(self)
        return self

    def uninstall(self) -> None:
        logging.getLogger().removeHandler(self)


@dataclass(frozen=True)
class Datapoint:
    """One metric value an EMF document carried."""

    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...]
    """The exact dimension set, sorted (CloudWatch tells metrics apart by it)."""
    values: tuple[float, ...]
    function: str
    unit: str = ""


def datapoints(document: dict[str, Any], function: str) -> list[Datapoint]:
    """Every (namespace, metric, dimension set) value of one EMF document."""
    found: list[Datapoint] = []
    directives = (document.get("_aws") or {}).get("CloudWatchMetrics") or []
    for directive in directives:
        namespace = str(directive.get("Namespace", ""))
        for dimension_set in directive.get("Dimensions") or [[]]:
            dims = tuple(sorted((str(d), str(document.get(d, ""))) for d in dimension_set))
            for metric in directive.get("Metrics") or []:
                name = str(metric.get("Name", ""))
                raw = document.get(name)
                values = raw if isinstance(raw, list) else [raw]
                numbers = tuple(float(v) for v in values if isinstance(v, int | float))
                if numbers:
                    found.append(
                        Datapoint(namespace, name, dims, numbers, function, metric.get("Unit", ""))
                    )
    return found


class MetricTap:
    """Stands in for sys.stdout while installed: writes each thread's lines through to it
    whole, and reads every line that is an EMF document into ``datapoints``."""

    def __init__(self) -> None:
        self.datapoints: list[Datapoint] = []
        self._target: TextIO | None = None
        self._pending: dict[int, str] = {}  # thread -> its line written so far
        self._lock = threading.Lock()

    # --- the file interface print() and Powertools use ---------------------------------------
    def write(self, text: str) -> int:
        thread = threading.get_ident()
        with self._lock:
            *lines, rest = (self._pending.pop(thread, "") + text).split("\n")
            if rest:
                self._pending[thread] = rest
            target = self._target or sys.__stdout__
            if lines and target is not None:
                target.write("".join(f"{line}\n" for line in lines))
        for line in lines:
            self._read(line)
        return len(text)

    def flush(self) -> None:
        """Write out what the calling thread wrote without a newline, then flush."""
        with self._lock:
            rest = self._pending.pop(threading.get_ident(), "")
            target = self._target or sys.__stdout__
            if target is not None:
                if rest:
                    target.write(rest)
                target.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, ...
        return getattr(self._target or sys.__stdout__, name)

    def _read(self, line: str) -> None:
        if '"_aws"' not in line:
            return
        try:
            document = json.loads(line)
        except json.JSONDecodeError:
            return
        if isinstance(document, dict):
            found = datapoints(document, current_function())
            with self._lock:
                self.datapoints.extend(found)

    # --- lifecycle -----------------------------------------------------------------------------
    def install(self) -> MetricTap:
        self._target = sys.stdout
        sys.stdout = self
        return self

    def uninstall(self) -> None:
        with self._lock:
            rest, self._pending = "".join(self._pending.values()), {}
        if rest and self._target is not None:
            self._target.write(rest)
        if sys.stdout is self:
            sys.stdout = self._target
        # A logger that bound this object as its stream keeps writing through to the target.

    def matching(self, namespace: str, name: str, dimensions: dict[str, str]) -> list[Datapoint]:
        """The datapoints of one CloudWatch metric: same namespace, name and dimension set."""
        wanted = tuple(sorted((str(k), str(v)) for k, v in dimensions.items()))
        return [
            d
            for d in self.datapoints
            if d.namespace == namespace and d.name == name and d.dimensions == wanted
        ]


def statistic(values: list[float], name: str | None) -> tuple[float, str]:
    """(the alarm's statistic over one evaluation of the run's values, how it was computed)."""
    stat = name or "Maximum"
    if stat == "Sum":
        return sum(values), "Sum"
    if stat == "SampleCount":
        return float(len(values)), "SampleCount"
    if stat == "Average":
        return sum(values) / len(values), "Average"
    if stat == "Minimum":
        return min(values), "Minimum"
    if stat == "Maximum":
        return max(values), "Maximum"
    return max(values), f"{stat} approximated by the Maximum"
