"""The README and docs/ say only what is true here.

- Every command in a ```` ```sh ```` block of README.md and docs/*.md is either RUN here (cheap,
  read-only commands, each with the output it must print) or listed in ELSEWHERE with why it
  cannot run in a unit test (it needs the Pulumi CLI, AWS, the network, or minutes) and the
  tests that stand in for it, which must exist. A command added to a page without either fails.
- ```` ```console ```` blocks belong to docs/recipes.md, whose sections
  tests/infra/test_recipes.py follows line by line; every other fenced block names its
  language, so no command hides in an unlabelled block.
- The rule table of docs/policy.md is what the rules' metadata renders (`make docs`); the
  argument table of docs/components.md lists exactly the fields of IdempotentQueueConsumerArgs.
- Relative links and their anchors resolve; no page names a path the layout no longer has;
  the repository paths and `idempotent_messaging` names a page mentions exist, and what its
  Python examples import from the package does.
- The README stays a front door: at most 250 lines.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import gc
import importlib
import io
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.rules import catalogue
from idempotent_messaging.rules.pack import POLICY_NAMES

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS_DIR = REPO / "docs"
POLICY_DOC = DOCS_DIR / "policy.md"
RECIPES = DOCS_DIR / "recipes.md"
RECIPES_TEST = REPO / "tests" / "infra" / "test_recipes.py"
CHANGELOG = REPO / "CHANGELOG.md"
MIGRATION = DOCS_DIR / "migration.md"
README_MAX_LINES = 250
COMMAND_TIMEOUT_S = 120
# Pages another engineer owns and is rewriting while this is written: their sh commands and
# stale paths are checked like every page's, but not (yet) their block labels, the paths and
# names they mention, or their examples' imports. Each entry must go once its page settles.
UNCHECKED: Mapping[str, str] = {
    "docs/runtime.md": "docs/runtime.md is being rewritten by its owner with the runtime (issue 20)"
}


def pages() -> list[Path]:
    """The pages whose commands, blocks and paths are checked."""
    return [README, *sorted(DOCS_DIR.glob("*.md"))]


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


# --- fenced blocks and the commands in them ------------------------------------------------

_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    body: tuple[str, ...]


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match:
            indent = len(match.group("indent"))
            start = i
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i][indent:])
                i += 1
            assert i < len(lines), f"{rel(path)}:{start + 1}: unclosed code block"
            info = match.group("info").split()
            found.append(Block(path, start + 1, info[0] if info else "", tuple(body)))
        i += 1
    return found


def strip_comment(line: str) -> str:
    """The line without a trailing shell comment (a `#` after whitespace, outside quotes)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def commands_of(block: Block) -> list[str]:
    """The block's commands: continuation lines joined, comments dropped, spaces collapsed."""
    commands: list[str] = []
    pending = ""
    for raw in block.body:
        line = strip_comment(raw).rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        command = " ".join((pending + line).split())
        pending = ""
        if command:
            commands.append(command)
    assert not pending.strip(), f"{rel(block.path)}:{block.line}: a continuation ends the block"
    return commands


def documented_commands() -> dict[str, list[str]]:
    """Every command of every sh block -> where it is shown (`file:line`)."""
    found: dict[str, list[str]] = {}
    for page in pages():
        for block in blocks(page):
            if block.language == "sh":
                for command in commands_of(block):
                    found.setdefault(command, []).append(f"{rel(page)}:{block.line}")
    return found


# --- what runs here, and what stands in for the rest ----------------------------------------

RUN: Mapping[str, tuple[str, ...]] = {
    # command (as the page shows it, normalised) -> lines its output must contain
    "make help": ("demo ", "test ", "docs ", "stacks "),
    "make stacks": ("dev prod",),
    "idempotent-messaging-check --project . --stack dev": ("0 mandatory", "OK"),
    ".venv/bin/idempotent-messaging-check --project . --stack dev": ("mode up", "OK"),
    ".venv/bin/idempotent-messaging-check --project . --stack dev --preview": (
        "mode preview",
        "OK",
    ),
    ".venv/bin/idempotent-messaging-check --project . --stack prod --preview": (
        "stack prod, mode preview",
        "OK",
    ),
    ".venv/bin/idempotent-messaging-check --project . --stack dev --format json": (
        '"violations": []',
    ),
    ".venv/bin/python -m idempotent_messaging.offline --help": ("--state", "--answers"),
    ".venv/bin/python -m idempotent_messaging.ops --help": ("run-month", "redrive"),
    ".venv/bin/idempotent-messaging-ops --help": ("run-month", "owed"),
    ".venv/bin/python -m idempotent_messaging.local.demo --help": ("--keep",),
    ".venv/bin/python -m tools.preview --stack dev": ("orders-dev",),
    ".venv/bin/python -m tools.preview --stack prod": ("orders-prod",),
    ".venv/bin/python -m tools.preview --stack prod --preview": ("orders-prod",),
    ".venv/bin/python -m tools.import_cycles": ("0 import cycle(s)",),
    ".venv/bin/python -m idempotent_messaging.rules.catalogue --check docs/policy.md": (),
    ".venv/bin/python -m bench.readme --check": (),
    ".venv/bin/python -m bench.chart --check": (),
}


@dataclass(frozen=True)
class Elsewhere:
    """A command that cannot run here, and what stands in for it."""

    why: str
    tests: tuple[str, ...] = ()  # pytest node ids (file::function) that exercise the same thing
    probe: tuple[str, str] | None = None  # (a cheap command run here, text its output shows)


_NO_CLI = "needs the Pulumi CLI (not installed here) and, to deploy, AWS credentials"
_AWS = "needs a deployed stack in AWS (stack outputs through `pulumi stack output`)"
_PREVIEW = (
    "tests/policy/test_pack_server.py::test_analyze_over_grpc_reports_an_out_of_range_max_receive_count",
    "tests/policy/test_pack_standalone.py::test_a_copy_of_the_directory_serves_every_policy_with_only_its_requirements",
    "tests/policy/test_reference_stacks.py::test_reference_stack_has_no_mandatory_violation",
)
_UP = (
    "tests/e2e/test_deploy.py::test_dev_stack_deploys_completely_with_its_declared_settings",
    "tests/policy/test_reference_stacks.py::test_reference_stack_has_no_mandatory_violation",
)
_INSTALL = (
    "tests/examples/test_inventory_example.py::test_the_wheel_holds_one_import_namespace",
    "tests/examples/test_inventory_example.py::test_only_idempotent_messaging_lands_in_site_packages",
    "tests/examples/test_inventory_example.py::test_the_installed_console_script_checks_the_example_clean",
)
_OPS = "tests/e2e/test_ops.py"
_DEMO = "tests/e2e/test_demo.py::test_demo_keeps_every_invariant_and_keep_serves_the_ops_cli"
_BENCH_QUICK = (
    "tests/integration/test_bench_quick.py::"
    "test_quick_run_prints_every_target_with_its_measured_value"
)
_CHECK_CLI = "tests/policy/test_check_cli.py"
_SOAK = (
    "tests/e2e/test_docs_literals.py::"
    "test_a_bounded_soak_keeps_every_invariant_under_concurrency_and_faults"
)

ELSEWHERE: Mapping[str, Elsewhere] = {
    # The quick start and the suite
    "make demo": Elsewhere(
        "starts an emulator and drives traffic (~15 s): the e2e layer", (_DEMO,)
    ),
    "make demo KEEP=1": Elsewhere("keeps an emulator running until stopped", (_DEMO,)),
    "make test": Elsewhere(
        "the whole suite (about 10 minutes); CI runs it",
        (
            "tests/policy/test_workflows.py::test_pull_request_runs_tests_offline_check_with_sarif_and_guarded_previews",
        ),
    ),
    "make install": Elsewhere(
        "creates or updates the shared .venv (network)",
        probe=("make -n -B install", "pip install"),
    ),
    "make pytest": Elsewhere(
        "the whole suite (about 8 minutes); make test runs it after lint and the policy check",
        probe=("make -n -B pytest", "pytest -q -n auto"),
    ),
    "make lint": Elsewhere(
        "ruff, mypy and lint-imports over the repository take minutes",
        (
            "tests/unit/test_import_graph.py::test_the_check_covers_every_root_package_import_linter_checks",
        ),
        probe=("make -n -B lint", "lint-imports"),
    ),
    "make docs": Elsewhere(
        "rewrites docs/ (this test checks what it would write, without writing)",
        (
            "tests/unit/test_docs.py::test_the_rule_table_is_what_the_rules_metadata_renders",
            "tests/unit/test_bench_readme.py::test_the_docs_block_is_what_the_committed_results_render",
        ),
        probe=("make -n -B docs", "idempotent_messaging.rules.catalogue --write docs/policy.md"),
    ),
    "make dist": Elsewhere("builds a wheel (~20 s)", _INSTALL[:1]),
    "make lock": Elsewhere(
        "re-resolves the lock from the registry (network)",
        probe=("make -n -B lock", "pip-compile"),
    ),
    "make fuzz FUZZ_SECONDS=60": Elsewhere(
        "a minute of fuzzing",
        ("tests/fuzz/test_fuzz_bounded.py::test_a_bounded_coverage_guided_run_finds_nothing",),
    ),
    "make kms-paths": Elsewhere(
        "every key x queue x topic x placement x table combination (minutes); make test samples",
        (
            "tests/infra/test_kms_paths.py::test_every_combination_was_built",
            "tests/infra/test_kms_paths.py::test_a_consumer_role_may_use_the_key_exactly_when_its_resources_are_encrypted",
        ),
        probe=("make -n -B kms-paths", "KMS_PATHS=full"),
    ),
    "make crash-check": Elsewhere(
        "every placement x queue x publish fault x quarantine fault at every crash point "
        "(minutes); make test samples",
        (
            "tests/integration/test_runtime_enumeration.py::test_the_sample_meets_every_fault_combination_placement_and_queue",
            "tests/integration/test_runtime_enumeration.py::test_publish_and_quarantine_faults_times_every_crash_point_keep_the_promise",
        ),
        probe=("make -n -B crash-check", "ENUMERATION=full"),
    ),
    "make policy": Elsewhere(
        "installs first, then the offline check of every stage in both modes (~10 s)",
        (
            "tests/policy/test_reference_stacks.py::test_reference_stack_has_no_mandatory_violation",
            "tests/infra/test_stage_config.py::test_the_makefile_and_the_tests_derive_the_same_stages",
        ),
    ),
    ".venv/bin/python -m pytest -m unit": Elsewhere(
        "a layer of the suite (minutes)",
        ("tests/unit/test_layer_markers.py::test_markers_follow_the_directory",),
        probe=(".venv/bin/python -m pytest --markers", "@pytest.mark.unit: pure logic"),
    ),
    ".venv/bin/pre-commit install": Elsewhere(
        "writes .git/hooks",
        probe=(".venv/bin/pre-commit validate-config .pre-commit-config.yaml", ""),
    ),
    # Installing the package elsewhere
    'pip install "idempotent-messaging[aws] @ git+$REPO_URL@$REF"': Elsewhere(
        "installs from your clone or fork and the registry (network)", _INSTALL
    ),
    'pip install "$WHEEL[aws]"': Elsewhere("installs the wheel's dependencies (network)", _INSTALL),
    'export IDEMPOTENT_MESSAGING_SOURCE="git+$REPO_URL@$REF"': Elsewhere(
        "configures what the Pulumi CLI installs into the pack's and the plugin's venv",
        (
            "tests/policy/test_pack_standalone.py::test_requirements_name_only_what_the_rules_need",
            "tests/infra/test_component_package.py::"
            "test_plugin_requirements_are_enough_to_import_and_serve_the_components",
        ),
    ),
    'export IDEMPOTENT_MESSAGING_SOURCE="file://$PWD"': Elsewhere(
        "configures what the Pulumi CLI installs into the pack's venv (this checkout)",
        (
            "tests/policy/test_pack_standalone.py::test_requirements_name_only_what_the_rules_need",
            "tests/policy/test_workflows.py::"
            "test_push_to_main_deploys_dev_then_prod_behind_an_environment_approval",
        ),
    ),
    'pulumi package add "$CHECKOUT/components"': Elsewhere(
        _NO_CLI,
        (
            "tests/infra/test_component_package.py::test_the_plugin_directory_serves_the_same_schema_over_grpc",
            "tests/infra/test_component_package.py::test_plugin_requirements_are_enough_to_import_and_serve_the_components",
        ),
    ),
    # The Pulumi CLI
    "pulumi login": Elsewhere(
        _NO_CLI,
        ("tests/infra/test_stacks.py::test_pulumi_yaml_declares_only_types_the_cli_accepts",),
    ),
    "pulumi login --local": Elsewhere(
        _NO_CLI,
        ("tests/infra/test_stacks.py::test_pulumi_yaml_declares_only_types_the_cli_accepts",),
    ),
    "pulumi stack select dev": Elsewhere(
        _NO_CLI, ("tests/infra/test_stacks.py::test_stage_files_configure_their_stage",)
    ),
    "pulumi stack init localstack": Elsewhere(
        _NO_CLI,
        (
            "tests/infra/test_stacks.py::test_localstack_stack_points_every_used_service_at_the_emulator",
        ),
    ),
    "pulumi up --stack localstack": Elsewhere(
        _NO_CLI + " and an emulator on localhost:4566",
        (
            "tests/infra/test_stacks.py::test_localstack_stack_points_every_used_service_at_the_emulator",
        ),
    ),
    "pulumi preview --policy-pack policy": Elsewhere(_NO_CLI, _PREVIEW),
    "pulumi preview --stack dev --policy-pack policy": Elsewhere(_NO_CLI, _PREVIEW),
    "pulumi preview --stack dev --policy-pack policy --policy-pack-config policy-config.json": (
        Elsewhere(
            _NO_CLI,
            (
                *_PREVIEW[:1],
                f"{_CHECK_CLI}::test_config_file_disables_a_rule_and_raises_another_to_mandatory",
            ),
        )
    ),
    "pulumi up --policy-pack policy": Elsewhere(_NO_CLI, _UP),
    "pulumi up --policy-pack policy --stack prod": Elsewhere(_NO_CLI, _UP),
    "pulumi up --stack prod --policy-pack policy": Elsewhere(_NO_CLI, _UP),
    "pulumi config set --path 'consumers.payments.handler' handlers.payments.handler --stack dev": (
        Elsewhere(
            _NO_CLI,
            ("tests/infra/test_stage_config.py::test_a_new_consumer_is_a_config_entry_only",),
        )
    ),
    "pulumi config set --path 'alarmEmails[0]' you@example.com --stack prod": Elsewhere(
        _NO_CLI,
        (
            "tests/infra/test_stacks.py::test_stage_files_configure_their_stage",
            "tests/infra/test_stacks.py::test_stage_config_refuses_a_malformed_email_list",
        ),
    ),
    # The offline check on inputs this repository does not hold
    ".venv/bin/idempotent-messaging-check --project . --stack prod --config policy-config.json": (
        Elsewhere(
            "policy-config.json is the reader's own file",
            (f"{_CHECK_CLI}::test_config_file_disables_a_rule_and_raises_another_to_mandatory",),
        )
    ),
    (
        ".venv/bin/idempotent-messaging-check --project . --stack dev --format sarif "
        "--output policy.sarif"
    ): (
        Elsewhere(
            "writes a file into the checkout",
            (f"{_CHECK_CLI}::test_sarif_report_locates_each_violation_for_code_scanning",),
        )
    ),
    ".venv/bin/idempotent-messaging-check --state stack-export.json": Elsewhere(
        "stack-export.json comes from `pulumi stack export` (fixtures in tests/policy/fixtures/)",
        (f"{_CHECK_CLI}::test_a_stack_export_or_preview_json_is_checked_like_a_program",),
    ),
    # Benchmarks
    "make bench": Elsewhere("about 17 minutes", (_BENCH_QUICK,)),
    ".venv/bin/python -m bench --quick": Elsewhere("about 2 minutes", (_BENCH_QUICK,)),
    ".venv/bin/python -m bench --only consumer": Elsewhere(
        "minutes", (_BENCH_QUICK,), probe=(".venv/bin/python -m bench --help", "--only")
    ),
    ".venv/bin/python -m bench --stock-moto": Elsewhere(
        "minutes", (_BENCH_QUICK,), probe=(".venv/bin/python -m bench --help", "--stock-moto")
    ),
    ".venv/bin/python -m bench --model-inputs my.toml": Elsewhere(
        "minutes; my.toml is the reader's own file",
        (_BENCH_QUICK,),
        probe=(".venv/bin/python -m bench --help", "--model-inputs"),
    ),
    ".venv/bin/python -m bench.readme": Elsewhere(
        "rewrites docs/bench.md",
        ("tests/unit/test_bench_readme.py::test_the_check_fails_when_the_results_change",),
    ),
    "make bench-chart": Elsewhere(
        "rewrites docs/bench-cost.svg and docs/bench.md (the check runs here)",
        (
            "tests/unit/test_bench_chart.py::test_the_check_fails_when_the_results_change",
            "tests/unit/test_bench_chart.py::test_the_committed_chart_and_table_are_what_the_results_render",
        ),
        probe=("make -n -B bench-chart", "bench.chart"),
    ),
    # The ops CLI against AWS
    "python -m idempotent_messaging.ops consumers --stack prod": Elsewhere(
        _AWS,
        (
            f"{_OPS}::test_consumers_lists_each_consumer_with_queue_depths",
            f"{_OPS}::test_real_stacks_are_read_through_pulumi_stack_output",
        ),
    ),
    (
        "python -m idempotent_messaging.ops consumers --stack localstack "
        "--endpoint-url http://localhost:4566"
    ): (
        Elsewhere(
            "needs LocalStack and a deployed localstack stack",
            (f"{_OPS}::test_consumers_lists_each_consumer_with_queue_depths",),
        )
    ),
    "python -m idempotent_messaging.ops peek orders --stack prod": Elsewhere(
        _AWS, (f"{_OPS}::test_peek_shows_reasons_and_consumes_nothing",)
    ),
    "python -m idempotent_messaging.ops peek orders --stack prod --max 10 --show-body --json": (
        Elsewhere(_AWS, (f"{_OPS}::test_peek_shows_reasons_and_consumes_nothing",))
    ),
    "python -m idempotent_messaging.ops redrive orders --stack prod --dry-run": Elsewhere(
        _AWS, (f"{_OPS}::test_dry_run_moves_nothing_and_rate_limits_the_move",)
    ),
    "python -m idempotent_messaging.ops redrive orders --stack prod --rate 50": Elsewhere(
        _AWS,
        (
            f"{_OPS}::test_dry_run_moves_nothing_and_rate_limits_the_move",
            "tests/unit/test_ops_redrive_first_seen.py::"
            "test_redrive_defaults_to_the_manual_move_and_never_starts_a_native_task",
        ),
    ),
    (
        "python -m idempotent_messaging.ops redrive monthly_charge_consumer --stack prod "
        "--method manual --max 100 --dedup-window new-id"
    ): (
        Elsewhere(
            _AWS, (f"{_OPS}::test_fifo_redrive_inside_the_dedup_window_skips_or_uses_new_ids",)
        )
    ),
    "python -m idempotent_messaging.ops purge orders --stack dev": Elsewhere(
        _AWS + "; asks on a terminal",
        (f"{_OPS}::test_purge_asks_for_the_queue_name_and_purges_only_when_it_is_typed",),
    ),
    "python -m idempotent_messaging.ops purge orders --stack dev --yes": Elsewhere(
        _AWS, (f"{_OPS}::test_purge_needs_confirmation_or_yes",)
    ),
    "python -m idempotent_messaging.ops purge orders --queue source --yes": Elsewhere(
        _AWS, (f"{_OPS}::test_purge_needs_confirmation_or_yes",)
    ),
    (
        "python -m idempotent_messaging.ops owed --table orders-prod-order_records "
        '--state-table "$STATE_TABLE" --stack prod'
    ): (
        Elsewhere(
            _AWS,
            (
                "tests/integration/test_ops_owed.py::test_the_cli_lists_owed_claims_of_a_business_table",
            ),
        )
    ),
    (
        "python -m idempotent_messaging.ops owed --table orders-prod-order_records "
        '--state-table "$STATE_TABLE" --stack prod --republish --topic-arn "$TOPIC_ARN"'
    ): (
        Elsewhere(
            _AWS,
            (
                "tests/integration/test_ops_owed.py::test_owed_claims_kept_in_business_rows_are_listed_and_republished",
            ),
        )
    ),
    "make run-month MONTH=2026-06 STACK=prod TARGET=aws": Elsewhere(
        _AWS,
        (f"{_OPS}::test_run_month_on_aws_invokes_the_stack_dispatcher_with_the_manual_payload",),
    ),
    (
        "python -m idempotent_messaging.ops run-month --month 2026-06 --stack dev "
        "--target emulator --seed 12"
    ): (Elsewhere("starts an emulator and deploys the stack (~15 s)", (_DEMO,))),
    # The soak (docs/soak.md)
    "make soak": Elsewhere(
        "thousands of messages under faults (minutes)",
        (_SOAK,),
        probe=("make -n -B soak", "idempotent_messaging.local.soak"),
    ),
    "make soak SEED=20260601 EVENTS=2000": Elsewhere(
        "replays a full-size soak (minutes)",
        (_SOAK,),
        probe=("make -n -B soak SEED=7 EVENTS=9", "--seed 7 --events 9"),
    ),
}


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = os.pathsep.join((str(REPO / ".venv" / "bin"), env.get("PATH", "")))
    return env


def shell(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=REPO,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def run_documented(command: str) -> subprocess.CompletedProcess[str]:
    """`command` as shown, run once per process for every spelling of the same executable
    (`idempotent-messaging-check`, found on PATH in .venv/bin, and `.venv/bin/...` are one).

    A command that runs this project's Python (a console script of the package, or the venv's
    `python -m` of one of its modules) runs in this process, as its entry point with the
    command's arguments: a new interpreter would spend seconds importing Pulumi and the
    provider for each. The installed scripts themselves run as processes elsewhere
    (tests/examples/test_billing_example.py, tests/policy/test_heldout_like.py)."""
    first, _, rest = command.partition(" ")
    found = REPO / first if "/" in first else shutil.which(first, path=environment()["PATH"])
    key = (str(found or first), rest)
    if key not in _RUNS:  # the first spelling shown runs; the same executable is the same run
        entry = python_entry(command)
        _RUNS[key] = shell(command) if entry is None else in_process(command, *entry)
    return _RUNS[key]


VENV_BIN = REPO / ".venv" / "bin"
OWN_MODULES = ("idempotent_messaging", "tools", "bench")


def python_entry(command: str) -> tuple[str, list[str]] | None:
    """(``module:function`` or ``module``, the arguments) when `command` runs this project's
    Python: a console script the package declares (installed in .venv/bin), or `.venv/bin/python
    -m` one of its modules."""
    words = shlex.split(command)
    name = words[0].removeprefix(".venv/bin/")
    if name == "python" and words[0].startswith(".venv/") and words[1:2] == ["-m"]:
        module = words[2]
        return (module, words[3:]) if module.split(".")[0] in OWN_MODULES else None
    scripts = metadata.entry_points(group="console_scripts")
    declared = [e for e in scripts.select(name=name) if e.module.startswith(OWN_MODULES[0])]
    if not declared:
        return None
    assert (VENV_BIN / name).is_file(), f"`{command}`: {name} is not installed in .venv/bin"
    return declared[0].value, words[1:]


def in_process(command: str, target: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a module (``python -m``) or a console script's `main` with `args`, from the
    repository root, its output captured; what it changes in this process is put back."""
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd, saved_gc = sys.argv[:], os.getcwd(), gc.get_threshold()
    saved_env = dict(os.environ)
    code: Any = 0
    try:
        os.chdir(REPO)
        sys.argv = [target.split(":")[0], *args]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if ":" in target:
                    # The script's module's `main(argv)`, what its process entry wraps (which
                    # may also tidy the process for exit, e.g. close every event loop).
                    code = importlib.import_module(target.split(":")[0]).main(args)
                else:
                    with warnings.catch_warnings():
                        # A module this process imported already (the test imports the
                        # catalogue) runs as a fresh `__main__` copy all the same.
                        warnings.filterwarnings("ignore", ".* found in sys.modules", RuntimeWarning)
                        runpy.run_module(target, run_name="__main__", alter_sys=True)
            except SystemExit as exit_:
                code = exit_.code
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        gc.set_threshold(*saved_gc)
        # Only what the command changed (threads of this process may be reading the rest).
        for key in set(os.environ) - set(saved_env):
            del os.environ[key]
        for key, value in saved_env.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    stderr = err.getvalue() + ("" if isinstance(code, int) or code is None else str(code))
    return subprocess.CompletedProcess(command, returncode, out.getvalue(), stderr)


_RUNS: dict[tuple[str, str], subprocess.CompletedProcess[str]] = {}


def test_every_shell_command_is_run_here_or_mapped_to_what_stands_in_for_it() -> None:
    documented = documented_commands()
    unaccounted = {
        command: where
        for command, where in documented.items()
        if command not in RUN and command not in ELSEWHERE
    }
    assert not unaccounted, (
        "commands shown in the docs that this test neither runs (RUN) nor maps to a substitute "
        "(ELSEWHERE): "
        + "; ".join(f"`{c}` ({', '.join(w)})" for c, w in sorted(unaccounted.items()))
    )
    assert not set(RUN) & set(ELSEWHERE)


def test_the_lists_name_only_commands_the_docs_show() -> None:
    documented = documented_commands()
    stale = sorted(c for c in (*RUN, *ELSEWHERE) if c not in documented)
    assert not stale, f"listed here but shown in no sh block: {stale}"


# Documented commands that fail today because of a bug outside the docs, with the bug. Strict:
# once the bug is fixed the test passes, the xfail fails, and the entry must go.
KNOWN_BROKEN: Mapping[str, str] = {}


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=KNOWN_BROKEN[c]))
        if c in KNOWN_BROKEN
        else c
        for c in sorted(RUN)
    ],
)
def test_a_documented_command_runs_here(command: str) -> None:
    done = run_documented(command)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{output[-3000:]}"
    for expected in RUN[command]:
        assert expected in output, f"`{command}` printed no {expected!r}:\n{output[-3000:]}"


def _test_exists(node_id: str) -> bool:
    path, _, name = node_id.partition("::")
    file = REPO / path
    if not file.exists():
        return False
    if not name:
        return True
    return re.search(rf"^def {re.escape(name)}\(", file.read_text(), re.M) is not None


@pytest.mark.parametrize("command", sorted(ELSEWHERE))
def test_a_command_that_cannot_run_here_names_what_stands_in_for_it(command: str) -> None:
    substitute = ELSEWHERE[command]
    assert substitute.why
    assert substitute.tests or substitute.probe, f"`{command}`: nothing stands in for it"
    missing = [t for t in substitute.tests if not _test_exists(t)]
    assert not missing, f"`{command}`: the tests standing in for it do not exist: {missing}"
    if substitute.probe:
        probe, expected = substitute.probe
        done = shell(probe)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"probe `{probe}` exited {done.returncode}:\n{output}"
        assert expected in output, f"probe `{probe}` printed no {expected!r}:\n{output}"


def test_the_command_extraction_joins_continuations_and_drops_comments() -> None:
    block = Block(
        README,
        1,
        "sh",
        (
            "# a comment line",
            "make demo    # with a comment",
            'pip install "a # not a comment" \\',
            "    --quiet",
            "",
            "echo 'x' # y",
        ),
    )
    assert commands_of(block) == [
        "make demo",
        'pip install "a # not a comment" --quiet',
        "echo 'x'",
    ]


# --- blocks ---------------------------------------------------------------------------------


def _recipe_sections() -> set[str]:
    return set(re.findall(r'follow\("([^"]+)"', RECIPES_TEST.read_text()))


def test_every_code_block_names_its_language() -> None:
    unlabelled = [
        f"{rel(b.path)}:{b.line}"
        for p in pages()
        if rel(p) not in UNCHECKED
        for b in blocks(p)
        if not b.language
    ]
    assert not unlabelled, f"code blocks without a language (sh, text, python, ...): {unlabelled}"


def test_console_blocks_are_only_in_the_recipes_which_their_test_follows() -> None:
    for page in pages():
        for block in blocks(page):
            if block.language == "console":
                assert page == RECIPES, f"{rel(page)}:{block.line}: console block outside recipes"
    followed = _recipe_sections()
    sections = re.split(r"^## ", RECIPES.read_text(), flags=re.M)[1:]
    with_console = {s.split("\n", 1)[0] for s in sections if "```console" in s}
    assert with_console and with_console <= followed, (with_console, followed)


# --- generated text -------------------------------------------------------------------------


def test_the_rule_table_is_what_the_rules_metadata_renders() -> None:
    assert catalogue.current_block(POLICY_DOC.read_text()) == catalogue.render(), (
        "docs/policy.md's rule table is stale: run `make docs`"
    )


def test_the_rule_table_lists_every_rule_the_pack_serves_with_its_level() -> None:
    block = catalogue.render()
    rules = {r.name: r for r in catalogue.rules()}
    assert sorted(rules) == sorted(POLICY_NAMES)
    for name, rule in rules.items():
        assert f"| `{name}` | {rule.level} |" in block, name
    assert f"{len(rules)} rules:" in block
    assert catalogue.START not in README.read_text(), "the README links the table, not holds it"


def test_the_catalogue_check_fails_when_a_rule_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = tmp_path / "policy.md"
    page.write_text("intro\n" + catalogue.render() + "\noutro\n")
    assert catalogue.main(["--check", str(page)]) == 0
    changed = [dataclasses.replace(r, level="advisory") for r in catalogue.rules()]
    monkeypatch.setattr(catalogue, "rules", lambda: changed)
    assert catalogue.main(["--check", str(page)]) == 1
    assert catalogue.main(["--write", str(page)]) == 0
    assert catalogue.main(["--check", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n")
    assert f"{len(changed)} rules: 0 mandatory" in text
    (tmp_path / "empty.md").write_text("no markers\n")
    assert catalogue.main(["--check", str(tmp_path / "empty.md")]) == 2


def test_table_cells_escape_pipes_and_stay_on_one_line() -> None:
    assert catalogue._cell("a|b\n  c") == "a\\|b c"


# --- links, stale paths, named paths --------------------------------------------------------

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def prose(path: Path) -> str:
    """The page without its fenced blocks (links and paths inside code are not prose)."""
    text = path.read_text()
    for block in blocks(path):
        text = text.replace("\n".join(block.body), "")
    return text


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose(path).splitlines():
        match = re.match(r"^#{1,6} (.+)$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def test_relative_links_and_their_anchors_resolve() -> None:
    broken: list[str] = []
    for page in [*pages(), CHANGELOG]:
        text = _INLINE_CODE.sub("", prose(page))
        for target in _LINK.findall(text):
            if re.match(r"^[a-z]+:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            file = (page.parent / file_part).resolve() if file_part else page
            if not file.exists():
                broken.append(f"{rel(page)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{rel(page)}: {target} (no such heading)")
    assert not broken, broken


def test_the_slug_is_githubs() -> None:
    assert slug("In CI (`.github/workflows/`)") == "in-ci-githubworkflows"
    assert slug("Stacks in any language: `--state FILE`") == "stacks-in-any-language---state-file"
    assert slug("Bring your own code: the function's archive") == (
        "bring-your-own-code-the-functions-archive"
    )


_FORMER_POLICY_MODULE = (
    r"(?<![\w.])policy\.(limits|offline|rules|pack|check|program|analyze|graph|values)\b"
)
# Names of the layout before 0.2.0 (docs/migration.md maps each to its successor).
STALE = {
    r"Consumer runtime \(`handlers/`\)": "the runtime is src/idempotent_messaging/runtime/",
    r"idempotent_messaging[./]policy\b": "the pack directory is policy/, the rules "
    "idempotent_messaging.rules, the engine idempotent_messaging.offline",
    r"(?<![\w./-])emulator/": "the emulator is idempotent_messaging.local",
    r"(?<![\w.-])provider/|/provider(?![\w.])": "the component package directory is components/",
    _FORMER_POLICY_MODULE: "a module of the former idempotent_messaging.policy package",
    r"python -m emulator\b": "python -m idempotent_messaging.local.demo",
    r"\bOWNER\b": "a placeholder: name REPO_URL / REF variables instead",
    r"@v\d+\.\d+": "a tag that does not exist: use $REF",
}
# Pages other engineers own, with the stale names they still carry: each entry must go once
# its page is fixed (the test below fails on an entry no longer needed).
PENDING: Mapping[tuple[str, str], str] = {}


def _stale_hits() -> Iterator[tuple[str, str, int, str]]:
    for page in pages():
        if page == MIGRATION:  # names the old paths on purpose
            continue
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for pattern in STALE:
                if re.search(pattern, line):
                    yield rel(page), pattern, number, line.strip()


def test_no_page_names_a_path_the_layout_no_longer_has() -> None:
    hits = [h for h in _stale_hits() if (h[0], h[1]) not in PENDING]
    assert not hits, "\n".join(f"{p}:{n}: {STALE[pat]}: {line}" for p, pat, n, line in hits)


def test_every_pending_exception_is_still_needed() -> None:
    needed = {(h[0], h[1]) for h in _stale_hits()}
    assert {pattern for _, pattern in PENDING} <= set(STALE)
    done = sorted(set(PENDING) - needed)
    assert not done, f"fixed: remove these PENDING entries: {done}"


_ROOTS = ("src", "tests", "bench", "tools", "handlers", "components", "policy", "examples",
          "docs", ".github", ".ci")  # fmt: skip
_PATH = re.compile(rf"^(?:{'|'.join(re.escape(r) for r in _ROOTS)})/[\w./*-]*$")
_ROOT_FILES = {"Pulumi.yaml", "Makefile", "pyproject.toml", "requirements.lock", "__main__.py",
               "README.md", "CHANGELOG.md", "Pulumi.dev.yaml", "Pulumi.prod.yaml",
               "Pulumi.localstack.yaml", ".pre-commit-config.yaml"}  # fmt: skip
_NAME = re.compile(r"^idempotent_messaging(?:\.\w+)+")  # a trailing `.*` is left out


def _created_by_recipes() -> set[str]:
    return {m for m in re.findall(r'^```\w+ title="([^"]+)"', RECIPES.read_text(), re.M)}


@functools.cache
def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def _missing_names() -> list[tuple[str, str]]:
    created = _created_by_recipes()
    missing: list[tuple[str, str]] = []
    for page in pages():
        if page == MIGRATION or rel(page) in UNCHECKED:  # MIGRATION: the old layout
            continue
        for code in _INLINE_CODE.findall(prose(page)):
            token = code.strip("`").strip()
            if "<" in token or "venv" in token or token in created:
                continue
            name = None if token.endswith(".py") else _NAME.match(token.split(":")[0])
            if _PATH.match(token) or token in _ROOT_FILES:
                if not any(REPO.glob(token.rstrip("/"))):
                    missing.append((rel(page), token))
            elif name is not None and not _resolves(name.group(0)):
                missing.append((rel(page), token))
    return missing


def test_the_paths_and_names_a_page_mentions_exist() -> None:
    missing = _missing_names()
    assert not missing, [f"{page}: {token}" for page, token in missing]


def test_the_python_examples_parse_and_import_what_exists() -> None:
    broken: list[str] = []
    for page in pages():
        if page == MIGRATION or rel(page) in UNCHECKED:
            continue
        for block in blocks(page):
            if block.language != "python":
                continue
            where = f"{rel(page)}:{block.line}"
            try:
                tree = ast.parse("\n".join(block.body))
            except SyntaxError as exc:
                broken.append(f"{where}: {exc}")
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "idempotent_messaging"
                ):
                    for alias in node.names:
                        if not _resolves(f"{node.module}.{alias.name}"):
                            broken.append(f"{where}: from {node.module} import {alias.name}")
    assert not broken, broken


def test_the_consumer_arguments_table_lists_every_field_of_its_args() -> None:
    from idempotent_messaging.components import IdempotentQueueConsumerArgs

    text = (DOCS_DIR / "components.md").read_text()
    table = text.split("\n### Arguments\n", 1)[1].split("\n### ", 1)[0]
    documented = {
        name
        for line in table.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`(\w+)`", line.split(" | ", 1)[0])
    }
    fields = {f.name for f in dataclasses.fields(IdempotentQueueConsumerArgs)}
    assert documented == fields, (
        f"docs/components.md's argument table: missing {sorted(fields - documented)}, "
        f"no such field {sorted(documented - fields)}"
    )


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    commands = {c for b in blocks(README) if b.language == "sh" for c in commands_of(b)}
    for expected in (
        "make demo",
        "make test",
        "pulumi stack select dev",
        "pulumi preview --policy-pack policy",
        "pulumi up --policy-pack policy",
        'pip install "idempotent-messaging[aws] @ git+$REPO_URL@$REF"',
    ):
        assert expected in commands, expected
    for page in ("docs/policy.md", "docs/bench.md", "docs/operations.md", "docs/development.md"):
        assert f"({page}" in text, page
