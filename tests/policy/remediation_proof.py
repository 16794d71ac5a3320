"""The proof a remediation is exact, on a program's recorded run (shared by the corpora).

Applying the pack's remediations (every remediable rule at level `remediate`) to a run must:
change exactly the properties it reports (compared property by property with the original
inputs), leave no finding of a (rule, resource) pair it fixed (save a schedule's missing DLQ,
which no remediation invents), add no finding, and be a fixed point (a second pass changes
nothing). The run is copied: the corpus keeps its original.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format

from idempotent_messaging.offline import analyze
from idempotent_messaging.offline.remediation import (
    Remediation,
    changes,
    remediate_run,
    with_remediation,
)
from idempotent_messaging.offline.runner import ProgramRun

SCHEDULER_RULE = "scheduler-schedule-has-retry-and-dlq"


def prove_remediation(
    run: ProgramRun, config: Mapping[str, Any], original: set[tuple[str, str]]
) -> list[Remediation]:
    """Remediate a copy of `run`, assert the proof above, return what changed."""
    run = copy.deepcopy(run)
    before = {r.urn: json_format.MessageToDict(r.inputs_struct) for r in run.resources}
    fixing = with_remediation(config)
    fixes = remediate_run(run, fixing)
    for r in run.resources:
        after = json_format.MessageToDict(r.inputs_struct)
        changed = {path for path, _, _ in changes(before[r.urn], after)}
        reported = {f.property for f in fixes if f.urn == r.urn}
        assert changed == reported, (r.urn, changed, reported)
    if not fixes:
        return fixes  # nothing changed: the original report stands (and costs no re-check)
    violations = analyze(run, config)
    pairs = {(v.policy, v.name) for v in violations}
    assert pairs <= original, f"new findings after remediation: {sorted(pairs - original)}"
    fixed = {(f.policy, f.name) for f in fixes}
    for v in violations:
        if (v.policy, v.name) in fixed:
            # Only a schedule keeps its finding, for the DLQ no remediation may invent.
            assert v.policy == SCHEDULER_RULE, v.message
            assert "no dead_letter_config" in v.message and "retry attempts" not in v.message
    assert remediate_run(run, fixing) == [], "a second pass must change nothing"
    return fixes
