"""The graph's lookup indexes answer exactly as a scan of every resource would, in linear time.

The indexed lookups (by type, by ARN/URL/id/name, alarms by QueueName and by dependency) are
compared with straightforward scans over random graphs, including duplicate values, non-string
and unknown property values and several matching resources, where "the first in graph order"
decides.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idempotent_messaging.rules import queues
from idempotent_messaging.rules.graph import (
    ALARM,
    ALIAS,
    FUNCTION,
    QUEUE,
    TABLE,
    ExternalRef,
    Graph,
    Node,
    function_name_from_ref,
    resource_name_from_ref,
)
from idempotent_messaging.rules.values import UNKNOWN

pytestmark = pytest.mark.policy

TYPES = (QUEUE, FUNCTION, ALIAS, TABLE)
REFS = (
    "orders",
    "orders-dlq",
    "arn:aws:sqs:us-east-1:123456789012:orders",
    "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
    "arn:aws:lambda:us-east-1:123456789012:function:orders",
    "orders:live",
)
PROP_VALUES = st.one_of(st.sampled_from(REFS), st.none(), st.just(UNKNOWN), st.integers(0, 2))


# Strategies are built once, here, not inside the composites: hypothesis validates every new
# strategy object it draws from, which cost more than the tests themselves.
NODE_COUNTS = st.integers(0, 12)
NODE_TYPES = st.sampled_from(TYPES)


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    nodes = []
    for i in range(draw(NODE_COUNTS)):
        props = {
            key: value
            for key in ("arn", "url", "id", "name")
            if (value := draw(PROP_VALUES)) is not None
        }
        nodes.append(Node(f"urn:{i}", draw(NODE_TYPES), f"n{i}", props))
    return Graph(nodes)


def _scan_match(graph: Graph, types: tuple[str, ...], ref: str) -> Node | None:
    nodes = [n for n in graph.nodes if n.type in types]
    for n in nodes:
        if ref in (n.get("arn"), n.get("url"), n.get("id")):
            return n
    wanted = resource_name_from_ref(ref)
    return next((n for n in nodes if n.get("name") == wanted), None)


def _scan_resolve(graph: Graph, types: tuple[str, ...], value: str, wanted: str) -> Any:
    for n in graph.nodes:
        if n.type in types and (
            value in (n.get("arn"), n.get("url"), n.get("id")) or n.get("name") == wanted
        ):
            return n
    return ExternalRef(value)


TYPE_SETS = st.sampled_from([(QUEUE,), (FUNCTION, ALIAS), (ALIAS, FUNCTION), (TABLE, TABLE), ()])


@settings(max_examples=300, deadline=None)
@given(graph=graphs(), types=TYPE_SETS)
def test_of_type_lists_the_resources_of_the_types_in_graph_order(graph: Graph, types: Any):
    assert graph.of_type(*types) == [n for n in graph.nodes if n.type in types]


@settings(max_examples=300, deadline=None)
@given(graph=graphs(), types=TYPE_SETS, ref=st.sampled_from(REFS))
def test_match_by_value_finds_what_a_scan_of_the_stack_finds(graph: Graph, types: Any, ref: str):
    assert graph._match(types, ref) is _scan_match(graph, types, ref)


@settings(max_examples=300, deadline=None)
@given(graph=graphs(), value=st.sampled_from(REFS), as_function=st.booleans())
def test_resolve_without_dependencies_picks_the_first_resource_holding_or_named_by_the_value(
    graph: Graph, value: str, as_function: bool
):
    types, name_of = (
        ((FUNCTION, ALIAS), function_name_from_ref) if as_function else ((QUEUE,), None)
    )
    source = Node("urn:source", ALARM, "source", {"ref": value})
    found = (
        graph.resolve(source, "ref", value, types, name_of=name_of)
        if name_of is not None
        else graph.resolve(source, "ref", value, types)
    )
    expected = _scan_resolve(graph, types, value, (name_of or resource_name_from_ref)(value))
    if isinstance(expected, ExternalRef):
        assert found == expected
    else:
        assert found is expected


QUEUE_NAMES = ("a-dlq", "b-dlq", "c-dlq")
QUEUE_COUNTS = st.integers(1, 4)
QUEUE_NAME_VALUES = st.sampled_from((*QUEUE_NAMES, UNKNOWN))
ALARM_COUNTS = st.integers(0, 6)
DIMENSION = st.one_of(st.sampled_from((*QUEUE_NAMES, "elsewhere")), st.just(UNKNOWN))
DIMENSIONS = st.one_of(st.just(UNKNOWN), st.fixed_dictionaries({"QueueName": DIMENSION}))


@st.composite
def alarm_graphs(draw: st.DrawFn) -> Graph:
    """Queues (some with unknown names) and alarms with literal, unknown or missing
    QueueName dimensions, own metrics or metric queries, depending on random queues."""
    queues_ = [
        Node(f"urn:q{i}", QUEUE, f"q{i}", {"name": draw(QUEUE_NAME_VALUES)})
        for i in range(draw(QUEUE_COUNTS))
    ]
    urns = [q.urn for q in queues_]
    depends_on = st.lists(st.sampled_from(urns), max_size=2)  # the queues of this graph
    alarms = []
    for i in range(draw(ALARM_COUNTS)):
        dims = draw(DIMENSIONS)
        props: dict[str, Any]
        if draw(st.booleans()):
            props = {"metricName": "ApproximateNumberOfMessagesVisible", "dimensions": dims}
            prop = "dimensions"
        else:
            props = {"metricQueries": [{"metric": {"metricName": "X", "dimensions": dims}}]}
            prop = "metricQueries"
        deps = draw(depends_on)
        alarms.append(Node(f"urn:a{i}", ALARM, f"a{i}", props, prop_deps={prop: deps}))
    order = draw(st.permutations(queues_ + alarms))
    return Graph(order)


@settings(max_examples=300, deadline=None)
@given(graph=alarm_graphs())
def test_alarms_for_a_queue_include_every_alarm_watching_it_in_graph_order(graph: Graph):
    alarms = graph.of_type(ALARM)
    for queue in graph.of_type(QUEUE):
        watching = [
            a
            for a in alarms
            if any(graph.alarm_watches_queue(a, m, queue) for m in graph.alarm_metrics(a))
        ]
        candidates = graph.alarms_for_queue(queue)
        assert [a for a in candidates if a in watching] == watching
        assert candidates == [a for a in alarms if a in candidates]  # graph order


def _stack_of_dlqs(count: int) -> Graph:
    nodes = []
    for i in range(count):
        dlq = Node(f"urn:dlq{i}", QUEUE, f"c{i}-dlq", {"name": f"c{i}-dlq", "arn": f"arn:d{i}"})
        source = Node(
            f"urn:src{i}",
            QUEUE,
            f"c{i}",
            {"name": f"c{i}", "redrivePolicy": {"deadLetterTargetArn": f"arn:d{i}"}},
        )
        alarm = Node(
            f"urn:alarm{i}",
            ALARM,
            f"c{i}-depth",
            {
                "metricName": "ApproximateNumberOfMessagesVisible",
                "dimensions": {"QueueName": f"c{i}-dlq"},
                "comparisonOperator": "GreaterThanOrEqualToThreshold",
                "threshold": 1,
                "alarmActions": ["arn:topic"],
            },
        )
        nodes += [dlq, source, alarm]
    return Graph(nodes)


def test_dlq_alarm_rule_reads_each_alarm_a_bounded_number_of_times_however_many_dlqs(
    monkeypatch: pytest.MonkeyPatch,
):
    calls = {"n": 0}
    original = Graph.alarm_metrics

    def counting(self: Graph, alarm: Node) -> list[dict[str, Any]]:
        calls["n"] += 1
        return original(self, alarm)

    monkeypatch.setattr(Graph, "alarm_metrics", counting)
    per_size = {}
    for count in (20, 200):
        calls["n"] = 0
        graph = _stack_of_dlqs(count)
        assert queues.dlq_has_alarm(graph, {}) == []  # every DLQ's alarm was found
        per_size[count] = calls["n"]
    # A scan of every alarm per DLQ reads 200 x 200 alarms; the index reads each about twice.
    assert per_size[200] <= 10 * per_size[20] + 10
    assert per_size[200] <= 3 * 200


def test_dlq_alarm_rule_still_reports_the_dlq_whose_alarm_watches_another_queue():
    graph = _stack_of_dlqs(3)
    alarm = graph.by_urn["urn:alarm1"]
    alarm.props["dimensions"] = {"QueueName": "c1"}  # the source queue, not its DLQ
    found = queues.dlq_has_alarm(Graph(graph.nodes), {})
    assert [urn for urn, _ in found] == ["urn:dlq1"]
