"""The CI workflows wire the pack the way the pulumi/actions documentation describes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.policy

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"
# The pack directory in the repository (it runs standalone: its own PulumiPolicy.yaml venv).
PACK_DIR = "policy"


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action)]


def test_pull_request_runs_tests_offline_check_with_sarif_and_guarded_previews():
    wf = load("pull-request.yml")
    assert "pull_request" in wf["on"]
    jobs = wf["jobs"]
    assert any(s.get("run") == "make test" for s in jobs["test"]["steps"])
    assert jobs["policy"]["permissions"]["security-events"] == "write"
    assert steps_using(jobs["policy"], "github/codeql-action/upload-sarif")
    assert "--format sarif" in next(s["run"] for s in jobs["policy"]["steps"] if "id" in s)
    preview = jobs["preview"]
    assert "fork == false" in preview["if"] and "credentials" in preview["if"]
    assert preview["permissions"]["id-token"] == "write"
    # the stage list comes from the stack files (`make -s stacks`), not from a copy here
    assert preview["strategy"]["matrix"]["stage"] == "${{ fromJSON(needs.stages.outputs.stages) }}"
    assert "stages" in preview["needs"]
    assert "make -s stacks" in jobs["stages"]["steps"][-1]["run"]
    assert "$(make -s stacks)" in next(s["run"] for s in jobs["policy"]["steps"] if "id" in s)
    (pulumi,) = steps_using(preview, "pulumi/actions")
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["policyPacks"] == PACK_DIR
    assert (WORKFLOWS.parents[1] / PACK_DIR / "PulumiPolicy.yaml").is_file()
    assert pulumi["with"]["comment-on-pr"] is True
    assert (
        "role-to-assume" in steps_using(preview, "aws-actions/configure-aws-credentials")[0]["with"]
    )


def test_pull_request_feeds_the_real_preview_with_sames_to_the_plan_check():
    # CrossGuard sees no planned operation; `pulumi preview --json` does, but only lists the
    # unchanged resources with --show-sames (without them the check cannot judge: exit 2).
    preview = load("pull-request.yml")["jobs"]["preview"]
    runs = [str(s.get("run", "")) for s in preview["steps"]]
    (json_preview,) = [r for r in runs if "pulumi preview" in r and "--json" in r]
    assert "--show-sames" in json_preview and "> preview.json" in json_preview
    # The stage reaches the shell through the environment, never by template expansion in the
    # script (zizmor's template-injection audit, which make lint runs).
    (json_step,) = [s for s in preview["steps"] if str(s.get("run", "")) == json_preview]
    assert json_step["env"]["STAGE"] == "${{ matrix.stage }}" and '/$STAGE"' in json_preview
    plan = next(s for s in preview["steps"] if s.get("id") == "plan")
    assert "idempotent-messaging-check --state preview.json" in plan["run"]
    assert "--format sarif" in plan["run"]
    names = [s.get("name", "") for s in preview["steps"]]
    assert names.index(next(n for n in names if "Plan check" in n)) > runs.index(json_preview)
    (upload,) = steps_using(preview, "github/codeql-action/upload-sarif")
    assert upload["with"]["sarif_file"] == "plan-${{ matrix.stage }}.sarif"
    assert preview["permissions"]["security-events"] == "write"
    gate = next(s for s in preview["steps"] if "steps.plan.outputs.status" in str(s.get("if")))
    assert "exit 1" in gate["run"]


def test_push_to_main_deploys_dev_then_prod_behind_an_environment_approval():
    wf = load("deploy.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    dev, prod = wf["jobs"]["up-dev"], wf["jobs"]["up-prod"]
    assert prod["needs"] == "up-dev" and prod["environment"] == "production"
    for job, stage in ((dev, "dev"), (prod, "prod")):
        (pulumi,) = steps_using(job, "pulumi/actions")
        assert pulumi["with"]["command"] == "up"
        assert pulumi["with"]["stack-name"].endswith(f"/{stage}")
        assert pulumi["with"]["policyPacks"] == PACK_DIR
        assert job["permissions"]["id-token"] == "write"
        assert steps_using(job, "aws-actions/configure-aws-credentials")
        assert any(s.get("run") == "make install" for s in job["steps"])
