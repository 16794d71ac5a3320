"""The offline check's CLI: JSON/SARIF/text output, exit codes, policy config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.offline import PolicyConfigError, effective_config, main
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
    """The real `python -m` process exits 0 on a passing stack and 2, with the program's
    error on stderr, when the program fails; its exit 1 with the JSON report on stdout is
    proved by tests/policy/test_heldout_like.py's real process (a process costs seconds of
    imports; `main` returns each code in-process above)."""
    root = Path(__file__).resolve().parents[2]
    results = {}
    for key in ("good", "broken"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "idempotent_messaging.offline",
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
            timeout=120,  # a hang guard: a run takes a few seconds
            check=False,
        )
        results[key] = proc
    assert [results[k].returncode for k in ("good", "broken")] == [0, 2], results["broken"].stderr
    assert json.loads(results["good"].stdout)["mode"] == "preview"
    assert "boom: no such bucket" in results["broken"].stderr


# --- a crash is never a verdict ---------------------------------------------------------------


def _boom(*_args: object, **_kwargs: object) -> None:
    raise RuntimeError("injected failure")


@pytest.mark.parametrize(
    ("target", "stage"),
    [
        ("idempotent_messaging.offline.runner.load_project", "internal"),
        ("idempotent_messaging.offline.mocks.AwsMocks.new_resource", "program"),
        ("idempotent_messaging.offline.recorder.RecordingMonitor._record", "program"),
        ("pulumi_policy.policy._PolicyAnalyzerServicer.Analyze", "analysis"),
        ("pulumi_policy.policy._PolicyAnalyzerServicer.AnalyzeStack", "analysis"),
        ("idempotent_messaging.offline.cli.to_json", "internal"),
    ],
)
def test_a_failure_at_any_stage_exits_2_with_a_json_error_never_1(
    target, stage, projects, monkeypatch, capsys
):
    # The `bad` project has a mandatory violation: a failure must not turn into exit 1.
    monkeypatch.setattr(target, _boom)
    code, report = run_json(capsys, "--project", str(projects["bad"]), "--stack", "dev")
    assert code == 2
    assert report["error"]["stage"] == stage and "injected failure" in report["error"]["message"]
    assert report["violations"] is None


def test_an_invoke_that_fails_is_an_exit_2_naming_the_programs_line(monkeypatch, capsys):
    monkeypatch.setattr("idempotent_messaging.offline.mocks.AwsMocks.invoke_result", _boom)
    project = Path(__file__).parent / "programs" / "ssm_ami_data_sources"
    code = main(["--project", str(project), "--stack", "test"])
    err = capsys.readouterr().err
    assert code == 2 and "injected failure" in err and "at __main__.py:" in err


def _exploding_policies(level: str, kind: str) -> list:
    """The pack's policies plus one that raises on the queue `orders`, wrapped as the pack
    wraps its own rules (`rules.pack._resource` / `_stack`): the path a bug of ours takes."""
    from pulumi_policy import EnforcementLevel

    from idempotent_messaging.rules.pack import POLICIES, _resource, _stack

    enforcement = EnforcementLevel(level)
    if kind == "resource":

        def check(resource_type, props, name, config):
            if resource_type == "aws:sqs/queue:Queue" and name == "orders":
                raise KeyError("redrivePolicy")
            return []

        policy: Any = _resource(
            "test-exploding-rule", "raises on one queue", check, enforcement, "none"
        )
    else:

        def check_stack(graph, config):
            for node in graph.nodes:
                if node.name == "orders":
                    raise KeyError("redrivePolicy")
            return []

        policy = _stack(
            "test-exploding-rule",
            "raises while looking at one queue",
            check_stack,
            enforcement,
            "none",
        )
    return [*POLICIES, policy]


@pytest.mark.parametrize("kind", ["resource", "stack"])
def test_a_mandatory_rule_that_raises_fails_closed_naming_rule_and_resource(
    kind, projects, monkeypatch, capsys
):
    monkeypatch.setattr(
        "idempotent_messaging.offline.analyzer.POLICIES",
        _exploding_policies("mandatory", kind),
    )
    code, report = run_json(capsys, "--project", str(projects["good"]), "--stack", "dev")
    assert code == 2  # `good` has no mandatory violation: without failing closed it passes
    assert report["error"]["stage"] == "rule-failure"
    err = capsys.readouterr().err or ""
    message = report["error"]["message"]
    assert "failing closed" in message
    text = message + err
    assert "test-exploding-rule" in text


def test_the_failing_rule_and_resource_are_named_on_stderr(projects, monkeypatch, capsys):
    monkeypatch.setattr(
        "idempotent_messaging.offline.analyzer.POLICIES",
        _exploding_policies("mandatory", "stack"),
    )
    code = main(["--project", str(projects["good"]), "--stack", "dev"])
    err = capsys.readouterr().err
    assert code == 2
    queue_urn = "urn:pulumi:dev::fixture::pulumi:pulumi:Stack$aws:sqs/queue:Queue::orders"
    assert f"rule test-exploding-rule on {queue_urn}" in err
    assert '{"test-exploding-rule": "advisory"}' in err  # what to do meanwhile
    assert "KeyError: 'redrivePolicy'" in err


def test_an_advisory_rule_that_raises_is_reported_not_fatal(projects, monkeypatch, capsys):
    monkeypatch.setattr(
        "idempotent_messaging.offline.analyzer.POLICIES",
        _exploding_policies("advisory", "resource"),
    )
    code, report = run_json(capsys, "--project", str(projects["good"]), "--stack", "dev")
    assert code == 0
    assert report["rule_errors"] == [
        {
            "policy": "test-exploding-rule",
            "enforcement": "advisory",
            "urn": "urn:pulumi:dev::fixture::pulumi:pulumi:Stack$aws:sqs/queue:Queue::orders",
            "error": "KeyError: 'redrivePolicy'",
        }
    ]


# --- what the check could not see is said in every format --------------------------------------

REMOTE = Path(__file__).parent / "programs" / "remote_component_vpc"


@pytest.mark.parametrize("preview", [False, True])
def test_unexpanded_remote_components_are_listed_in_text_json_and_sarif(preview, tmp_path, capsys):
    base = ["--project", str(REMOTE), "--stack", "test"] + (["--preview"] if preview else [])
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "[not checked] netkit:ec2:Vpc 'app'" in text and "were NOT checked" in text
    assert text.rstrip().endswith("(1 remote component(s) not expanded: NOT checked)")

    code, report = run_json(capsys, *base)
    assert code == 0
    [component] = report["unexpanded_components"]
    assert component["type"] == "netkit:ec2:Vpc" and component["name"] == "app"
    assert component["file"].endswith("remote_component_vpc/__main__.py") and component["line"]

    out = tmp_path / "r.sarif"
    assert main([*base, "--format", "sarif", "--output", str(out)]) == 0
    [invocation] = json.loads(out.read_text())["runs"][0]["invocations"]
    [note] = invocation["toolExecutionNotifications"]
    assert note["descriptor"]["id"] == "unexpanded-remote-component"
    assert "netkit:ec2:Vpc 'app'" in note["message"]["text"]


def test_a_missing_package_is_exit_2_in_json_too(tmp_path, capsys):
    project = write_project(tmp_path / "eks", "import pulumi_eks as eks\n")
    code, report = run_json(capsys, "--project", str(project), "--stack", "dev")
    assert code == 2 and report["error"]["stage"] == "missing-package"
    assert "pulumi_eks" in report["error"]["message"]


# --- stacks in any language, from the CLI's JSON ------------------------------------------------

CLI_JSON = Path(__file__).parent / "fixtures" / "cli_json"


@pytest.mark.parametrize(
    ("file", "mode"), [("stack-export.json", "up"), ("preview.json", "preview")]
)
def test_a_stack_export_or_preview_json_is_checked_like_a_program(file, mode, capsys):
    # Fixtures follow the documented apitype formats (UntypedDeployment/ResourceV3 and the
    # preview digest): a TypeScript stack whose queue's visibility timeout (30 s) is below its
    # consumer's timeout (60 s), which Lambda refuses for an SQS event source.
    code, report = run_json(capsys, "--state", str(CLI_JSON / file))
    assert code == 1 and report["mode"] == mode
    mandatory = {
        (v["policy"], v["name"]) for v in report["violations"] if v["enforcement"] == "mandatory"
    }
    assert ("sqs-visibility-timeout-covers-lambda-timeout", "orders") in mandatory
    assert all(v["name"] != "retired" for v in report["violations"])  # pending deletion / deleted
    v = next(v for v in report["violations"] if v["name"] == "orders")
    assert v["file"].endswith("cli_json/index.ts") and v["line"] == 9


def test_state_values_reach_the_pack_as_the_engine_hands_them():
    from idempotent_messaging.offline.statefile import load_state
    from idempotent_messaging.rules.values import UNKNOWN

    run = load_state(CLI_JSON / "stack-export.json")
    assert (run.stack, run.project.name, run.preview) == ("prod", "orders-ts", False)
    by_name = {r.name: r for r in run.resources if r.type == "aws:sqs/queue:Queue"}
    assert set(by_name) == {"orders", "orders-dlq"}  # `retired` is pending deletion
    function = next(r for r in run.resources if r.type == "aws:lambda/function:Function")
    # A secret only the stack's secrets provider can decrypt: a secret of an unknown.
    assert function.inputs["environment"]["variables"]["API_TOKEN"]["value"] is UNKNOWN
    esm = next(r for r in run.resources if r.type.endswith("EventSourceMapping"))
    assert esm.inputs["functionName"] == "consumer-1f2e3d4"  # resource reference -> its id
    assert esm.property_dependencies["eventSourceArn"] == [by_name["orders"].urn]
    preview = load_state(CLI_JSON / "preview.json")
    assert preview.preview and preview.config.values["aws:region"] == "eu-west-1"
    queue = next(r for r in preview.resources if r.name == "orders")
    assert queue.outputs["arn"] is UNKNOWN and queue.outputs["visibilityTimeoutSeconds"] == 30


def test_a_file_that_is_neither_format_is_exit_2(tmp_path, capsys):
    bogus = tmp_path / "state.json"
    bogus.write_text('{"resources": []}')
    code, report = run_json(capsys, "--state", str(bogus))
    assert code == 2 and report["error"]["stage"] == "state-file"
    assert "neither a `pulumi stack export` file" in report["error"]["message"]


@pytest.mark.parametrize("flag", [["--stack", "dev"], ["--preview"]])
def test_state_and_a_stack_or_mode_are_exclusive(flag, capsys):
    # `--project` may come along: it says where the program's sources are (annotations).
    with pytest.raises(SystemExit) as raised:
        main(["--state", str(CLI_JSON / "preview.json"), *flag])
    assert raised.value.code == 2 and "--state reads the mode" in capsys.readouterr().err


def test_a_report_that_cannot_be_written_is_exit_2_not_1(projects, tmp_path, capsys):
    missing_dir = tmp_path / "no" / "such" / "dir" / "report.json"
    code = main(["--project", str(projects["bad"]), "--stack", "dev", "--output", str(missing_dir)])
    assert code == 2 and "cannot write the report" in capsys.readouterr().err
