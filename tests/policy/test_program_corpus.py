"""Every valid program of the corpus gets a verdict in both modes: a report, never a crash.

tests/policy/programs/ holds programs written for this purpose (not copies of public
examples) across services: API Gateway v1/v2 and WebSocket, AppSync, ECS, EKS, RDS and Aurora,
Step Functions, EventBridge, S3 websites, CloudFront, ACM, Route 53, Cognito, Firehose, random
provider secrets, stack references, a remote component, data sources. Each exercises what
broke the offline engine on real programs (resource objects as inputs, computed outputs,
secrets of unknowns, data sources, remote components). Exit 1 is only valid WITH a report
that lists a mandatory violation; exit 2 (no verdict) fails the test.

Each recorded run is then remediated (every remediable rule at level `remediate`) and proved
exact (`remediation_proof`): these programs are the public-like half of the remediation proof.
The check runs through `check_report`, what the CLI's entry point runs before it renders
(the CLI itself is driven by tests/policy/test_check_cli.py and the corpus' subprocess runs).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from idempotent_messaging.offline import check_report
from tests.policy.remediation_proof import prove_remediation

pytestmark = pytest.mark.policy

PROGRAMS = Path(__file__).parent / "programs"
CORPUS = sorted(p.name for p in PROGRAMS.iterdir() if (p / "Pulumi.yaml").exists())


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 25, CORPUS


@pytest.mark.parametrize("mode", ["up", "preview"])
@pytest.mark.parametrize("name", CORPUS)
def test_every_program_produces_a_report_and_an_exact_remediation(name: str, mode: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        checked = check_report(PROGRAMS / name, "test", preview=mode == "preview")
    code = checked.exit_code
    report = json.loads(checked.render("json"))
    assert code in (0, 1)
    assert report["mode"] == mode and report["resources"] > 0
    mandatory = [v for v in report["violations"] if v["enforcement"] in ("mandatory", "remediate")]
    # Exit 1 means "mandatory violations found" and must come with them; exit 0 without.
    assert (code == 1) == bool(mandatory), (code, mandatory)
    pairs = {(v["policy"], v["name"]) for v in report["violations"]}
    prove_remediation(checked.run, {}, pairs)
