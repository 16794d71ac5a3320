"""The corpus: independent raw `pulumi_aws` programs, each checked offline in `up` and `preview`.

Every `tests/policy/corpus/*.py` is one complete program (it becomes the `__main__.py` of a
temporary Pulumi project). Its docstring states the AWS facts its expectations come from; its
module-level `EXPECTED` literal (never executed by the test, read with `ast`) lists:

- ``both``: (policy, logical name) pairs reported in `up` and in `preview`;
- ``up_only``: (policy, name, reason) pairs reported in `up` only, with why a preview cannot
  know (a value unknown until the resource exists);
- ``preview_only``: (policy, name, reason) pairs only a preview reports.

Every other pair is a mismatch: the reported mandatory and advisory pairs must equal these
exactly, in each mode, and the exit code must be 1 exactly when a mandatory pair is expected.
An optional `REGION = "..."` literal sets the stack's `aws:region` (default eu-west-1). The
policy config of every run disables the opt-in rules (`conftest.OPT_IN_RULES`: the advisory
`stateful-pipeline-resource-protected`, which every unprotected raw queue and table would
trigger), as a team turns a policy off, unless the program enables them with an
`ENABLED_RULES = ["..."]` literal.

Every program runs in-process through `check_report` (what the CLI's entry point runs before it
renders), once per session even across xdist workers (`tests/session_cache.py`); the CLI's
`main` must give the same report for three runs, and the real `python -m
idempotent_messaging.offline` process for one. The recorded run of each is then remediated
(every remediable rule at level `remediate`) and proved exact (`remediation_proof`): the
corpus is the adversarial half of the remediation proof, tests/policy/programs the public-like
half.
`render_report` turns the results into the precision/recall section of docs/policy.md; the
docs test fails when that section is stale (`UPDATE_POLICY_DOCS=1` rewrites it).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.offline import check_report, main
from idempotent_messaging.offline.analyzer import load_config_file
from idempotent_messaging.offline.remediation import remediable
from idempotent_messaging.rules.pack import RULES
from tests.policy.conftest import OPT_IN_RULES, policy_config
from tests.policy.remediation_proof import prove_remediation
from tests.session_cache import SessionCache, session_directory

pytestmark = pytest.mark.policy

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).parent / "corpus"
PROGRAMS = sorted(p.stem for p in CORPUS.glob("*.py") if not p.name.startswith("_"))
MODES = ("up", "preview")
LEVEL = {r.name: r.level for r in RULES}
# The CLI itself, beside the in-process `check_report` every program runs through: its `main`
# for three runs, the real `python -m` process for one (a process costs seconds of imports).
CLI_RUNS = (
    ("c09_sqs_mapping_on_failure", "up"),
    ("c09_sqs_mapping_on_failure", "preview"),
    ("c18_multi_region_same_names", "preview"),
)
SUBPROCESS_RUN = ("c18_multi_region_same_names", "up")
DOCS = ROOT / "docs" / "policy.md"
BEGIN, END = "<!-- corpus-report:begin -->", "<!-- corpus-report:end -->"
DEFAULT_REGION = "eu-west-1"

Pair = tuple[str, str]


def literal(program: str, name: str, default: Any = None) -> Any:
    tree = ast.parse((CORPUS / f"{program}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    return default


def docstring(program: str) -> str:
    return ast.get_docstring(ast.parse((CORPUS / f"{program}.py").read_text())) or ""


def expected(program: str, mode: str) -> set[Pair]:
    exp = literal(program, "EXPECTED")
    pairs = {(p, n) for p, n in exp.get("both", [])}
    pairs |= {(p, n) for p, n, _ in exp.get(f"{mode}_only", [])}
    return pairs


def project(program: str, root: Path) -> Path:
    directory = root / program
    if not directory.exists():
        directory.mkdir(parents=True)
        (directory / "Pulumi.yaml").write_text(
            f"name: {program.replace('_', '-')}\nruntime: python\n"
        )
        region = literal(program, "REGION", DEFAULT_REGION)
        (directory / "Pulumi.dev.yaml").write_text(f"config:\n  aws:region: {region}\n")
        (directory / "__main__.py").write_text((CORPUS / f"{program}.py").read_text())
    return directory


# The runtime rules judge a dated table against a day: the corpus pins the day its
# expectations were written for, so the suite does not change verdicts as the calendar moves.
CORPUS_AS_OF = "2026-11-30"
RUNTIME_RULES = ("lambda-runtime-not-blocked", "lambda-runtime-not-deprecated")


def enabled_rules(program: str) -> list[str]:
    """The opt-in rules (conftest.OPT_IN_RULES) the program enables with its `ENABLED_RULES`
    literal; the others are disabled by its policy config, as a team turns a policy off."""
    return list(literal(program, "ENABLED_RULES", []))


def argv(directory: Path, mode: str) -> list[str]:
    config = directory / "corpus-policy-config.json"
    if not config.exists():
        runtime = {rule: {"asOf": CORPUS_AS_OF} for rule in RUNTIME_RULES}
        config.write_text(json.dumps(policy_config(runtime, enabled_rules(directory.name))))
    args = ["--project", str(directory), "--stack", "dev", "--format", "json"]
    args += ["--config", str(config)]
    return args + (["--preview"] if mode == "preview" else [])


@dataclass
class Run:
    code: int
    report: dict[str, Any]
    cpu_seconds: float
    config: dict[str, Any] = field(default_factory=dict)
    # What the pack's remediations changed on the run (`Remediation.to_dict()`s), proved exact
    # by `prove_remediation`, or why the proof failed.
    remediations: list[dict[str, Any]] = field(default_factory=list)
    remediation_failure: str | None = None

    def pairs(self, level: str | None = None) -> set[Pair]:
        return {
            (v["policy"], v["name"])
            for v in self.report["violations"]
            if level is None or v["enforcement"] == level
        }


def run_in_process(directory: Path, mode: str) -> Run:
    """The check of one program in one mode, then the proof of its remediation."""
    args = argv(directory, mode)  # writes the program's policy config
    config = load_config_file(directory / "corpus-policy-config.json")
    # CPU seconds, not wall: the bound below must not fail because the machine is busy.
    start = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        report = check_report(directory, "dev", preview=mode == "preview", config=config)
    seconds = time.process_time() - start
    assert args  # the same program and config the subprocess runs
    run = Run(report.exit_code, json.loads(report.render("json")), seconds, config)
    try:
        fixes = prove_remediation(report.run, config, run.pairs())
    except AssertionError as failure:
        run.remediation_failure = f"{type(failure).__name__}: {failure}"
    else:
        run.remediations = [f.to_dict() for f in fixes]
    return run


class Corpus:
    """Each (program, mode) run computed once per session, by whichever xdist worker needs
    it first (`tests/session_cache.py`): the per-program tests of both workers split the
    corpus between them, and the whole-corpus tests read what they computed."""

    def __init__(self, cache: SessionCache, root: Path) -> None:
        self.cache, self.root = cache, root

    def _compute(self, key: str) -> dict[str, Any]:
        program, mode = key.rsplit("-", 1)
        return asdict(run_in_process(project(program, self.root), mode))

    def run(self, program: str, mode: str) -> Run:
        key = f"{program}-{mode}"
        return Run(**self.cache.get(key, lambda: self._compute(key)))

    def runs(self) -> dict[tuple[str, str], Run]:
        keys = [f"{program}-{mode}" for program in PROGRAMS for mode in MODES]
        values = self.cache.get_all(keys, self._compute)
        return {
            tuple(key.rsplit("-", 1)): Run(**value)  # type: ignore[misc]
            for key, value in values.items()
        }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    # The projects are written per worker (two workers must not write one file); the runs'
    # results are shared.
    return Corpus(
        SessionCache(session_directory(tmp_path_factory, "corpus-runs")),
        tmp_path_factory.mktemp("corpus"),
    )


def test_the_corpus_has_at_least_60_programs_and_covers_every_rule():
    assert len(PROGRAMS) >= 60
    covered = {p for prog in PROGRAMS for mode in MODES for p, _ in expected(prog, mode)}
    assert covered >= set(LEVEL), sorted(set(LEVEL) - covered)
    clean = [p for p in PROGRAMS if not any(LEVEL[r] == "mandatory" for r, _ in expected(p, "up"))]
    assert len(clean) >= 15, "correct stacks prove the absence of false alarms"


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_states_its_aws_facts_and_reasons(program: str):
    assert len(docstring(program)) > 80, "the docstring states the AWS facts behind EXPECTED"
    exp = literal(program, "EXPECTED")
    assert isinstance(exp, dict) and set(exp) <= {"both", "up_only", "preview_only"}
    assert set(enabled_rules(program)) <= set(OPT_IN_RULES), "ENABLED_RULES names opt-in rules"
    for policy, _ in exp.get("both", []):
        assert policy not in OPT_IN_RULES or policy in enabled_rules(program), (
            f"{policy} is disabled unless the program's ENABLED_RULES names it"
        )
    for entry in exp.get("both", []):
        assert entry[0] in LEVEL, entry
    for key in ("up_only", "preview_only"):
        for policy, name, reason in exp.get(key, []):
            assert policy in LEVEL and name and len(reason) > 30, (policy, name)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("program", PROGRAMS)
def test_program_reports_exactly_its_expected_pairs(program: str, mode: str, corpus: Corpus):
    run = corpus.run(program, mode)
    want = expected(program, mode)
    got = run.pairs()
    missed, unexpected = want - got, got - want
    assert not missed and not unexpected, (
        f"missed {sorted(missed)}; unexpected {sorted(unexpected)}\n"
        + "\n".join(
            v["message"] for v in run.report["violations"] if (v["policy"], v["name"]) in unexpected
        )
    )
    for level in ("mandatory", "advisory"):
        assert run.pairs(level) == {p for p in want if LEVEL[p[0]] == level}
    assert run.code == (1 if any(LEVEL[p] == "mandatory" for p, _ in want) else 0)


@pytest.mark.parametrize(("program", "mode"), CLI_RUNS)
def test_the_cli_gives_the_in_process_report(
    program: str, mode: str, corpus: Corpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """The CLI's `main` (argument parsing, the policy config file, the JSON rendering) reports
    what `check_report` reported for the same program."""
    code = main(argv(project(program, tmp_path), mode))
    run = corpus.run(program, mode)
    assert code == run.code
    assert {
        (v["policy"], v["name"]) for v in json.loads(capsys.readouterr().out)["violations"]
    } == (run.pairs())


def test_real_cli_subprocess_gives_the_in_process_report(corpus: Corpus, tmp_path: Path):
    """The real `python -m` process (a fresh interpreter, nothing of this test process loaded)
    gives the in-process report: once, for the multi-region program in `up` (a preview through
    the real process: tests/policy/test_heldout_like.py; the exit codes: test_check_cli.py)."""
    program, mode = SUBPROCESS_RUN
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "idempotent_messaging.offline",
            *argv(project(program, tmp_path), mode),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: the run takes a few seconds
    )
    run = corpus.run(program, mode)
    assert proc.returncode == run.code, proc.stderr[-2000:]
    assert {(v["policy"], v["name"]) for v in json.loads(proc.stdout)["violations"]} == (
        run.pairs()
    )


def counts(runs: dict[tuple[str, str], Run]) -> dict[tuple[str, str], dict[str, int]]:
    """(mode, level) -> true positives, false positives, false negatives over the corpus."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for (program, mode), run in runs.items():
        want = expected(program, mode)
        for level in ("mandatory", "advisory"):
            w = {p for p in want if LEVEL[p[0]] == level}
            g = run.pairs(level)
            c = out.setdefault((mode, level), {"tp": 0, "fp": 0, "fn": 0})
            c["tp"] += len(w & g)
            c["fp"] += len(g - w)
            c["fn"] += len(w - g)
    return out


def render_report(runs: dict[tuple[str, str], Run]) -> str:
    def pct(num: int, den: int) -> str:
        return f"{100 * num / den:.1f} %" if den else "n/a"

    lines = [
        BEGIN,
        f"Computed by `tests/policy/test_corpus.py` over {len(PROGRAMS)} corpus programs, each run",
        "in `up` and `preview` mode (a pair is a (policy, logical resource name) finding):",
        "",
        "| Mode | Level | Expected pairs | Reported | True pos. | False pos. | False neg. "
        "| Precision | Recall |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (mode, level), c in sorted(counts(runs).items(), key=lambda kv: (kv[0][0] != "up",)):
        expected_n, reported_n = c["tp"] + c["fn"], c["tp"] + c["fp"]
        lines.append(
            f"| {mode} | {level} | {expected_n} | {reported_n} | {c['tp']} | {c['fp']} | "
            f"{c['fn']} | {pct(c['tp'], reported_n)} | {pct(c['tp'], expected_n)} |"
        )
    clean = sum(
        1 for p in PROGRAMS if not any(LEVEL[r] == "mandatory" for r, _ in expected(p, "up"))
    )
    up_only = sum(len(literal(p, "EXPECTED").get("up_only", [])) for p in PROGRAMS)
    preview_only = sum(len(literal(p, "EXPECTED").get("preview_only", [])) for p in PROGRAMS)
    lines += [
        "",
        f"{clean} programs are correct stacks (no mandatory finding expected); {up_only} pairs "
        f"only `up` can decide and {preview_only} only a preview reports, each with its reason "
        f"in the program.",
        END,
    ]
    return "\n".join(lines)


def test_docs_report_precision_and_recall_computed_from_the_corpus(corpus: Corpus):
    text = DOCS.read_text()
    block = render_report(corpus.runs())
    if os.environ.get("UPDATE_POLICY_DOCS") == "1":
        start, end = text.index(BEGIN), text.index(END) + len(END)
        DOCS.write_text(text[:start] + block + text[end:])
        text = DOCS.read_text()
    assert block in text, "docs/policy.md is stale: rerun with UPDATE_POLICY_DOCS=1"


def test_a_corpus_run_takes_seconds_not_minutes(corpus: Corpus):
    # CPU seconds (a loaded machine does not inflate them); runs take well under 2.
    seconds = {key: run.cpu_seconds for key, run in corpus.runs().items()}
    assert max(seconds.values()) < 20, max(seconds.items(), key=lambda kv: kv[1])


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_finding_names_its_resource_and_source_line(program: str, corpus: Corpus):
    for v in corpus.run(program, "up").report["violations"]:
        assert v["urn"].endswith("::" + v["name"])
        assert f"'{v['name']}'" in v["message"], v["message"]
        assert v["file"] and v["file"].endswith(".py") and v["line"] > 0


def test_remediated_programs_lose_the_findings_fixed_and_change_nothing_else(corpus: Corpus):
    # What the pack's remediations change on each program, in each mode, was proved exact
    # (`remediation_proof`: only the properties they report changed, the findings fixed are
    # gone, nothing new, a fixed point); here, that every proof held and proved something:
    # every remediable rule fixed some program, in both modes, and each fix removed a finding.
    runs = corpus.runs()
    assert {
        key: run.remediation_failure for key, run in runs.items() if run.remediation_failure
    } == {}
    for mode in MODES:
        fixes = [f for (_, m), run in runs.items() if m == mode for f in run.remediations]
        assert {f["policy"] for f in fixes} == set(remediable()), mode
    for (program, _), run in runs.items():
        for f in run.remediations:
            if f["policy"] == "sqs-queue-tls-only":
                continue  # fixed on the aws.sqs.QueuePolicy, reported on its queue
            assert (f["policy"], f["name"]) in run.pairs(), (program, f)
