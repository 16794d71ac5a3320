"""The offline check's CLI: JSON/SARIF/text output, exit codes, policy config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from policy.analyze import PolicyConfigError, effective_config
from policy.check import main
from tests.policy.conftest import GOOD, write_project

pytestmark = pytest.mark.policy

BAD = GOOD.replace("visibility_timeout_seconds=360", "visibility_timeout_seconds=30")


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli")
    return {
        "good": write_project(root / "good", GOOD + "print('chatty program')\n"),
        "bad": write_project(root / "bad", BAD),
        "broken": write_project(root / "broken", "raise RuntimeError('boom: no such bucket')\n"),
    }


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_json_report_shape_and_exit_1_on_a_mandatory_violation(projects, capsys):
    code, report = run_json(capsys, "--project", str(projects["bad"]), "--stack", "dev")
    assert code == 1
    assert report["mode"] == "up" and report["resources"] == 9
    v = next(
        v
        for v in report["violations"]
        if v["policy"] == "sqs-visibility-timeout-covers-lambda-timeout"
    )
    assert v["enforcement"] == "mandatory" and v["name"] == "orders"
    assert v["type"] == "aws:sqs/queue:Queue" and v["urn"].endswith("::orders")
    assert (
        v["file"] == "__main__.py" and v["line"] == 10
    )  # where aws.sqs.Queue("orders", ...) starts
    assert {"message", "component_file", "component_line"} <= set(v)


def test_exit_0_when_only_advisories_remain_and_preview_mode_is_reported(projects, capsys):
    code, report = run_json(
        capsys, "--project", str(projects["good"]), "--stack", "dev", "--preview"
    )
    assert code == 0 and report["mode"] == "preview"  # the program's print kept stdout JSON
    assert {v["enforcement"] for v in report["violations"]} == {"advisory"}


def test_exit_2_and_the_programs_error_when_the_program_fails(projects, capsys):
    code = main(["--project", str(projects["broken"]), "--stack", "dev"])
    captured = capsys.readouterr()
    assert code == 2
    assert "RuntimeError: boom: no such bucket" in captured.err


def test_exit_2_for_a_directory_without_pulumi_yaml(tmp_path, capsys):
    assert main(["--project", str(tmp_path), "--stack", "dev"]) == 2
    assert "no Pulumi.yaml" in capsys.readouterr().err


def test_config_file_disables_a_rule_and_raises_another_to_mandatory(projects, tmp_path, capsys):
    config = tmp_path / "policy-config.json"
    config.write_text(
        json.dumps(
            {
                "sqs-visibility-timeout-covers-lambda-timeout": "disabled",
                "sqs-visibility-timeout-6x-lambda-timeout": {
                    "enforcementLevel": "mandatory",
                    "multiplier": 2,
                },
            }
        )
    )
    code, report = run_json(
        capsys, "--project", str(projects["bad"]), "--stack", "dev", "--config", str(config)
    )
    policies = {(v["policy"], v["enforcement"]) for v in report["violations"]}
    assert ("sqs-visibility-timeout-covers-lambda-timeout", "mandatory") not in policies
    assert ("sqs-visibility-timeout-6x-lambda-timeout", "mandatory") in policies
    assert code == 1
    v = next(v for v in report["violations"] if v["policy"].endswith("6x-lambda-timeout"))
    assert "2 x timeout 60 s" in v["message"] and "= 120 s" in v["message"]


def test_config_threshold_changes_the_max_receive_count_range(projects, tmp_path, capsys):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"sqs-max-receive-count-in-range": {"min": 6, "max": 10}}))
    code, report = run_json(
        capsys, "--project", str(projects["good"]), "--stack", "dev", "--config", str(config)
    )
    assert code == 1
    assert [v["name"] for v in report["violations"] if "max-receive" in v["policy"]] == ["orders"]


def test_all_key_sets_every_policy_level(projects, tmp_path, capsys):
    config = tmp_path / "all.json"
    config.write_text(json.dumps({"all": "mandatory"}))
    code, report = run_json(
        capsys, "--project", str(projects["good"]), "--stack", "dev", "--config", str(config)
    )
    assert code == 1 and {v["enforcement"] for v in report["violations"]} == {"mandatory"}


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"no-such-policy": "mandatory"}, "unknown policies"),
        ({"sqs-max-receive-count-in-range": {"min": "three"}}, "not of type number"),
        ({"sqs-max-receive-count-in-range": {"minimum": 3}}, "unknown property"),
        ({"all": "loud"}, "enforcementLevel"),
    ],
)
def test_bad_policy_config_is_rejected_with_a_clear_error(config, fragment):
    with pytest.raises(PolicyConfigError, match=fragment):
        effective_config(config)


def test_sarif_report_locates_each_violation_for_code_scanning(projects, tmp_path, capsys):
    out = tmp_path / "policy.sarif"
    code = main(
        [
            "--project",
            str(projects["bad"]),
            "--stack",
            "dev",
            "--format",
            "sarif",
            "--output",
            str(out),
        ]
    )
    assert code == 1 and capsys.readouterr().out == ""
    sarif = json.loads(out.read_text())
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {
        "sqs-visibility-timeout-covers-lambda-timeout",
        "sqs-dlq-has-alarm",
    }
    result = next(
        r for r in run["results"] if r["ruleId"] == "sqs-visibility-timeout-covers-lambda-timeout"
    )
    assert result["level"] == "error"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "__main__.py"
    assert location["region"]["startLine"] == 10


def test_text_report_shows_file_and_line(projects, capsys):
    assert main(["--project", str(projects["bad"]), "--stack", "dev"]) == 1
    text = capsys.readouterr().out
    assert "__main__.py:10: [mandatory] sqs-visibility-timeout-covers-lambda-timeout" in text


def test_module_entry_point_runs_as_a_subprocess_with_the_documented_exit_codes(projects):
    root = Path(__file__).resolve().parents[2]
    results = {}
    for key in ("good", "bad", "broken"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "policy.check",
                "--project",
                str(projects[key]),
                "--stack",
                "dev",
                "--preview",
                "--format",
                "json",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        results[key] = proc
    assert [results[k].returncode for k in ("good", "bad", "broken")] == [0, 1, 2]
    assert json.loads(results["bad"].stdout)["mode"] == "preview"
    assert "boom: no such bucket" in results["broken"].stderr
