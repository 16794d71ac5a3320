"""The advisory `stateful-pipeline-resource-protected` rule: what it calls stateful, and why the
plan check (not the pack) is what sees replacements."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from idempotent_messaging.offline import Violation
from idempotent_messaging.rules import pack
from idempotent_messaging.rules.graph import ESM, FUNCTION, QUEUE, TABLE, Graph, Node
from idempotent_messaging.rules.protection import stateful_resource_protected, stateful_resources
from tests.policy.conftest import GOOD

pytestmark = pytest.mark.policy

RULE = "stateful-pipeline-resource-protected"
PFX = "urn:pulumi:dev::p::"


def node(typ: str, logical: str, protect: bool | None, **props: Any) -> Node:
    prop_deps = props.pop("prop_deps", {})
    n = Node(f"{PFX}{typ}::{logical}", typ, logical, props, prop_deps=prop_deps)
    if protect is not None:  # what the engine hands over as `opts.protect`
        n.protect = protect
    return n


def graph(protect: bool | None = False, **overrides: bool | None) -> Graph:
    def p(name: str) -> bool | None:
        return overrides.get(name.replace("-", "_"), protect)

    dlq = node(QUEUE, "dlq", p("dlq"), name="dlq", arn="arn:aws:sqs:us-east-1:1:dlq")
    redrive = json.dumps(
        {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:dlq", "maxReceiveCount": 5}
    )
    queue = node(
        QUEUE,
        "orders",
        p("orders"),
        name="orders",
        arn="arn:aws:sqs:us-east-1:1:orders",
        redrivePolicy=redrive,
    )
    claims = node(
        TABLE,
        "claims",
        p("claims"),
        name="claims-1",
        arn="arn:aws:dynamodb:us-east-1:1:table/claims-1",
        tags={"idempotent-messaging:role": "idempotency-state"},
    )
    rows = node(
        TABLE, "rows", p("rows"), name="rows-1", arn="arn:aws:dynamodb:us-east-1:1:table/rows-1"
    )
    fn = node(
        FUNCTION,
        "consumer",
        None,
        arn="arn:aws:lambda:us-east-1:1:function:consumer",
        environment={"variables": {"ORDERS_TABLE": "rows-1"}},
    )
    esm = node(
        ESM,
        "esm",
        None,
        eventSourceArn=queue.get("arn"),
        functionName=fn.get("arn"),
        prop_deps={"eventSourceArn": [queue.urn], "functionName": [fn.urn]},
    )
    scratch = node(QUEUE, "scratch", p("scratch"), name="scratch")
    disposable = node(
        QUEUE,
        "load-test",
        p("load_test"),
        name="load-test",
        redrivePolicy=redrive,
        tags={"idempotent-messaging:disposable": "true"},
    )
    return Graph([dlq, queue, claims, rows, fn, esm, scratch, disposable])


def names(findings: list[tuple[str, str]]) -> set[str]:
    return {urn.rsplit("::", 1)[1] for urn, _ in findings}


def test_unprotected_stateful_resources_are_reported():
    found = stateful_resource_protected(graph(False), {})
    assert names(found) == {"orders", "dlq", "claims", "rows"}
    by_name = {urn.rsplit("::", 1)[1]: message for urn, message in found}
    assert "in-flight messages" in by_name["orders"]
    assert "dead letters awaiting redrive" in by_name["dlq"]
    assert "every idempotency claim" in by_name["claims"]
    assert "rows" in by_name["rows"] and "protect=True" in by_name["rows"]


def test_protected_disposable_and_unjudged_resources_are_not():
    assert stateful_resource_protected(graph(True), {}) == []
    # An engine that hands over no resource options: never guessed unprotected.
    assert stateful_resource_protected(graph(None), {}) == []
    assert names(stateful_resource_protected(graph(True, orders=False), {})) == {"orders"}


def test_what_counts_as_stateful():
    held = stateful_resources(graph(False))
    assert set(held) == {
        f"{PFX}{QUEUE}::orders",
        f"{PFX}{QUEUE}::dlq",
        f"{PFX}{TABLE}::claims",
        f"{PFX}{TABLE}::rows",
        f"{PFX}{QUEUE}::load-test",  # stateful, but declared disposable: the rule skips it
    }


def test_the_rule_is_advisory_and_points_at_the_plan_check():
    rule = next(r for r in pack.RULES if r.name == RULE)
    assert rule.level == "advisory" and rule.kind == "stack"
    assert "plan check" in rule.remediation and "--show-sames" in rule.remediation
    assert "retainOnDelete" in rule.remediation
    assert RULE in pack.POLICY_NAMES


def test_the_offline_engine_passes_protect_to_the_rule(
    run_check: Callable[..., list[Violation]],
):
    enabled = {RULE: "advisory"}
    found = {(v.policy, v.name) for v in run_check(GOOD, config=enabled) if v.policy == RULE}
    assert found == {(RULE, "orders"), (RULE, "orders-dlq"), (RULE, "processed")}
    opts = "opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True)"
    protected = GOOD
    for head in ('    "orders-dlq",', '    "orders",\n', '    "processed",\n'):
        assert protected.count(head) == 1, head
        line = head.rstrip("\n")
        protected = protected.replace(line if head.endswith("\n") else head, f"{line} {opts},", 1)
    assert not [v for v in run_check(protected, config=enabled) if v.policy == RULE]
    # The policy tests' harness disables the opt-in rule unless a test enables it.
    assert not [v for v in run_check(GOOD) if v.policy == RULE]
