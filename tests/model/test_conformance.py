"""What the replay on the real code (tests/integration/test_model_conformance.py) relies on,
checked on the model alone: the traces it replays are runs of the model that end, cover every
crash point of their graph, and name AWS operations for every call."""

from __future__ import annotations

import pytest

from tests.model import configs
from tests.model.checker import Graph, check
from tests.model.protocol import ACTIONS, Features, Model
from tests.model.traces import OPERATION, Trace, select

CONFIG = configs.duplicates("small", "item", Features.of_code())


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    return select(CONFIG)


def test_every_call_of_the_model_is_an_aws_operation() -> None:
    import botocore.session

    session = botocore.session.get_session()
    operations = {
        name
        for service in ("dynamodb", "sns", "sqs")
        for name in session.get_service_model(service).operation_names
    }
    assert set(OPERATION) <= set(ACTIONS)
    assert set(OPERATION.values()) <= operations


def test_each_trace_is_a_run_of_the_model_that_ends(traces: list[Trace]) -> None:
    model = Model(CONFIG)
    for trace in traces:
        state = model.initial()
        assert trace.states[0] == state
        for k, step in enumerate(trace.steps):
            moves = {s: (nxt, v) for s, nxt, v in model.successors(state)}
            assert step in moves, f"{trace.name}: step {k + 1} is not a move of the model"
            state, violation = moves[step]
            assert violation is None, f"{trace.name}: {violation}"
            assert state == trace.states[k + 1]
        assert not state.invs and not state.queue, f"{trace.name} does not end"
        assert model.final_violation(state) is None


def test_the_traces_cover_every_crash_point_of_the_graph(traces: list[Trace]) -> None:
    graph = Graph()
    check(CONFIG, graph=graph)
    model = Model(CONFIG)
    points = set()
    for state in graph.states:
        for inv in state.invs if state.crashes else ():
            points.add((inv.call[0], max(r.rc for r in inv.recs) > 1))
    covered = {
        (t.signature[1], t.signature[2] == "redelivery")
        for t in traces
        if t.signature[0] == "crash"
    }
    assert points == covered
    assert {"insert", "read", "publish", "mark", "owe", "return"} <= {p for p, _ in points}
    assert len(traces) >= 20
    assert model.describe(traces[1].steps[-1])
