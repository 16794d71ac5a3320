"""The stages, derived from the stack files: a new stage is one new ``Pulumi.<stage>.yaml``.

The Makefile's ``STACKS`` (``make -s stacks``, which the workflows call) applies the same rule,
and tests/infra/test_stage_config.py proves the two agree.
"""

from __future__ import annotations

from pathlib import Path

import yaml

PROJECT_DIR = Path(__file__).resolve().parents[1]
LOCAL_ENDPOINTS_KEY = "aws:endpoints"


def stack_files(root: Path = PROJECT_DIR) -> dict[str, Path]:
    """Every stack file of the project: stack name -> Pulumi.<stack>.yaml."""
    return {
        path.name.removeprefix("Pulumi.").removesuffix(".yaml"): path
        for path in sorted(root.glob("Pulumi.*.yaml"))
    }


def stages(root: Path = PROJECT_DIR) -> tuple[str, ...]:
    """Stacks that deploy to AWS. A stack file that sets ``aws:endpoints`` points the provider
    at a local emulator (Pulumi.localstack.yaml): CI can neither preview nor deploy it, so it
    is a local target, not a stage."""
    found = []
    for name, path in stack_files(root).items():
        config = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
        if LOCAL_ENDPOINTS_KEY not in config:
            found.append(name)
    return tuple(found)


STAGES = stages()
