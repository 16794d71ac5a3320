"""The project's own stacks pass the pack with no mandatory violation, as `up` and `preview`,
and leave the protection advisory (enabled here, as in the pack) nothing to say."""

from __future__ import annotations

from pathlib import Path

import pytest

from idempotent_messaging.offline import check
from tests.stages import STAGES

pytestmark = pytest.mark.policy

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
@pytest.mark.parametrize("stack", STAGES)
def test_reference_stack_has_no_mandatory_violation(stack: str, preview: bool):
    run, violations = check(ROOT, stack, preview=preview)
    assert sum(1 for r in run.resources if r.custom) > 5  # the program really ran
    mandatory = [
        f"{v.policy} {v.name}: {v.message}" for v in violations if v.enforcement == "mandatory"
    ]
    assert mandatory == []
    # prod protects its queues and tables; dev turns protectData off, so the components tag
    # them disposable: neither leaves the protection advisory anything to say.
    unprotected = [v.name for v in violations if v.policy == "stateful-pipeline-resource-protected"]
    assert unprotected == []
