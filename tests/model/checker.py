"""An explicit-state breadth-first checker: every reachable state of a ``protocol.Model``
once (states are hashed; the invocations' order is canonical), every invariant on every
transition, the end-of-run invariants on every state without a successor. The first
violation stops the search; breadth first, its trace is a shortest one."""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.model.protocol import Config, Model, State, Step, Violation


@dataclass
class Result:
    config: Config
    states: int = 0
    transitions: int = 0
    terminal: int = 0
    depth: int = 0
    seconds: float = 0.0
    violation: Violation | None = None
    trace: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    complete: bool = True
    """False when ``max_states`` stopped the search first."""

    def summary(self) -> str:
        verdict = (
            "no violation"
            if self.violation is None
            else f"VIOLATION {self.violation.invariant}: {self.violation.detail}"
        )
        bound = "" if self.complete else " (state limit reached)"
        return (
            f"{self.config.name}: {self.states} states, {self.transitions} transitions, "
            f"{self.terminal} final, depth {self.depth}, {self.seconds:.1f} s{bound}: {verdict}"
        )

    def counterexample(self) -> str:
        if self.violation is None:
            return ""
        lines = [f"counterexample ({self.config.name}; {self.config.describe()}):"]
        lines += [f"  {n:2d}. {line}" for n, line in enumerate(self.trace, 1)]
        lines.append(f"  => {self.violation.invariant}: {self.violation.detail}")
        return "\n".join(lines)


class Graph:
    """What a search keeps: each state's parent and the step that reached it."""

    def __init__(self) -> None:
        self.index: dict[State, int] = {}
        self.states: list[State] = []
        self.parent: list[int] = []
        self.step: list[Step | None] = []

    def add(self, state: State, parent: int, step: Step | None) -> int | None:
        n = len(self.states)
        if self.index.setdefault(state, n) != n:  # one hash of the (deep) state, not two
            return None
        self.states.append(state)
        self.parent.append(parent)
        self.step.append(step)
        return n

    def path(self, n: int) -> list[int]:
        out = []
        while n >= 0:
            out.append(n)
            n = self.parent[n]
        return out[::-1]

    def steps_to(self, n: int) -> list[Step]:
        return [s for s in (self.step[i] for i in self.path(n)) if s is not None]


def check(
    config: Config,
    *,
    max_states: int = 2_000_000,
    graph: Graph | None = None,
    on_state: Callable[[int, State, bool], Any] | None = None,
    on_step: Callable[[int, State, Step, State], Any] | None = None,
) -> Result:
    """Explore every state of ``config``'s model; stop at the first violation.

    The cyclic garbage collector is paused meanwhile: the search allocates millions of tuples
    and makes no reference cycles, and each collection would walk every state kept so far."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _check(
            config, max_states=max_states, graph=graph, on_state=on_state, on_step=on_step
        )
    finally:
        if enabled:
            gc.enable()


def _check(
    config: Config,
    *,
    max_states: int,
    graph: Graph | None,
    on_state: Callable[[int, State, bool], Any] | None,
    on_step: Callable[[int, State, Step, State], Any] | None,
) -> Result:
    model = Model(config)
    result = Result(config)
    started = time.perf_counter()
    g = graph if graph is not None else Graph()
    root = model.initial()
    g.add(root, -1, None)
    depth = {0: 0}
    frontier = deque([0])
    found: tuple[int, Step, Violation] | None = None
    while frontier and found is None:
        n = frontier.popleft()
        state = g.states[n]
        successors = 0
        for step, nxt, violation in model.successors(state):
            successors += 1
            result.transitions += 1
            if violation is not None:
                found = (n, step, violation)
                break
            if on_step is not None:
                on_step(n, state, step, nxt)
            m = g.add(nxt, n, step)
            if m is not None:
                depth[m] = depth[n] + 1
                result.depth = max(result.depth, depth[m])
                frontier.append(m)
                if len(g.states) >= max_states:
                    result.complete = False
                    frontier.clear()
                    break
        # A run may end whenever nothing is in flight (the producer need not re-send, the
        # operator need not redrive, time need not pass): the end-of-run invariants hold there.
        if found is None and (successors == 0 or model.at_rest(state)):
            result.terminal += 1
            violation = model.final_violation(state)
            if violation is not None:
                found = (n, ("end",), violation)
        if on_state is not None:
            on_state(n, state, successors == 0)
    result.states = len(g.states)
    result.seconds = time.perf_counter() - started
    if found is not None:
        n, step, violation = found
        result.violation = violation
        steps = g.steps_to(n)
        if step != ("end",):
            steps.append(step)
        result.steps = steps
        states = [g.states[i] for i in g.path(n)]
        result.trace = [model.describe(s, states[k]) for k, s in enumerate(steps)]
    return result
