"""Waivers (docs/waivers.md) and per-rule enforcement levels, in the offline check and the pack.

A waived finding is REPORTED (advisory, `[waived: <reason> (<where>)]`), never dropped; a
waiver without a reason is refused (the finding keeps its level and says why). The same
policy-config file drives the offline check (`--config`) and the pack the Pulumi CLI runs
(`Configure` over gRPC, what `--policy-pack-config` sends).
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from idempotent_messaging.offline import Violation, effective_config, main
from idempotent_messaging.rules import pack, waivers
from tests.policy.conftest import GOOD, pairs, write_project

pytestmark = pytest.mark.policy

RunCheck = Callable[..., list[Violation]]
MODES = [pytest.param(False, id="up"), pytest.param(True, id="preview")]
POLICY_DIR = Path(__file__).resolve().parents[2] / "policy"

ALARM = "sqs-dlq-has-alarm"
TLS = "sqs-queue-tls-only"
RECEIVES = "sqs-max-receive-count-in-range"

# GOOD's DLQ alarm watched another queue: `orders-dlq` has no alarm (mandatory).
UNALARMED = GOOD.replace('dimensions={"QueueName": dlq.name}', 'dimensions={"QueueName": "x"}')
DLQ_LINE = '"orders-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True'


def tagged_dlq(tags: dict[str, str]) -> str:
    assert DLQ_LINE in UNALARMED
    return UNALARMED.replace(DLQ_LINE, f"{DLQ_LINE}, tags={tags!r}")


def by_pair(violations: list[Violation]) -> dict[tuple[str, str], Violation]:
    return {(v.policy, v.name): v for v in violations}


@pytest.fixture(autouse=True)
def _no_waiver_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(waivers.FILE_ENV, raising=False)


# --- in the program: tags -------------------------------------------------------------------


@pytest.mark.parametrize("preview", MODES)
def test_a_per_rule_tag_waives_the_finding_as_advisory_with_its_reason(
    run_check: RunCheck, preview: bool
):
    reason = "alarmed by the platform team's org-wide DLQ dashboard"
    violations = run_check(
        tagged_dlq({f"idempotent-messaging:waive:{ALARM}": reason}), preview=preview
    )
    found = by_pair(violations)[(ALARM, "orders-dlq")]
    assert found.enforcement == "advisory"  # reported, not dropped, and it does not block
    assert found.message.startswith(f"[waived: {reason} (tag idempotent-messaging:waive:{ALARM})] ")
    assert "has no deliverable CloudWatch alarm" in found.message
    assert not pairs(violations, "mandatory")


def test_the_single_tag_form_names_the_rule_before_a_colon(run_check: RunCheck):
    tags = {"idempotent-messaging:waive": f"{ALARM}: alarmed by the platform team"}
    found = by_pair(run_check(tagged_dlq(tags)))[(ALARM, "orders-dlq")]
    assert found.enforcement == "advisory"
    assert found.message.startswith("[waived: alarmed by the platform team (tag ")


def test_a_waiver_covers_only_the_rule_it_names(run_check: RunCheck):
    tags = {f"idempotent-messaging:waive:{TLS}": "TLS is enforced by an organization SCP"}
    violations = run_check(tagged_dlq(tags))
    assert by_pair(violations)[(ALARM, "orders-dlq")].enforcement == "mandatory"
    assert by_pair(violations)[(TLS, "orders-dlq")].message.startswith("[waived: TLS is ")
    # The other queue carries no waiver: its TLS finding is reported as it is.
    assert not by_pair(violations)[(TLS, "orders")].message.startswith("[waived")


@pytest.mark.parametrize(
    ("reason", "why"),
    [
        ("", "gives no reason"),
        ("ok", "shorter than 10 characters"),
    ],
)
def test_a_waiver_without_a_reason_is_refused_and_the_finding_keeps_its_level(
    run_check: RunCheck, reason: str, why: str
):
    found = by_pair(run_check(tagged_dlq({f"idempotent-messaging:waive:{ALARM}": reason})))
    v = found[(ALARM, "orders-dlq")]
    assert v.enforcement == "mandatory"
    assert f"[waiver refused (tag idempotent-messaging:waive:{ALARM}): it" in v.message
    assert why in v.message


# --- in the policy config: each rule's `waivers` --------------------------------------------


@pytest.mark.parametrize("preview", MODES)
def test_config_waivers_match_by_name_or_urn_pattern(run_check: RunCheck, preview: bool):
    config = {
        ALARM: {"waivers": [{"name": "orders-dlq", "reason": "drained daily by the ops runbook"}]},
        TLS: {"waivers": [{"urn": "*$aws:sqs/queue:Queue::orders*", "reason": "SCP forces TLS"}]},
    }
    violations = run_check(UNALARMED, preview=preview, config=config)
    assert not pairs(violations, "mandatory")
    assert {(p, n) for (p, n), v in by_pair(violations).items() if "[waived: " in v.message} == {
        (ALARM, "orders-dlq"),
        (TLS, "orders"),
        (TLS, "orders-dlq"),
    }
    alarm = by_pair(violations)[(ALARM, "orders-dlq")]
    assert f"(policy config {ALARM}.waivers[0])" in alarm.message


def test_a_config_waiver_of_a_resource_rule(run_check: RunCheck):
    body = GOOD.replace('"maxReceiveCount": 5', '"maxReceiveCount": 1')
    config = {RECEIVES: {"waivers": [{"name": "orders", "reason": "a one-shot import queue"}]}}
    v = by_pair(run_check(body, config=config))[(RECEIVES, "orders")]
    assert v.enforcement == "advisory" and v.message.startswith("[waived: a one-shot import")


def test_a_config_waiver_with_an_unknown_key_or_no_reason_is_refused(run_check: RunCheck):
    config = {
        ALARM: {
            "waivers": [
                {"name": "orders-dlq", "reason": "alarmed elsewhere, see runbook", "expires": "x"},
                {"name": "orders-*"},
            ]
        }
    }
    v = by_pair(run_check(UNALARMED, config=config))[(ALARM, "orders-dlq")]
    assert v.enforcement == "mandatory"
    assert "waivers[0]): unknown key(s) ['expires']" in v.message
    assert "waivers[1]): it gives no reason" in v.message


def test_the_waivers_property_is_part_of_every_policy_schema():
    for policy in pack.POLICIES:
        assert policy.config_schema is not None
        assert policy.config_schema.properties["waivers"]["type"] == "array", policy.name
    # The offline check validates a config file against the same schemas.
    effective_config({ALARM: {"waivers": [{"name": "x", "reason": "a good reason here"}]}})


# --- in a waiver file named by IDEMPOTENT_MESSAGING_WAIVERS ----------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_waiver_file_is_read_by_the_offline_check(
    run_check: RunCheck, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
):
    entries = [{"policy": ALARM, "name": "orders-dlq", "reason": "a replayer team owns it"}]
    path = tmp_path / f"policy-waivers{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(entries))
    else:
        path.write_text(
            "waivers:\n"
            f"  - policy: {ALARM}\n"
            "    name: orders-dlq\n"
            "    reason: a replayer team owns it\n"
        )
    monkeypatch.setenv(waivers.FILE_ENV, str(path))
    v = by_pair(run_check(UNALARMED))[(ALARM, "orders-dlq")]
    assert v.enforcement == "advisory"
    assert v.message.startswith(f"[waived: a replayer team owns it (waiver file {path} #1)] ")


def test_a_malformed_waiver_file_waives_nothing_and_every_finding_says_so(
    run_check: RunCheck, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "policy-waivers.yaml"
    path.write_text("policy: [unclosed\n")
    monkeypatch.setenv(waivers.FILE_ENV, str(path))
    v = by_pair(run_check(UNALARMED))[(ALARM, "orders-dlq")]
    assert v.enforcement == "mandatory"
    assert f"[waivers not applied: waiver file {path} is malformed: not valid YAML" in v.message
    monkeypatch.setenv(waivers.FILE_ENV, str(tmp_path / "absent.yaml"))
    v = by_pair(run_check(UNALARMED))[(ALARM, "orders-dlq")]
    assert v.enforcement == "mandatory" and "cannot be read" in v.message


def test_the_exit_code_follows_the_waived_levels(tmp_path: Path):
    project = write_project(tmp_path / "p", tagged_dlq({}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--project", str(project), "--stack", "dev", "--format", "json"]) == 1
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({ALARM: {"waivers": [{"name": "orders-dlq", "reason": "watched by ops"}]}})
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--project", str(project), "--stack", "dev", "--config", str(config)])
    assert code == 0
    assert "[waived: watched by ops" in out.getvalue()


# --- the report callback: lowering is guarded -----------------------------------------------


def test_a_waiver_that_cannot_be_applied_keeps_the_level_and_says_so():
    reported: list[tuple[str, str | None]] = []

    def report(message: str, urn: str | None = None) -> None:  # holds no diagnostics list
        reported.append((message, urn))

    config = {"waivers": [{"name": "q", "reason": "a reason of some length"}]}
    pack._report(report, ALARM, "urn:x::q", "q", None, config, "finding", "urn:x::q")
    assert reported == [
        (
            "[waiver NOT applied: this pulumi-policy's report callback cannot lower a finding's "
            "level; waiver: a reason of some length (policy config sqs-dlq-has-alarm.waivers[0])]"
            " finding",
            "urn:x::q",
        )
    ]


def test_waivers_parse_and_match_without_the_pack():
    assert waivers.from_tags({"Name": "x"}, ALARM) == []
    w = waivers.from_config({"waivers": [{"urn": "*::orders", "reason": "ten chars!"}]}, ALARM)
    assert [x.matches("urn:pulumi:dev::p::aws:sqs/queue:Queue::orders", "orders") for x in w] == [
        True
    ]
    assert not w[0].matches("urn:pulumi:dev::p::aws:sqs/queue:Queue::orders-dlq", "orders-dlq")
    with pytest.raises(ValueError, match="expected a list"):
        waivers.parse_file('{"policy": "x"}', "w.json")


# --- the pack over gRPC: what `pulumi preview --policy-pack policy` drives ------------------


@pytest.fixture(scope="module")
def analyzer() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    proc = subprocess.Popen(  # killed below: it serves until the engine stops it
        [sys.executable, str(POLICY_DIR)],
        cwd=POLICY_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().decode().strip() or "0")
        assert port > 0, proc.stderr.read().decode() if proc.stderr else "no port printed"
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=20)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def configure(stub: analyzer_pb2_grpc.AnalyzerStub, config: dict[str, Any]) -> None:
    """What the CLI sends for `--policy-pack-config FILE`: every policy's level + properties."""
    request = proto.ConfigureAnalyzerRequest()
    for name, (level, props) in effective_config(config).items():
        properties = struct_pb2.Struct()
        properties.update(props)
        request.policyConfig[name].CopyFrom(
            proto.PolicyConfig(enforcementLevel=level, properties=properties)  # type: ignore[arg-type]
        )
    stub.Configure(request)


def analyze_queue(stub: analyzer_pb2_grpc.AnalyzerStub, tags: dict[str, str]) -> dict[str, Any]:
    props = struct_pb2.Struct()
    redrive = {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:d", "maxReceiveCount": 1}
    props.update({"redrivePolicy": json.dumps(redrive), "tags": tags})
    response = stub.Analyze(
        proto.AnalyzeRequest(
            type="aws:sqs/queue:Queue",
            properties=props,
            urn="urn:pulumi:dev::p::aws:sqs/queue:Queue::orders",
            name="orders",
        )
    )
    return {d.policyName: d for d in response.diagnostics}


def test_the_pack_server_lowers_a_tag_waived_finding_to_advisory(analyzer):
    configure(analyzer, {})
    plain = analyze_queue(analyzer, {})[RECEIVES]
    assert plain.enforcementLevel == proto.MANDATORY
    waived = analyze_queue(analyzer, {f"idempotent-messaging:waive:{RECEIVES}": "one-shot import"})
    assert waived[RECEIVES].enforcementLevel == proto.ADVISORY
    assert "\n[waived: one-shot import (tag " in waived[RECEIVES].message


def test_the_pack_server_honours_config_waivers_and_levels_from_one_file(analyzer):
    configure(
        analyzer,
        {
            RECEIVES: {"waivers": [{"name": "orders", "reason": "a one-shot import queue"}]},
            "sqs-queue-encrypted": "disabled",
        },
    )
    found = analyze_queue(analyzer, {})
    assert found[RECEIVES].enforcementLevel == proto.ADVISORY
    assert "[waived: a one-shot import queue (policy config " in found[RECEIVES].message
    assert "sqs-queue-encrypted" not in found  # disabled by the same file
    configure(analyzer, {"all": "advisory"})
    assert analyze_queue(analyzer, {})[RECEIVES].enforcementLevel == proto.ADVISORY
    configure(analyzer, {RECEIVES: {"enforcementLevel": "mandatory", "min": 1}})
    assert RECEIVES not in analyze_queue(analyzer, {})  # 1 is within the configured range
