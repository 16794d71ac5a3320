"""The pack runs as the CLI runs it: `python policy` starts a gRPC analyzer
server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from idempotent_messaging.rules.pack import POLICY_NAMES, RULES

pytestmark = pytest.mark.policy

POLICY_DIR = Path(__file__).resolve().parents[2] / "policy"


@pytest.fixture(scope="module")
def analyzer_stub():
    proc = subprocess.Popen(
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


def test_get_analyzer_info_lists_every_policy_with_its_enforcement(analyzer_stub):
    info = analyzer_stub.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "idempotent-messaging"
    assert [p.name for p in info.policies] == POLICY_NAMES
    levels = {p.name: p.enforcementLevel for p in info.policies}
    assert levels["sqs-max-receive-count-in-range"] == proto.MANDATORY
    assert levels["sqs-queue-encrypted"] == proto.ADVISORY
    schema = next(p for p in info.policies if p.name == "sqs-max-receive-count-in-range")
    assert schema.configSchema.properties["min"]["default"] == 3


def test_analyze_over_grpc_reports_an_out_of_range_max_receive_count(analyzer_stub):
    props = struct_pb2.Struct()
    redrive = {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:d", "maxReceiveCount": 1}
    props.update({"redrivePolicy": json.dumps(redrive)})
    response = analyzer_stub.Analyze(
        proto.AnalyzeRequest(
            type="aws:sqs/queue:Queue",
            properties=props,
            urn="urn:pulumi:dev::p::aws:sqs/queue:Queue::orders",
            name="orders",
        )
    )
    found = {d.policyName: d for d in response.diagnostics}
    assert "sqs-max-receive-count-in-range" in found
    assert found["sqs-max-receive-count-in-range"].enforcementLevel == proto.MANDATORY
    assert "maxReceiveCount 1" in found["sqs-max-receive-count-in-range"].message


def _configure(stub, levels: dict[str, int]) -> None:
    """Configure as the CLI does: every policy at its default level unless `levels` names it."""
    defaults = {
        r.name: proto.MANDATORY if r.level == "mandatory" else proto.ADVISORY for r in RULES
    }
    request = proto.ConfigureAnalyzerRequest()
    for name in POLICY_NAMES:
        request.policyConfig[name].CopyFrom(
            proto.PolicyConfig(enforcementLevel=levels.get(name, defaults[name]))  # type: ignore[arg-type]
        )
    stub.Configure(request)


def test_remediate_over_grpc_returns_the_fixed_properties_of_resource_and_stack_rules(
    analyzer_stub,
):
    # As the CLI does with `--policy-pack-config` setting two rules to `remediate`: the engine
    # then calls Remediate with each resource's inputs before it analyzes them.
    _configure(
        analyzer_stub,
        {
            "sqs-queue-encrypted": proto.REMEDIATE,
            "lambda-sqs-esm-reports-batch-item-failures": proto.REMEDIATE,
        },
    )
    try:
        queue = struct_pb2.Struct()
        queue.update({"name": "orders", "sqsManagedSseEnabled": False})
        response = analyzer_stub.Remediate(
            proto.AnalyzeRequest(
                type="aws:sqs/queue:Queue",
                properties=queue,
                urn="urn:pulumi:dev::p::aws:sqs/queue:Queue::orders",
                name="orders",
            )
        )
        [fixed] = response.remediations
        assert fixed.policyName == "sqs-queue-encrypted"
        assert json_format.MessageToDict(fixed.properties) == {
            "name": "orders",
            "sqsManagedSseEnabled": True,
        }
        # A stack rule that remediates (the pack's StackPolicyWithRemediation) over gRPC too.
        esm = struct_pb2.Struct()
        esm.update({"eventSourceArn": "arn:aws:sqs:us-east-1:1:orders", "functionName": "f"})
        response = analyzer_stub.Remediate(
            proto.AnalyzeRequest(
                type="aws:lambda/eventSourceMapping:EventSourceMapping",
                properties=esm,
                urn="urn:pulumi:dev::p::aws:lambda/eventSourceMapping:EventSourceMapping::m",
                name="m",
            )
        )
        [fixed] = response.remediations
        assert fixed.policyName == "lambda-sqs-esm-reports-batch-item-failures"
        props = json_format.MessageToDict(fixed.properties)
        assert props["functionResponseTypes"] == ["ReportBatchItemFailures"]
        # ... and still validates the stack: what it could not fix is mandatory at `remediate`.
        stack = analyzer_stub.AnalyzeStack(
            proto.AnalyzeStackRequest(
                resources=[
                    proto.AnalyzerResource(
                        type="aws:lambda/eventSourceMapping:EventSourceMapping",
                        properties=esm,
                        urn="urn:pulumi:dev::p::aws:lambda/eventSourceMapping:EventSourceMapping::m",
                        name="m",
                    )
                ]
            )
        )
        found = {d.policyName: d.enforcementLevel for d in stack.diagnostics}
        assert found["lambda-sqs-esm-reports-batch-item-failures"] == proto.MANDATORY
    finally:
        _configure(analyzer_stub, {})  # back to the defaults the module's other tests expect
