"""The pack directory stands alone: `pulumi preview --policy-pack <dir>` from any project.

The CLI creates the venv PulumiPolicy.yaml names inside the pack directory, installs the
directory's requirements.txt into it (pulumi-policy and the package without extras) and runs
``python <dir>``. Here a COPY of the directory, under a name of its own and far from this
repository, runs in an interpreter that sees only the distributions requirements.txt installs
(the package with only its base dependencies: pulumi-aws, boto3, Powertools and PyYAML are
hidden), and answers the engine's gRPC calls.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

import idempotent_messaging
from idempotent_messaging.rules.pack import POLICY_NAMES

from ..distributions import (
    ONLY_REQUIREMENTS,
    requirement_closure,
    requirement_lines,
    requirement_name,
)

pytestmark = pytest.mark.policy

PACK_DIR = Path(__file__).resolve().parents[2] / "policy"
# `python <dir>` as the CLI's language host runs it, inside the restricted interpreter.
RUN_PACK = ONLY_REQUIREMENTS + "import runpy; runpy.run_path(os.getcwd(), run_name='__main__')\n"


def pack_requirements() -> list[str]:
    return requirement_lines(PACK_DIR / "requirements.txt")


def start_pack(directory: Path, allowed: set[str]) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen(  # killed by the caller: it serves until the engine stops it
        [sys.executable, "-c", RUN_PACK, *sorted(allowed)],
        cwd=directory,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.fixture(scope="module")
def copied_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("elsewhere") / "team-pack"
    shutil.copytree(PACK_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    return copy


@pytest.fixture(scope="module")
def analyzer(copied_pack: Path) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    proc = start_pack(copied_pack, requirement_closure(pack_requirements()))
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


def test_the_manifest_follows_the_layout_pulumi_policy_new_produces() -> None:
    manifest = yaml.safe_load((PACK_DIR / "PulumiPolicy.yaml").read_text())
    # The CLI makes `venv` relative to the pack directory: nothing outside it is assumed.
    assert manifest["runtime"] == {
        "name": "python",
        "options": {"toolchain": "pip", "virtualenv": "venv"},
    }
    assert manifest["version"] == idempotent_messaging.__version__


def test_requirements_name_only_what_the_rules_need() -> None:
    names = {requirement_name(r) for r in pack_requirements()}
    assert {"pulumi", "pulumi-policy", "idempotent-messaging"} <= names
    # The package without extras: none of what only the components, runtime or engine need.
    assert "idempotent-messaging @ ${IDEMPOTENT_MESSAGING_SOURCE}" in pack_requirements()
    closure = requirement_closure(pack_requirements())
    assert not closure & {"pulumi-aws", "boto3", "aws-lambda-powertools", "moto"}


def test_a_copy_of_the_directory_serves_every_policy_with_only_its_requirements(
    analyzer: analyzer_pb2_grpc.AnalyzerStub,
) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "idempotent-messaging"
    assert [p.name for p in info.policies] == POLICY_NAMES


def test_a_copy_of_the_directory_reports_violations(
    analyzer: analyzer_pb2_grpc.AnalyzerStub,
) -> None:
    props = struct_pb2.Struct()
    redrive = {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:d", "maxReceiveCount": 1}
    props.update({"redrivePolicy": json.dumps(redrive)})
    response = analyzer.Analyze(
        proto.AnalyzeRequest(
            type="aws:sqs/queue:Queue",
            properties=props,
            urn="urn:pulumi:dev::p::aws:sqs/queue:Queue::orders",
            name="orders",
        )
    )
    # SQS allows maxReceiveCount 1..1000; the pack asks for at least 3 (one retry is too few
    # for a transient failure before the message lands in the DLQ).
    assert "sqs-max-receive-count-in-range" in {d.policyName for d in response.diagnostics}


def test_the_restriction_bites_without_pulumi_policy(copied_pack: Path) -> None:
    """The check can fail: the same copy without pulumi-policy cannot start."""
    allowed = requirement_closure(pack_requirements()) - {"pulumi-policy"}
    proc = start_pack(copied_pack, allowed)
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "No module named 'pulumi_policy'" in stderr.decode()
