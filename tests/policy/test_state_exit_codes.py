"""One exit-code table for every report path: text, JSON and SARIF for exit 0, 1, 2 and 3.

0 clean, 1 mandatory findings, 2 cannot judge (engine fault, unreadable input, partial
document), 3 configuration refused (the program raised the components' ArgumentError, a
pulumi.RunError, or a `config.require` found no value): see `idempotent_messaging.offline.report`.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from idempotent_messaging.offline import main
from idempotent_messaging.offline.project import SECRET_PLACEHOLDER
from idempotent_messaging.offline.report import (
    EXIT_CLEAN,
    EXIT_CODES,
    EXIT_FINDINGS,
    EXIT_NO_VERDICT,
    EXIT_REFUSED,
)
from tests.policy.conftest import GOOD, write_project

pytestmark = pytest.mark.policy

BAD = GOOD.replace("visibility_timeout_seconds=360", "visibility_timeout_seconds=30")
CONSUMERS_YAML = """\
config:
  aws:region: us-east-1
  fixture:consumers:
    orders:
      functionTimeoutSeconds: 60
      visibilityTimeoutSeconds: 30
"""
VISIBILITY_LINE = 6  # `visibilityTimeoutSeconds: 30` above
# The components' own stage-config path: StageConfig -> args_from_mapping -> the component.
STAGE_PROGRAM = """
from idempotent_messaging.components import IdempotentQueueConsumer, IdempotentQueueConsumerArgs
from idempotent_messaging.stage import CONSUMERS_KEY, StageConfig, args_from_mapping, config_path

stage = StageConfig.from_pulumi_config(pulumi.Config())
for name, settings in stage.consumers.items():
    path = f"{CONSUMERS_KEY}.{name}"
    defaults = {"handler": "app.handler", "code": pulumi.AssetArchive({})}
    args = args_from_mapping(IdempotentQueueConsumerArgs, settings, path, defaults=defaults)
    with config_path(path):
        IdempotentQueueConsumer(name, args)
"""
SECRET_YAML = """\
config:
  aws:region: us-east-1
  fixture:apiToken:
    secure: AAABAMNpcGhlcnRleHQtb2YtdGhlLXRva2Vu
"""


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exit-codes")
    return {
        "clean": write_project(root / "clean", GOOD),
        "findings": write_project(root / "findings", BAD),
        "fault": write_project(root / "fault", "raise RuntimeError('boom: a bug')\n"),
        "refused": write_project(root / "refused", STAGE_PROGRAM, stack_yaml=CONSUMERS_YAML),
        "argument": write_project(
            root / "argument",
            """
            from idempotent_messaging.components.errors import ArgumentError
            orders = pulumi.Config().require_object("consumers")["orders"]
            if orders["visibilityTimeoutSeconds"] < orders["functionTimeoutSeconds"]:
                raise ArgumentError(
                    "consumers.orders.visibilityTimeoutSeconds",
                    orders["visibilityTimeoutSeconds"],
                    "is below the function timeout",
                )
            """,
            stack_yaml=CONSUMERS_YAML,
        ),
        "run-error": write_project(
            root / "run-error",
            "raise pulumi.RunError('stage must be one of dev, prod')\n",
        ),
        "missing": write_project(root / "missing", "pulumi.Config().require('apiUrl')\n"),
        "secret": write_project(
            root / "secret",
            """
            from idempotent_messaging.components.errors import ArgumentError
            token = pulumi.Config().get("apiToken")
            raise ArgumentError("apiToken", token, f"must start with 'tok_' (got {token})")
            """,
            stack_yaml=SECRET_YAML,
        ),
        "value-error": write_project(root / "value-error", "raise ValueError('a plain bug')\n"),
    }


def run(project: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--project", str(project), "--stack", "dev", "--format", fmt])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_table_is_the_documented_one():
    assert {code: verdict for code, (verdict, _) in EXIT_CODES.items()} == {
        0: "clean",
        1: "findings",
        2: "no-verdict",
        3: "refused",
    }
    docs = (Path(__file__).resolve().parents[2] / "docs" / "policy.md").read_text()
    section = docs.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code, (verdict, _) in EXIT_CODES.items():
        assert f"| {code} | `{verdict}` |" in section


@pytest.mark.parametrize(
    ("key", "code"),
    [
        ("clean", EXIT_CLEAN),
        ("findings", EXIT_FINDINGS),
        ("fault", EXIT_NO_VERDICT),
        ("refused", EXIT_REFUSED),
    ],
)
@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_each_exit_code_in_each_format(key, code, fmt, projects, capsys):
    got, out, err = run(projects[key], fmt, capsys)
    assert got == code, err
    verdict = EXIT_CODES[code][0]
    if fmt == "json":
        report = json.loads(out)
        assert report["verdict"] == verdict and report["exit_code"] == code
        if code in (EXIT_NO_VERDICT, EXIT_REFUSED):
            assert report["violations"] is None
        else:
            assert isinstance(report["violations"], list)
    elif fmt == "sarif":
        sarif = json.loads(out)
        [sarif_run] = sarif["runs"]
        [invocation] = sarif_run["invocations"]
        levels = {r["level"] for r in sarif_run["results"]}
        if code == EXIT_CLEAN:
            assert invocation["executionSuccessful"] and "error" not in levels
        elif code == EXIT_FINDINGS:
            assert "error" in levels
        elif code == EXIT_NO_VERDICT:
            assert not invocation["executionSuccessful"] and sarif_run["results"] == []
            [note] = invocation["toolExecutionNotifications"]
            assert note["level"] == "error" and "boom: a bug" in note["message"]["text"]
        else:
            [result] = sarif_run["results"]
            assert result["ruleId"] == "stack-config-refused" and result["level"] == "error"
    else:
        if code in (EXIT_CLEAN, EXIT_FINDINGS):
            assert out.rstrip().endswith(": OK") == (code == EXIT_CLEAN)
        elif code == EXIT_NO_VERDICT:
            assert out == "" and "boom: a bug" in err
        else:
            assert out == "" and err.startswith("configuration refused: ")


def test_a_refused_config_is_one_line_naming_path_value_rule_and_stack_file_line(projects, capsys):
    code, _, err = run(projects["refused"], "text", capsys)
    assert code == EXIT_REFUSED
    [line] = err.strip().splitlines()  # one line, no traceback, no "report it" note
    assert "Traceback" not in err and "report it" not in err and "offline engine" not in err
    assert "consumers.orders.visibilityTimeoutSeconds=30: " in line
    assert "below the function timeout 60 s" in line
    assert line.endswith(f"(Pulumi.dev.yaml:{VISIBILITY_LINE})")


def test_the_refused_json_shape(projects, capsys):
    _, out, _ = run(projects["refused"], "json", capsys)
    refused = json.loads(out)["refused"]
    assert set(refused) == {
        "path",
        "value",
        "rule",
        "file",
        "line",
        "stack",
        "program_file",
        "program_line",
    }
    assert refused["path"].endswith("consumers.orders.visibilityTimeoutSeconds")
    assert refused["value"] == 30 and "function timeout" in refused["rule"]
    assert (refused["file"], refused["line"]) == ("Pulumi.dev.yaml", VISIBILITY_LINE)
    assert refused["stack"] == "dev" and refused["program_file"] == "__main__.py"


def test_the_refused_sarif_result_sits_at_the_keys_line(projects, capsys):
    _, out, _ = run(projects["refused"], "sarif", capsys)
    [result] = json.loads(out)["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "Pulumi.dev.yaml"
    assert location["region"]["startLine"] == VISIBILITY_LINE
    [related] = result["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "__main__.py"


@pytest.mark.parametrize(
    ("key", "fragment", "path"),
    [
        ("argument", "is below the function timeout", "consumers.orders.visibilityTimeoutSeconds"),
        ("run-error", "stage must be one of dev, prod", None),
        (
            "missing",
            "Missing required configuration variable 'fixture:apiUrl'",
            "fixture:apiUrl",
        ),
    ],
)
def test_every_kind_of_refusal_is_exit_3(key, fragment, path, projects, capsys):
    code, out, err = run(projects[key], "json", capsys)
    assert code == EXIT_REFUSED, err
    refused = json.loads(out)["refused"]
    assert refused["path"] == path and fragment in refused["rule"]
    assert "Traceback" not in err
    if key == "argument":
        assert (refused["file"], refused["line"]) == ("Pulumi.dev.yaml", VISIBILITY_LINE)
    if key == "missing":
        assert refused["value"] is None and "pulumi config set fixture:apiUrl" in refused["rule"]
        assert refused["file"] == "Pulumi.dev.yaml" and refused["line"] == 1  # `config:`
        assert err.startswith("configuration refused: Missing required configuration")
    if key == "run-error":
        assert (refused["file"], refused["line"]) == ("__main__.py", 5)


def test_a_secret_value_never_appears(projects, capsys):
    for fmt in ("text", "json", "sarif"):
        code, out, err = run(projects["secret"], fmt, capsys)
        assert code == EXIT_REFUSED
        for text in (out, err):
            assert "AAABAMNp" not in text and SECRET_PLACEHOLDER not in text
        assert "[secret]" in err
    _, out, _ = run(projects["secret"], "json", capsys)
    refused = json.loads(out)["refused"]
    assert refused["value"] == "[secret]" and refused["line"] == 3  # `fixture:apiToken:`


def test_a_plain_exception_stays_an_engine_fault(projects, capsys):
    code, out, err = run(projects["value-error"], "json", capsys)
    assert code == EXIT_NO_VERDICT
    assert json.loads(out)["error"]["stage"] == "program"
    assert "ValueError: a plain bug" in err


def test_a_partial_document_is_exit_2_in_every_format(tmp_path, capsys):
    plans = Path(__file__).parent / "plans"
    for fmt in ("text", "json", "sarif"):
        code = main(["--state", str(plans / "no-sames.json"), "--format", fmt])
        captured = capsys.readouterr()
        assert code == EXIT_NO_VERDICT and "--show-sames" in captured.err
        if fmt == "json":
            assert json.loads(captured.out)["error"]["stage"] == "partial-document"
        elif fmt == "sarif":
            invocation = json.loads(captured.out)["runs"][0]["invocations"][0]
            assert invocation["executionSuccessful"] is False
        else:
            assert captured.out == ""


def test_the_module_docstring_states_the_table():
    from idempotent_messaging.offline import report

    doc = textwrap.dedent(report.__doc__ or "")
    for code in EXIT_CODES:
        assert f"    {code}  EXIT_" in doc
