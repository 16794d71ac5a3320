"""Rules declare their own metadata; the pack only collects them; one graph per check."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from idempotent_messaging.offline import Violation
from idempotent_messaging.rules import pack
from idempotent_messaging.rules._base import Rule
from tests.policy.conftest import GOOD

pytestmark = pytest.mark.policy

RULES_DIR = Path(pack.rules_package.__path__[0])


def test_every_policy_comes_from_a_rule_with_complete_metadata():
    assert [p.name for p in pack.POLICIES] == [r.name for r in pack.RULES]
    for rule in pack.RULES:
        assert rule.level in ("mandatory", "advisory")
        assert rule.description and rule.remediation, rule.name
        assert rule.kind in ("stack", "resource")
        policy = next(p for p in pack.POLICIES if p.name == rule.name)
        assert policy.enforcement_level is not None
        assert policy.enforcement_level.value == rule.level
        assert policy.remediation_steps == rule.remediation


def test_a_new_rule_is_one_module_the_pack_discovers(tmp_path: Path):
    module = RULES_DIR / "zz_recipe_probe.py"
    module.write_text(
        "from ._base import ADVISORY, resource_rule\n\n\n"
        '@resource_rule("recipe-probe", "A probe rule.", ADVISORY, "Nothing to do.")\n'
        "def probe(resource_type, props, name, config):\n"
        "    return []\n"
    )
    try:
        importlib.invalidate_caches()
        names = [r.name for r in pack.discover_rules()]
        assert "recipe-probe" in names
        assert names == sorted(names)
    finally:
        module.unlink()
        sys.modules.pop("idempotent_messaging.rules.zz_recipe_probe", None)
    assert "recipe-probe" not in [r.name for r in pack.discover_rules()]


def test_two_rules_with_one_name_are_refused(monkeypatch: pytest.MonkeyPatch):
    from idempotent_messaging.rules import queues

    clone = Rule(**{**vars(queues.dlq_has_alarm)})
    monkeypatch.setattr(queues, "dlq_has_alarm_clone", clone, raising=False)
    with pytest.raises(ValueError, match="two rules are named 'sqs-dlq-has-alarm'"):
        pack.discover_rules()


def test_the_graph_is_built_once_per_check_not_once_per_stack_rule(
    run_check: Callable[..., list[Violation]],
):
    stack_rules = [r for r in pack.RULES if r.kind == "stack"]
    assert len(stack_rules) > 5
    before = pack.GRAPHS.builds
    run_check(GOOD)
    assert pack.GRAPHS.builds == before + 1
    # A different stack (another check) gets its own graph.
    run_check(GOOD.replace("timeout=60", "timeout=61"))
    assert pack.GRAPHS.builds == before + 2


@pytest.mark.parametrize(
    ("as_of", "blocked", "deprecated"),
    [
        # python3.9: deprecated 2025-12-15, function creation blocked from 2027-02-01 (AWS
        # Lambda runtimes table, as recorded in policy/rules/runtimes.py).
        ("2025-06-01", False, False),
        ("2026-01-01", False, True),
        ("2027-02-01", True, False),
    ],
)
def test_runtime_rules_follow_the_dated_table(as_of: str, blocked: bool, deprecated: bool):
    from idempotent_messaging.rules import runtimes

    args = ("aws:lambda/function:Function", {"runtime": "python3.9"}, "fn", {"asOf": as_of})
    assert bool(runtimes.runtime_not_blocked(*args)) is blocked
    assert bool(runtimes.runtime_not_deprecated(*args)) is deprecated
    assert (
        runtimes.runtime_not_blocked(
            "aws:lambda/function:Function", {"runtime": "python3.13"}, "fn", {"asOf": "2027-02-01"}
        )
        == []
    )
