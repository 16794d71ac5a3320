"""The offline policy engine: plays the Pulumi engine's part so the pack runs without the CLI.

    project   Pulumi.yaml / Pulumi.<stack>.yaml / the program's own virtualenv
    typed     plausible values typed by the provider SDK's classes (outputs, invoke results)
    answers   a user's pinned data-source results
    mocks     AwsMocks: what AWS would answer, regional and typed
    recorder  RecordingMonitor: every registration with the wire data an analyzer receives
    runner    run_program / run_function: a program run in-process, isolated
    unknowns  typed placeholders for what the checker cannot know (UnsupportedError)
    analyzer  pulumi-policy's own analyzer servicer driven in-process; rules fail closed
    statefile `--state`: stack exports and `pulumi preview --json` documents (load_documents)
    plan      the plan check `plan-no-data-loss` over a preview's steps (plan_findings)
    report    text / JSON / SARIF and the exit codes (EXIT_CODES)
    cli       `idempotent-messaging-check` / `python -m idempotent_messaging.offline`

The pack's rule modules never import this package (an import-linter contract says so): the
engine depends on the pack, never the reverse. The infra tests and the emulator deploy use the
same recorder and runner.
"""

from .analyzer import (
    PolicyConfigError,
    RuleError,
    Violation,
    analyze,
    analyze_with_errors,
    effective_config,
    load_config_file,
    make_servicer,
    pack_version,
)
from .cli import check, check_report, main, repo_root, run
from .errors import MissingConfigError, MissingPackageError, OfflineCheckError, ProgramError
from .mocks import AwsMocks, policy_document_from_args
from .plan import PLAN_POLICY, plan_findings
from .project import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_REGION,
    SECRET_PLACEHOLDER,
    STACK_TYPE,
    ProjectSpec,
    StackConfig,
    load_project,
    load_stack_config,
)
from .recorder import RecordedResource, RecordingMonitor, struct_to_plain
from .report import (
    EXIT_CLEAN,
    EXIT_CODES,
    EXIT_FINDINGS,
    EXIT_NO_VERDICT,
    EXIT_REFUSED,
    to_json,
    to_sarif,
    to_text,
)
from .runner import ProgramRun, run_program
from .statefile import (
    PlannedChange,
    StateDocument,
    StateFileError,
    load_documents,
    load_state,
)
from .unknowns import UnsupportedError

__all__ = [
    "DEFAULT_ACCOUNT_ID",
    "DEFAULT_REGION",
    "EXIT_CLEAN",
    "EXIT_CODES",
    "EXIT_FINDINGS",
    "EXIT_NO_VERDICT",
    "EXIT_REFUSED",
    "PLAN_POLICY",
    "SECRET_PLACEHOLDER",
    "STACK_TYPE",
    "AwsMocks",
    "MissingConfigError",
    "MissingPackageError",
    "OfflineCheckError",
    "PlannedChange",
    "PolicyConfigError",
    "ProgramError",
    "ProgramRun",
    "ProjectSpec",
    "RecordedResource",
    "RecordingMonitor",
    "RuleError",
    "StackConfig",
    "StateDocument",
    "StateFileError",
    "UnsupportedError",
    "Violation",
    "analyze",
    "analyze_with_errors",
    "check",
    "check_report",
    "effective_config",
    "load_config_file",
    "load_documents",
    "load_project",
    "load_stack_config",
    "load_state",
    "main",
    "make_servicer",
    "pack_version",
    "plan_findings",
    "policy_document_from_args",
    "repo_root",
    "run",
    "run_program",
    "struct_to_plain",
    "to_json",
    "to_sarif",
    "to_text",
]
