"""The fixes only the whole graph can compute: program edits the offline check makes.

A queue's visibility timeout follows from the timeout of the function a mapping links to it,
and a DLQ's retention from its source's. pulumi-policy hands a remediation one resource's
inputs at its registration (the analyzer's `Remediate` call), before the mapping or the source
that links it exists, and reports a stack policy at level `remediate` as mandatory
("Stack policies cannot be remediated", its servicer's `AnalyzeStack`): the first test shows
both facts on the real servicer. Offline the whole graph is known, so `--remediate` (or the
level `remediate` in the policy config) computes these fixes, applies them under the same
guards as the engine's remediations, re-checks, and reports them as edits `pulumi up` will not
make: the verdict stays what `pulumi preview` says of the program as it is (`pending`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import struct_pb2
from pulumi.runtime import proto

from idempotent_messaging import limits
from idempotent_messaging.offline import main
from idempotent_messaging.offline.analyzer import make_servicer
from idempotent_messaging.offline.remediation import remediate_graph, with_remediation
from idempotent_messaging.offline.runner import run_program
from tests.policy.conftest import GOOD, HEADER, policy_config, write_project

pytestmark = pytest.mark.policy

COVERS = "sqs-visibility-timeout-covers-lambda-timeout"
SIX_X = "sqs-visibility-timeout-6x-lambda-timeout"
RETENTION = "sqs-dlq-retention-exceeds-source"
EDIT_RULES = {COVERS, SIX_X, RETENTION}
QUEUE = "aws:sqs/queue:Queue"
FUNCTION = "aws:lambda/function:Function"
ESM = "aws:lambda/eventSourceMapping:EventSourceMapping"
ARN = "arn:aws:sqs:us-east-1:123456789012:orders"
FN_ARN = "arn:aws:lambda:us-east-1:123456789012:function:consumer"

# GOOD with the queue's visibility at 30 s under a 60 s function, the DLQ at SQS's default
# retention (4 days, as long as its source's), and a second consumer (100 s, no window): the
# edit must cover both consumers.
SHORT = GOOD.replace("visibility_timeout_seconds=360", "visibility_timeout_seconds=30").replace(
    '"orders-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True',
    '"orders-dlq", sqs_managed_sse_enabled=True',
) + (
    'fn2 = aws.lambda_.Function("audit", role=role.arn, runtime="python3.12", '
    'handler="app.handler",\n    code=pulumi.AssetArchive({}), timeout=100)\n'
    'aws.lambda_.EventSourceMapping("audit-esm", event_source_arn=queue.arn, '
    'function_name=fn2.arn,\n    function_response_types=["ReportBatchItemFailures"], '
    "maximum_batching_window_in_seconds=20)\n"
)
assert SHORT.count("visibility_timeout_seconds=30") == 1 and "1209600" not in SHORT


def check(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    body: str,
    *flags: str,
    config: dict[str, Any] | None = None,
    fmt: str = "json",
) -> tuple[int, Any]:
    project = write_project(tmp_path / "p", body)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(policy_config(config)))
    argv = ["--project", str(project), "--stack", "dev", "--config", str(path), *flags]
    code = main([*argv, "--format", fmt])
    out = capsys.readouterr().out
    return code, (out if fmt == "text" else json.loads(out))


def edits(report: dict[str, Any]) -> set[tuple[str, str, str, Any, Any]]:
    return {
        (r["policy"], r["name"], r["property"], r["before"], r["after"])
        for r in report["remediations"]
        if not r["at_deploy"]
    }


# --- what the engine's path can and cannot do --------------------------------------------------


def test_the_engine_path_cannot_remediate_what_needs_another_resource():
    servicer = make_servicer(with_remediation({}))
    queue = struct_pb2.Struct()
    queue.update({"name": "orders", "arn": ARN, "visibilityTimeoutSeconds": 30})
    urn = f"urn:pulumi:dev::p::{QUEUE}::orders"
    remediated = servicer.Remediate(
        proto.AnalyzeRequest(type=QUEUE, properties=queue, urn=urn, name="orders"), None
    )
    # The queue's own inputs name no consumer: no remediation of these rules can run on it.
    assert not EDIT_RULES & {r.policyName for r in remediated.remediations}
    fn, esm = struct_pb2.Struct(), struct_pb2.Struct()
    fn.update({"name": "consumer", "arn": FN_ARN, "timeout": 60})
    esm.update({"eventSourceArn": ARN, "functionName": FN_ARN})
    stack = servicer.AnalyzeStack(
        proto.AnalyzeStackRequest(
            resources=[
                proto.AnalyzerResource(type=QUEUE, properties=queue, urn=urn, name="orders"),
                proto.AnalyzerResource(
                    type=FUNCTION, properties=fn, urn=f"urn:pulumi:dev::p::{FUNCTION}::c", name="c"
                ),
                proto.AnalyzerResource(
                    type=ESM, properties=esm, urn=f"urn:pulumi:dev::p::{ESM}::m", name="m"
                ),
            ]
        ),
        None,
    )
    levels = {d.policyName: d.enforcementLevel for d in stack.diagnostics}
    # At level `remediate` a stack rule is reported as mandatory, the advisory 6x one too.
    assert levels[COVERS] == proto.MANDATORY and levels[SIX_X] == proto.MANDATORY


# --- offline: the edits, their report, their verdict ------------------------------------------


def test_remediate_edits_the_queue_and_dlq_rechecks_and_keeps_the_preview_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code, before = check(tmp_path, capsys, SHORT)
    assert code == 1 and {COVERS, SIX_X, RETENTION} <= {v["policy"] for v in before["violations"]}
    assert before["pending"] == [] and before["remediations"] == []

    code, after = check(tmp_path, capsys, SHORT, "--remediate")
    # 6 x 100 s + 20 s of the second consumer beats 6 x 60 s of the first: one edit covers both.
    assert edits(after) == {
        (COVERS, "orders", "visibilityTimeoutSeconds", 30, 620),
        (RETENTION, "orders-dlq", "messageRetentionSeconds", None, limits.SQS_MAX_RETENTION_S),
    }
    assert not EDIT_RULES & {v["policy"] for v in after["violations"]}
    # `pulumi up` will not make them: the mandatory findings stay the verdict until the
    # program does, and nothing else is left.
    assert {(v["policy"], v["name"]) for v in after["pending"]} == {
        (COVERS, "orders"),
        (RETENTION, "orders-dlq"),
    }
    assert all(v["enforcement"] == "mandatory" for v in after["pending"])
    assert code == 1 and after["verdict"] == "findings"
    assert [v for v in after["violations"] if v["enforcement"] == "mandatory"] == []

    code, text = check(tmp_path, capsys, SHORT, "--remediate", fmt="text")
    assert (
        f"[edit the program] {COVERS}: aws:sqs/queue:Queue 'orders': "
        "visibilityTimeoutSeconds 30 -> 620" in text
    )
    assert f"[mandatory until the program is edited] {RETENTION}: " in text
    assert "2 program edit(s) `pulumi up` will not make" in text and ": OK" not in text


def apply_sarif_fixes(source: str, results: list[dict[str, Any]]) -> str:
    """The program with every SARIF `fixes` replacement applied (bottom-up, so earlier
    regions keep their columns)."""
    lines = source.splitlines(keepends=True)
    replacements = [
        rep
        for r in results
        for fix in r.get("fixes", [])
        for change in fix["artifactChanges"]
        for rep in change["replacements"]
    ]
    for rep in sorted(
        replacements,
        key=lambda x: (x["deletedRegion"]["startLine"], x["deletedRegion"]["startColumn"]),
        reverse=True,
    ):
        region = rep["deletedRegion"]
        assert region["startLine"] == region["endLine"]
        i = region["startLine"] - 1
        line = lines[i]
        lines[i] = (
            line[: region["startColumn"] - 1]
            + rep["insertedContent"]["text"]
            + line[region["endColumn"] - 1 :]
        )
    return "".join(lines)


def test_the_sarif_edits_make_the_program_pass_without_remediation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code, sarif = check(tmp_path, capsys, SHORT, "--remediate", fmt="sarif")
    results = sarif["runs"][0]["results"]
    notes = [r for r in results if r["level"] == "note"]
    assert {n["ruleId"] for n in notes} == {COVERS, RETENTION}
    assert all(n["properties"]["atDeploy"] is False and n.get("fixes") for n in notes)
    pending = [r for r in results if r["properties"].get("pendingProgramEdit")]
    assert {r["ruleId"] for r in pending} == {COVERS, RETENTION}
    assert all(r["level"] == "error" for r in pending) and code == 1
    # The program the edits make passes without any remediation: the edits are the fix.
    source = (tmp_path / "p" / "__main__.py").read_text()
    edited = apply_sarif_fixes(source, results).removeprefix(HEADER)
    assert "visibility_timeout_seconds=620" in edited
    assert "message_retention_seconds=1209600" in edited
    code, report = check(tmp_path, capsys, edited)
    assert code == 0, report["violations"]
    assert not EDIT_RULES & {v["policy"] for v in report["violations"]}


def test_the_policy_config_level_remediate_edits_without_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code, report = check(tmp_path, capsys, SHORT, config={COVERS: "remediate"})
    assert edits(report) == {(COVERS, "orders", "visibilityTimeoutSeconds", 30, 620)}
    # The rules left at their levels report as before.
    assert RETENTION in {v["policy"] for v in report["violations"]}
    assert {v["policy"] for v in report["pending"]} == {COVERS} and code == 1


def test_the_advisory_rule_edits_by_its_multiplier_capped_at_sqs_maximum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    body = GOOD.replace("timeout=60,", "timeout=900,").replace(
        "visibility_timeout_seconds=360", "visibility_timeout_seconds=5400"
    )
    config = {SIX_X: {"enforcementLevel": "remediate", "multiplier": 60}}
    code, report = check(tmp_path, capsys, body, config=config)
    cap = limits.SQS_MAX_VISIBILITY_TIMEOUT_S
    assert edits(report) == {(SIX_X, "orders", "visibilityTimeoutSeconds", 5400, cap)}
    # 60 x 900 s is beyond SQS's 12 h: the capped edit still leaves the advice unmet, at the
    # level the config gives it (remediate: reported as mandatory, as pulumi-policy does).
    found = [(v["policy"], v["enforcement"]) for v in report["violations"]]
    assert [f for f in found if f[0] in EDIT_RULES] == [(SIX_X, "mandatory")]
    assert code == 1
    # Already at the cap: the advice stays unmet, and there is nothing to raise (no edit).
    at_cap = body.replace("visibility_timeout_seconds=5400", f"visibility_timeout_seconds={cap}")
    _, report = check(tmp_path, capsys, at_cap, config=config)
    assert edits(report) == set()
    assert SIX_X in {v["policy"] for v in report["violations"]}


# --- what an edit never does -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("visibility", "why"),
    [
        ("pulumi.Output.secret(30)", "a secret"),
        ("dlq.arn.apply(lambda _: 30)", "unknown in a preview"),
    ],
)
def test_an_edit_never_touches_a_secret_or_unknown_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], visibility: str, why: str
):
    body = GOOD.replace(
        "visibility_timeout_seconds=360", f"visibility_timeout_seconds={visibility}"
    )
    _, report = check(tmp_path, capsys, body, "--remediate", "--preview")
    assert edits(report) == set(), why


def test_an_unknown_batching_window_is_reported_without_a_guess(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # A preview does not know a window computed from an output: the mandatory rule still
    # reports the short timeout (it needs no window), and nothing computes an edit from it.
    body = SHORT.replace(
        "maximum_batching_window_in_seconds=20",
        "maximum_batching_window_in_seconds=dlq.arn.apply(lambda _: 20)",
    )
    code, report = check(tmp_path, capsys, body, "--remediate", "--preview")
    covers = [v for v in report["violations"] if v["policy"] == COVERS]
    assert {v["name"] for v in covers} == {"orders"} and code == 1
    assert all(" (recommended " in v["message"] or "'audit'" in v["message"] for v in covers)
    assert COVERS not in {e[0] for e in edits(report)}
    assert SIX_X not in {e[0] for e in edits(report)}


def test_a_known_computed_value_is_edited_but_no_source_edit_is_proposed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    body = GOOD.replace(
        "visibility_timeout_seconds=360", "visibility_timeout_seconds=dlq.arn.apply(lambda _: 30)"
    )
    _, sarif = check(tmp_path, capsys, body, "--remediate", fmt="sarif")
    notes = [r for r in sarif["runs"][0]["results"] if r["level"] == "note"]
    assert [(n["ruleId"], n["properties"]["after"]) for n in notes] == [(COVERS, 360)]
    assert "fixes" not in notes[0]  # an apply is not a literal to rewrite


def test_a_waived_finding_and_a_decision_are_not_edited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    waived = SHORT.replace(
        '"orders-dlq", sqs_managed_sse_enabled=True',
        '"orders-dlq", sqs_managed_sse_enabled=True,\n    tags={"idempotent-messaging:waive:'
        f'{RETENTION}": "kept 4 days by the archive contract"}}',
    )
    _, report = check(tmp_path, capsys, waived, "--remediate")
    assert RETENTION not in {e[0] for e in edits(report)}
    # A source at the 14-day maximum: only a shorter source retention fixes it, a decision.
    at_max = SHORT.replace("message_retention_seconds=345600", "message_retention_seconds=1209600")
    _, report = check(tmp_path, capsys, at_max, "--remediate")
    assert RETENTION not in {e[0] for e in edits(report)}
    assert RETENTION in {v["policy"] for v in report["violations"]}


def test_a_fifo_pair_keeps_its_retention(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    fifo = SHORT.replace(
        '"orders-dlq", sqs_managed_sse_enabled=True',
        '"orders-dlq.fifo", fifo_queue=True, sqs_managed_sse_enabled=True',
    ).replace('    "orders",\n', '    "orders.fifo",\n    fifo_queue=True,\n')
    _, report = check(tmp_path, capsys, fifo, "--remediate")
    assert RETENTION not in {e[0] for e in edits(report)}
    assert COVERS in {e[0] for e in edits(report)}


@pytest.mark.parametrize("kind", ["read", "remote", "component"])
def test_a_resource_the_program_does_not_create_is_never_edited(tmp_path: Path, kind: str):
    # The same run, with the queue recorded as what the program does not create itself: a
    # `Queue.get` (read), a multi-language component's (remote), a component (not custom).
    run = run_program(write_project(tmp_path / "p", SHORT), "dev")
    fixing = with_remediation(policy_config())
    assert {f.name for f in remediate_graph(copy.deepcopy(run), fixing)} == {"orders", "orders-dlq"}
    queue = next(r for r in run.resources if r.type == QUEUE and r.name == "orders")
    if kind == "component":
        queue.custom = False
    else:
        setattr(queue, kind, True)
    assert {f.name for f in remediate_graph(run, fixing)} == {"orders-dlq"}
