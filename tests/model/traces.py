"""Traces of the model to replay on the real code (tests/integration/test_model_conformance.py).

From the explored state graph of a configuration, one shortest run to each distinct kind of
step ("signature": a death or a time-out before each call of each delivery, each fault
outcome of each call, SQS's own redrive, a re-send, an operator redrive...), completed to the
end of the run by the fault-free policy (``complete``). Every crash point of the graph is
therefore in some trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.model.checker import Graph, check
from tests.model.protocol import Config, Model, State, Step

OPERATION = {
    "insert": "BatchExecuteStatement",
    "mark": "BatchExecuteStatement",
    "transact": "TransactWriteItems",
    "read": "BatchGetItem",
    "publish": "PublishBatch",
    "quarantine": "SendMessageBatch",
    "owe": "UpdateItem",
    "receipt-read": "BatchGetItem",
    "receipt-write": "PutItem",
    "row-insert": "BatchExecuteStatement",
    "row-read": "BatchGetItem",
    "release": "DeleteItem",
}
"""The AWS operation of each call the model's invocations make."""


@dataclass(frozen=True)
class Trace:
    config: Config
    signature: tuple[Any, ...]
    steps: tuple[Step, ...]
    states: tuple[State, ...]
    """states[k] is the state before steps[k]; states[-1] the final one."""

    @property
    def name(self) -> str:
        return f"{self.config.name}#" + "-".join(str(x) for x in self.signature)

    def describe(self) -> str:
        model = Model(self.config)
        return "\n".join(
            f"  {n:2d}. {model.describe(step)}" for n, step in enumerate(self.steps, 1)
        )


def signature(model: Model, before: State, step: Step) -> tuple[Any, ...] | None:
    """What kind of step this is, for coverage: None for the plain ones."""
    kind = step[0]
    if kind in ("crash", "timeout"):
        inv = next(v for v in before.invs if v.iid == step[1])
        redelivery = max(r.rc for r in inv.recs) > 1
        return (kind, step[2], "redelivery" if redelivery else "first")
    if kind == "call":
        outcome = step[4]
        if outcome[0] != "ok":
            return ("fault", step[2], outcome[0])
        if step[2] == "quarantine":  # each kind of DLQ copy the runtime makes
            inv = next(v for v in before.invs if v.iid == step[1])
            return ("dlq", *sorted({inv.recs[i].kind for i in inv.call[1]}))
        return None
    if kind in ("sqs-redrive", "send", "ops-redrive", "native-move", "ttl-delete"):
        return (kind,)
    if kind == "receipt-ttl-delete":
        return (kind,)
    return None


_PROGRESS = ("return", "call", "receive", "sqs-redrive", "tick")


def complete(model: Model, state: State) -> tuple[list[Step], list[State]]:
    """The fault-free run from ``state`` to its end: returns first, then each invocation's
    next call answered ``ok``, then the largest receive, SQS's own redrive, a tick; never a
    death, a time-out, a fault, a re-send, a TTL deletion or a redrive."""
    steps: list[Step] = []
    states = [state]
    for _ in range(500):
        best: tuple[int, int, Step, State] | None = None
        for step, nxt, violation in model.successors(state):
            kind = step[0]
            if kind not in _PROGRESS or (kind == "call" and step[4] != ("ok",)):
                continue
            if violation is not None:
                raise AssertionError(f"completion meets a violation: {violation}")
            rank = _PROGRESS.index(kind)
            size = -len(step[2]) if kind == "receive" else 0
            if best is None or (rank, size) < best[:2]:
                best = (rank, size, step, nxt)
        if best is None:
            return steps, states
        steps.append(best[2])
        state = best[3]
        states.append(state)
    raise AssertionError("the completion does not end")  # pragma: no cover


def select(config: Config, limit: int | None = None) -> list[Trace]:
    """One trace per signature of ``config``'s transitions (the first state in breadth-first
    order where a step of that kind is possible, so a shortest run to it), at most
    ``limit``: deaths and time-outs first (every crash point), then faults, then the rest.
    Every transition is looked at, not only those that first reached a state: a death before
    a call that changed nothing leads to a state reached before."""
    model = Model(config)
    first: dict[tuple[Any, ...], tuple[int, Step, State]] = {}

    def see(n: int, state: State, step: Step, nxt: State) -> None:
        # The checker hands over every transition, state by state in breadth-first order.
        sig = signature(model, state, step)
        if sig is not None and sig not in first:
            first[sig] = (n, step, nxt)

    graph = Graph()
    result = check(config, graph=graph, on_step=see)
    if result.violation is not None:
        raise AssertionError(result.counterexample())
    if not result.complete:
        raise AssertionError(f"{result.summary()}: traces need the whole graph")
    order = {"crash": 0, "timeout": 1, "fault": 2}
    chosen = sorted(first.items(), key=lambda kv: (order.get(kv[0][0], 3), kv[1][0]))
    traces = [_trace(config, model, graph, ("clean",), 0, None, None)]
    traces += [_trace(config, model, graph, sig, n, step, nxt) for sig, (n, step, nxt) in chosen]
    return traces[:limit] if limit else traces


def _trace(
    config: Config,
    model: Model,
    graph: Graph,
    sig: tuple[Any, ...],
    n: int,
    step: Step | None,
    nxt: State | None,
) -> Trace:
    steps = graph.steps_to(n)
    states = [graph.states[i] for i in graph.path(n)]
    if step is not None and nxt is not None:
        steps.append(step)
        states.append(nxt)
    more, after = complete(model, states[-1])
    return Trace(config, sig, tuple(steps + more), tuple(states + after[1:]))


def counterexample_trace(config: Config) -> Trace:
    """The checker's counterexample of ``config`` (which must have one), then completed."""
    model = Model(config)
    graph = Graph()
    result = check(config, graph=graph)
    if result.violation is None:
        raise AssertionError(f"{config.name}: no counterexample")
    state = model.initial()
    states = [state]
    for step in result.steps:
        state = next(nxt for s, nxt, _ in model.successors(state) if s == step)
        states.append(state)
    more, after = complete(model, state)
    return Trace(
        config, ("counterexample",), tuple(result.steps) + tuple(more), tuple(states + after[1:])
    )


def sequential(config: Config) -> Trace:
    """The fault-free run that sends and processes each message alone, in order: the initial
    sends, then each optional one after the previous has ended."""
    model = Model(config)
    state = model.initial()
    steps, states = complete(model, state)
    state = states[-1]
    for send in config.sends:
        if not send.optional:
            continue
        step, state = next(
            (s, nxt)
            for s, nxt, _ in model.successors(state)
            if s[0] == "send" and s[1] == send.content
        )
        steps.append(step)
        states.append(state)
        more, after = complete(model, state)
        steps += more
        states += after[1:]
        state = states[-1]
    return Trace(config, ("sequential",), tuple(steps), tuple(states))
