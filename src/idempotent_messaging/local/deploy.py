"""Deploy a Pulumi stack INTO the emulator by running its own program under materialising mocks.

The same `__main__.py` and `Pulumi.<stack>.yaml` that `pulumi up` runs are executed by
`policy.offline.runner.run_program` (the project's one generic in-process runner); its mocks are
`EmulatorMocks`, which create each resource in moto with exactly the declared settings and
return the real ARNs / URLs, so later resources are created against them.

    python -m idempotent_messaging.local.deploy --stack dev  # deploy into a fresh emulator
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from idempotent_messaging.local.materialise import EmulatorMocks
from idempotent_messaging.local.registry import Registry
from idempotent_messaging.local.server import Emulator, start_emulator
from idempotent_messaging.local.unwrap import plain_outputs
from idempotent_messaging.offline.errors import ProgramError
from idempotent_messaging.offline.project import load_project, load_stack_config
from idempotent_messaging.offline.runner import ProgramRun, run_program

PROJECT_DIR = Path(".")
"""The Pulumi project deployed when none is named: the current directory, as for `pulumi up`."""


@dataclass
class DeployResult:
    registry: Registry
    run: ProgramRun

    @property
    def outputs(self) -> dict[str, Any]:
        return self.registry.outputs

    @property
    def not_materialised(self) -> list[Any]:
        return self.registry.unsupported()


def stack_region(project_dir: Path, stack: str, default: str) -> str:
    """The stack's `aws:region` (the emulator should run in the region the stack targets)."""
    config = load_stack_config(load_project(project_dir), stack)
    return config.values.get("aws:region") or default


def deploy(
    emulator: Emulator,
    stack: str,
    project_dir: Path = PROJECT_DIR,
    config_overrides: dict[str, Any] | None = None,
) -> DeployResult:
    """Run the stack's program once, materialising every resource in the emulator."""
    # Absolute: the program runs in its own directory, where a relative one means nothing.
    project_dir = Path(project_dir).resolve()
    registry = Registry(
        region=emulator.region,
        endpoint_url=emulator.endpoint_url,
    )
    mocks = EmulatorMocks(emulator, registry, project_dir)
    run = run_program(project_dir, stack, mocks=mocks, config_overrides=config_overrides)
    # As `pulumi stack output --json --show-secrets` shows them: the ops CLI and the local
    # reports read a queue URL, not Pulumi's secret wrapper around it.
    registry.outputs = plain_outputs(dict(run.stack_outputs))
    return DeployResult(registry, run)


def print_report(result: DeployResult, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    resources = result.registry.resources
    counts = Counter(r.status for r in resources)
    out.write(
        f"deployed {counts['created']} resources into the emulator "
        f"({counts['component']} components, {counts['provider']} providers)\n"
    )
    for r in resources:
        if r.status == "created":
            note = f"  [{r.detail}]" if r.detail else ""
            out.write(f"  + {r.type:<52} {r.name}{note}\n")
    missing = result.not_materialised
    if missing:
        out.write(f"NOT MATERIALISED ({len(missing)}): the emulator does not hold these\n")
        for r in missing:
            out.write(f"  ! {r.type:<52} {r.name}: {r.status}: {r.detail}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--project", type=Path, default=PROJECT_DIR)
    args = parser.parse_args(argv)
    try:
        region = stack_region(args.project, args.stack, "ap-northeast-1")
        with start_emulator(region) as emulator:
            result = deploy(emulator, args.stack, args.project)
            print_report(result)
    except ProgramError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1 if result.not_materialised else 0


if __name__ == "__main__":
    raise SystemExit(main())
