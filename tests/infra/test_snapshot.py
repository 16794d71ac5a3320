"""Every stack, as `pulumi up` and as `pulumi preview`, records exactly its committed snapshot
(tests/infra/snapshots/<stack>-<mode>.json), but for the named ALLOWED_DIFFERENCES.

Regenerate after an intended change: ``make snapshot`` (tests/infra/snapshot.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.infra import snapshot

pytestmark = pytest.mark.infra

RUNS = snapshot.runs()


def test_every_stack_file_has_a_snapshot_in_both_modes() -> None:
    missing = [
        str(snapshot.snapshot_path(s, m).name)
        for s, m in RUNS
        if not snapshot.snapshot_path(s, m).exists()
    ]
    assert not missing, f"no snapshot for {missing}; regenerate: {snapshot.REGENERATE}"
    assert {m for _, m in RUNS} == {"up", "preview"}


@pytest.mark.parametrize(("stack", "mode"), RUNS, ids=[f"{s}-{m}" for s, m in RUNS])
def test_the_stack_records_its_snapshot(stack: str, mode: str) -> None:
    found = snapshot.differences(snapshot.load(stack, mode), snapshot.record(stack, mode))
    assert not found, snapshot.report(stack, mode, found)


# --- The comparison itself ---------------------------------------------------------------------


def _function(**variables: str) -> dict[str, Any]:
    return {
        "urn": "pulumi:pulumi:Stack$aws:lambda/function:Function::fn",
        "type": snapshot.FUNCTION_TYPE,
        "name": "fn",
        "parent": "pulumi:pulumi:Stack::p-dev",
        "custom": True,
        "inputs": {
            "code": snapshot.ARCHIVE_PREFIX + "0" * 64,
            "environment": {"variables": dict(variables)},
            "timeout": 30,
            "policy": '{"Statement": [{"Action": "sqs:SendMessage"}]}',
        },
        "options": {"dependencies": [], "protect": False},
    }


def _recording(*resources: dict[str, Any]) -> dict[str, Any]:
    return {"stack": "dev", "mode": "up", "resources": list(resources)}


def test_the_two_named_differences_are_accepted() -> None:
    assert set(snapshot.ALLOWED_DIFFERENCES) == {"code-asset-hashes", "idempotency-strategy-env"}
    before = _function(IDEMPOTENCY_STRATEGY="transactional", LOG="x")
    after = _function(LOG="x")
    after["inputs"]["code"] = snapshot.ARCHIVE_PREFIX + "1" * 64
    assert snapshot.differences(_recording(before), _recording(after)) == []


def test_any_other_difference_fails_with_its_resource_path_and_the_fix() -> None:
    before = _function(IDEMPOTENCY_STRATEGY="transactional")
    after = copy.deepcopy(before)
    after["inputs"]["environment"]["variables"]["IDEMPOTENCY_STRATEGY"] = "other"  # not removed
    after["inputs"]["timeout"] = 60
    after["inputs"]["policy"] = '{"Statement": [{"Action": "sqs:*"}]}'
    after["options"]["protect"] = True
    extra = {**_function(), "urn": "pulumi:pulumi:Stack$aws:lambda/function:Function::new"}
    found = snapshot.differences(_recording(before), _recording(after, extra))
    paths = {(d.resource.rsplit("::", 1)[1], d.path) for d in found}
    assert paths == {
        ("fn", "inputs.environment.variables.IDEMPOTENCY_STRATEGY"),
        ("fn", "inputs.timeout"),
        ("fn", "inputs.policy<json>.Statement[0].Action"),
        ("fn", "options.protect"),
        ("new", ""),
    }
    message = snapshot.report("dev", "up", found)
    assert "inputs.timeout: snapshot 30 -> now 60" in message
    assert "make snapshot" in message and "--write" in message


def test_a_removed_resource_is_a_difference() -> None:
    found = snapshot.differences(_recording(_function()), _recording())
    assert [(d.path, d.after) for d in found] == [("", snapshot._ABSENT)]
    assert "<absent>" in str(found[0])
