"""Held-out-like programs: raw pulumi_aws projects the way teams write them, checked by the CLI.

Each directory under fixtures/heldout_like/ is a complete Pulumi project (Pulumi.yaml,
__main__.py, Pulumi.dev.yaml) plus `expected.json`: the (policy, logical resource name) pairs
the offline check must report, mandatory and advisory. Pairs that a preview cannot decide
(the value is unknown until the resource exists) are listed under `*_up_only` with the reason;
in preview mode they may or may not appear. Pairs only a preview reports (a value it must take
for wrong because it is unknown) are listed under `*_preview_only` with the reason. Every other
pair must match exactly.

Every run's policy config (`--config`) disables the opt-in rules (conftest.OPT_IN_RULES), as a
team turns a policy off: these programs were written for the other rules.

Every program runs once per mode through `policy.check.main(... --format json)` in-process
(computed once per session, even across xdist workers: tests/session_cache.py); one subprocess
run proves the real CLI path gives the same report.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.offline import main
from idempotent_messaging.rules.pack import POLICIES
from tests.policy.conftest import policy_config
from tests.policy.test_corpus import PROGRAMS as CORPUS_PROGRAMS
from tests.policy.test_corpus import expected as corpus_expected
from tests.session_cache import SessionCache, session_directory

pytestmark = pytest.mark.policy

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures" / "heldout_like"
PROGRAMS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())
MODES = ["up", "preview"]
LEVELS = ("mandatory", "advisory")
MANDATORY_RULES = {
    p.name for p in POLICIES if p.enforcement_level and p.enforcement_level.value == "mandatory"
}

Pair = tuple[str, str]
Report = tuple[int, dict[str, Any]]


def expected(program: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / program / "expected.json").read_text())
    return data


def expected_pairs(program: str, level: str, mode: str) -> tuple[set[Pair], set[Pair]]:
    """(pairs that must be reported, pairs that may be reported) in this mode."""
    exp = expected(program)
    always = {(p, n) for p, n in exp.get(level, [])}
    up_only = {(d["policy"], d["name"]) for d in exp.get(f"{level}_up_only", [])}
    preview_only = {(d["policy"], d["name"]) for d in exp.get(f"{level}_preview_only", [])}
    return (always | up_only, set()) if mode == "up" else (always | preview_only, up_only)


def run_cli(argv: list[str]) -> Report:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The policy config of every run: the opt-in rules (conftest.OPT_IN_RULES) disabled, as
    a team turns a policy off; these programs were written for the other rules."""
    path = tmp_path_factory.mktemp("heldout") / "policy-config.json"
    path.write_text(json.dumps(policy_config()))
    return path


def cli_args(program: str, mode: str, config: Path) -> list[str]:
    argv = ["--project", str(FIXTURES / program), "--stack", "dev", "--format", "json"]
    argv += ["--config", str(config)]
    return argv + (["--preview"] if mode == "preview" else [])


@pytest.fixture(scope="module")
def report(
    config_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str, str], Report]:
    """Each (program, mode) report, run once per session even across xdist workers."""
    cache = SessionCache(session_directory(tmp_path_factory, "heldout-reports"))

    def get(program: str, mode: str) -> Report:
        code, rep = cache.get(
            f"{program}-{mode}", lambda: run_cli(cli_args(program, mode, config_file))
        )
        return code, rep

    return get


def reported(rep: dict[str, Any], level: str) -> set[Pair]:
    return {(v["policy"], v["name"]) for v in rep["violations"] if v["enforcement"] == level}


def test_there_are_at_least_12_programs_covering_every_mandatory_rule():
    assert len(PROGRAMS) >= 12
    covered = {
        p
        for prog in PROGRAMS
        for level in ("mandatory", "mandatory_up_only")
        for p in [
            e[0] if isinstance(e, list) else e["policy"] for e in expected(prog).get(level, [])
        ]
    }
    # The newer rules are covered by the corpus (tests/policy/corpus), which runs the same way.
    covered |= {
        p for prog in CORPUS_PROGRAMS for mode in MODES for p, _ in corpus_expected(prog, mode)
    }
    assert covered >= MANDATORY_RULES, MANDATORY_RULES - covered
    clean = [
        p
        for p in PROGRAMS
        if not expected(p)["mandatory"] and not expected(p).get("mandatory_up_only")
    ]
    assert len(clean) >= 3, "well-configured programs prove the absence of false positives"


@pytest.mark.parametrize("program", PROGRAMS)
def test_expected_file_names_known_policies_and_gives_reasons(program: str):
    exp = expected(program)
    names = {p.name for p in POLICIES}
    assert set(exp) <= {
        f"{level}{suffix}" for level in LEVELS for suffix in ("", "_up_only", "_preview_only")
    }
    for level in LEVELS:
        for policy, _ in exp.get(level, []):
            assert policy in names
            assert (policy in MANDATORY_RULES) == (level == "mandatory"), policy
        for entry in exp.get(f"{level}_up_only", []) + exp.get(f"{level}_preview_only", []):
            assert entry["policy"] in names and entry["name"] and len(entry["reason"]) > 20


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("program", PROGRAMS)
def test_mandatory_pairs_are_exactly_the_expected_ones(program: str, mode: str, report):
    code, rep = report(program, mode)
    must, may = expected_pairs(program, "mandatory", mode)
    got = reported(rep, "mandatory")
    assert rep["mode"] == mode
    assert must - got == set(), f"missed: {sorted(must - got)}"
    assert got - must - may == set(), f"unexpected: {sorted(got - must - may)}\n" + "\n".join(
        v["message"] for v in rep["violations"] if (v["policy"], v["name"]) in got - must - may
    )
    assert code == (1 if got else 0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("program", PROGRAMS)
def test_advisory_pairs_are_exactly_the_expected_ones(program: str, mode: str, report):
    _, rep = report(program, mode)
    must, may = expected_pairs(program, "advisory", mode)
    got = reported(rep, "advisory")
    assert must - got == set(), f"missed: {sorted(must - got)}"
    assert got - must - may == set(), f"unexpected: {sorted(got - must - may)}"


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_violation_names_its_resource_by_logical_name_and_source_line(program, report):
    _, rep = report(program, "up")
    for v in rep["violations"]:
        assert v["urn"].endswith("::" + v["name"])
        assert f"'{v['name']}'" in v["message"]  # the message says which resource
        assert v["file"] and v["file"].endswith(".py") and v["line"] > 0


def test_real_cli_subprocess_gives_the_in_process_report(report, config_file: Path):
    program = "fifo_output_all"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "idempotent_messaging.offline",
            *cli_args(program, "preview", config_file),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    code, rep = report(program, "preview")
    assert proc.returncode == code == 1, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == rep
