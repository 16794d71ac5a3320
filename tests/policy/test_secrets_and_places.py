"""Secrets as the Pulumi CLI treats them, and a place (file and line) for every finding.

- A plaintext value for a key `Pulumi.yaml` declares `secret: true` is refused before the
  program runs, as the Pulumi CLI refuses it (pulumi/sdk go/common/workspace config validation:
  "Stack '<stack>' with configuration key '<key>' must be encrypted as it's secret"): exit 3,
  one line naming the key, and the value in no output at all. A project default of such a key
  is a plaintext value too.
- A finding whose resource carries no source position (a `pulumi preview --json` or stack
  export without `sourcePosition`) is placed at the stack file's `config:` line, else at
  `Pulumi.yaml`'s first line, else at the state document's line holding its URN: never
  `:None` in text, an integer `line` in JSON, `region.startLine` in SARIF (GitHub code scanning
  annotates only results with a region).
"""

from __future__ import annotations

import json
import textwrap
import traceback
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from idempotent_messaging.offline import main, runner
from idempotent_messaging.offline.report import EXIT_FINDINGS, EXIT_REFUSED

pytestmark = pytest.mark.policy

PLANS = Path(__file__).parent / "plans"
PLAINTEXT = "correct-horse-battery-staple"
PROGRAM = 'import pulumi\npulumi.Config().require_secret("dbPassword")\n'


def project(root: Path, schema: str, stack_config: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text(f"name: shop\nruntime: python\n{textwrap.dedent(schema)}")
    (root / "Pulumi.dev.yaml").write_text(textwrap.dedent(stack_config))
    (root / "__main__.py").write_text(PROGRAM)
    return root


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


SECRET_SCHEMA = """\
config:
  dbPassword:
    type: string
    secret: true
"""


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_plaintext_value_of_a_key_declared_secret_is_refused_naming_the_key_never_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
):
    stack = f"config:\n  aws:region: us-east-1\n  shop:dbPassword: {PLAINTEXT}\n"
    root = project(tmp_path / "p", SECRET_SCHEMA, stack)
    code, out, err = run(["--project", str(root), "--stack", "dev", "--format", fmt], capsys)
    assert code == EXIT_REFUSED
    assert PLAINTEXT not in out + err
    line = err.strip().splitlines()
    assert len(line) == 1, err
    assert "configuration key 'dbPassword' must be encrypted as it's secret" in line[0]
    assert "Pulumi.dev.yaml:3" in line[0]
    if fmt == "json":
        refused = json.loads(out)["refused"]
        assert (refused["path"], refused["value"], refused["line"]) == (
            "shop:dbPassword",
            "[secret]",
            3,
        )
    if fmt == "sarif":
        result = json.loads(out)["runs"][0]["results"][0]
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_a_plaintext_default_of_a_secret_key_is_refused_and_an_encrypted_value_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    schema = SECRET_SCHEMA + f"    default: {PLAINTEXT}\n"
    root = project(tmp_path / "default", schema, "config:\n  aws:region: us-east-1\n")
    code, out, err = run(["--project", str(root), "--stack", "dev"], capsys)
    assert code == EXIT_REFUSED and PLAINTEXT not in out + err
    assert "Pulumi.yaml:" in err  # where the default is declared
    # Encrypted in the stack file (`pulumi config set --secret`): the program runs.
    encrypted = "config:\n  aws:region: us-east-1\n  shop:dbPassword:\n    secure: AAABAJ0=\n"
    root = project(tmp_path / "encrypted", SECRET_SCHEMA, encrypted)
    code, out, err = run(["--project", str(root), "--stack", "dev"], capsys)
    assert code == 0, err
    # A key the project does not declare secret may be plaintext, as for the CLI.
    plain = f"config:\n  aws:region: us-east-1\n  shop:dbPassword: {PLAINTEXT}\n"
    root = project(tmp_path / "undeclared", "config:\n  dbPassword:\n    type: string\n", plain)
    code, _, err = run(["--project", str(root), "--stack", "dev"], capsys)
    assert code == 0, err


# --- every finding has a place --------------------------------------------------------------


def _without_positions(tmp_path: Path) -> Path:
    """fifo-flip-replace.json as a CLI that records no source positions writes it."""
    doc = json.loads((PLANS / "fifo-flip-replace.json").read_text())
    for step in doc["steps"]:
        for key in ("oldState", "newState"):
            if isinstance(step.get(key), dict):
                step[key].pop("sourcePosition", None)
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def _reports(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = {}
    for fmt in ("text", "json", "sarif"):
        code, text, err = run([*argv, "--format", fmt], capsys)
        assert code == EXIT_FINDINGS, err
        out[fmt] = text if fmt == "text" else json.loads(text)
    return out


def _assert_placed(reports: dict[str, Any], file_suffix: str) -> list[dict[str, Any]]:
    assert ":None" not in reports["text"] and "<no source position>" not in reports["text"]
    violations = reports["json"]["violations"]
    plan = [v for v in violations if v["policy"] == "plan-no-data-loss"]
    assert {v["name"] for v in plan} == {"orders", "orders-dlq"}
    for v in violations:
        assert v["file"].endswith(file_suffix) and isinstance(v["line"], int) and v["line"] > 0
        assert f"{v['file']}:{v['line']}: [{v['enforcement']}] {v['policy']}" in reports["text"]
    results = reports["sarif"]["runs"][0]["results"]
    assert len(results) == len(violations)
    for result in results:
        physical = result["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"]["uri"].endswith(file_suffix)
        assert physical["region"]["startLine"] > 0
    return plan


def test_plan_findings_without_source_positions_are_placed_in_the_stack_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    root = tmp_path / "shop"
    root.mkdir()
    (root / "Pulumi.yaml").write_text("name: shop\nruntime: nodejs\n")
    (root / "Pulumi.prod.yaml").write_text("# prod\nconfig:\n  aws:region: eu-west-1\n")
    preview = _without_positions(tmp_path)
    reports = _reports(["--state", str(preview), "--project", str(root)], capsys)
    plan = _assert_placed(reports, "Pulumi.prod.yaml")
    assert {v["line"] for v in plan} == {2}  # the `config:` line


def test_plan_findings_without_a_project_are_placed_at_their_urn_in_the_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    preview = _without_positions(tmp_path)
    reports = _reports(["--state", str(preview)], capsys)
    plan = _assert_placed(reports, "preview.json")
    lines = preview.read_text().splitlines()
    for v in plan:
        assert v["urn"] in lines[v["line"] - 1]


def test_plan_findings_with_source_positions_keep_the_program_line(
    capsys: pytest.CaptureFixture[str],
):
    reports = _reports(["--state", str(PLANS / "fifo-flip-replace.json")], capsys)
    plan = _assert_placed(reports, "__main__.py")
    assert {(v["name"], v["line"]) for v in plan} == {("orders-dlq", 4), ("orders", 9)}


def test_the_memoised_frame_positions_are_the_sdks_own() -> None:
    """The offline engine memoises Pulumi's per-frame source position (offline/runner.py): for
    every frame of a real stack, a frame without a line and one without a file, the memoised
    answer equals the SDK's, asked once and asked again (from the cache)."""
    frames = [
        *traceback.extract_stack(),
        traceback.FrameSummary("/srv/app/__main__.py", None, "x", lookup_line=False),
        traceback.FrameSummary("", 3, "x", lookup_line=False),
        traceback.FrameSummary("relative/name with space.py", 7, "x", lookup_line=False),
    ]
    for _ in range(2):
        for frame in frames:
            assert runner._frame_position(frame) == runner._FRAME_POSITION(frame), frame
    assert runner._FRAME_POSITION is not runner._frame_position


def test_a_program_run_places_each_resource_where_the_sdk_does(tmp_path: Path) -> None:
    """One program, run by the engine with and without the memo: every recorded resource has
    the same file and line."""
    program = tmp_path / "__main__.py"
    program.write_text(
        textwrap.dedent(
            """
            import pulumi_aws as aws

            dlq = aws.sqs.Queue("dlq")
            queue = aws.sqs.Queue(
                "queue",
                visibility_timeout_seconds=60,
            )
            """
        )
    )
    (tmp_path / "Pulumi.yaml").write_text("name: placed\nruntime: python\n")

    def places() -> dict[str, tuple[Any, Any]]:
        run = runner.run_program(tmp_path, stack="dev", preview=False)
        return {r.name: (r.source_file, r.source_line) for r in run.resources}

    memoised = places()
    with mock.patch.object(runner, "_frame_position", runner._FRAME_POSITION):
        assert places() == memoised
    assert memoised["queue"] == (str(program), 5)
