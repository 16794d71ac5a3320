"""The redelivery protocol, model-checked at the small bound (docs/model.md).

* every configuration of ``configs.expectations("small")`` is explored exhaustively: no
  invariant is violated, except where a configuration documents a violation that today's
  code has (a same-id, different-body re-send; redrive cycles without the first-seen horizon),
  which the checker must then find;
* every mutation of ``configs.mutations("small")`` (one rule of the code broken) yields a
  counterexample of the invariant it breaks: the model is not vacuous;
* every action names the code it models, and that code exists.

Bounds and states explored per configuration are printed in the terminal summary
(tests/model/conftest.py) and carried in every assertion message. Under pytest-xdist
(``make test``: ``-n auto``) the controller never loads tests/model/conftest.py, so each
result is also issued as a ``ModelCheckReport`` warning, which xdist carries to the
controller's warnings summary.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import pytest

from tests.model import configs
from tests.model.checker import Result, check
from tests.model.configs import Expectation, expectations, mutations
from tests.model.protocol import ACTIONS, INVARIANTS, MUTATIONS, Features

BOUND = "small"
CONFIGS = {e.config.name: e for e in expectations(BOUND)}
MUTANTS = {e.config.name: e for e in mutations(BOUND)}


class ModelCheckReport(UserWarning):
    """What the checker explored for one configuration (not a problem: a report)."""


def _run(expectation: Expectation, request: pytest.FixtureRequest) -> Result:
    result = check(expectation.config)
    line = f"[{BOUND}] {result.summary()}"
    request.node.user_properties.append(("model", line))
    request.node.user_properties.append(("model-bounds", expectation.config.describe()))
    if hasattr(request.config, "workerinput"):  # an xdist worker: see the module docstring
        warnings.warn(
            ModelCheckReport(f"{line} | bounds: {expectation.config.describe()}"), stacklevel=2
        )
    return result


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_protocol_keeps_its_invariants(name: str, request: pytest.FixtureRequest) -> None:
    expectation = CONFIGS[name]
    result = _run(expectation, request)
    where = f"{result.summary()}\nbounds: {expectation.config.describe()}"
    assert result.complete, where
    if not expectation.violates:
        assert result.violation is None, f"{where}\n{result.counterexample()}"
    else:
        assert result.violation is not None, (
            f"{where}\nexpected a counterexample of {sorted(expectation.violates)}: "
            f"{expectation.why}"
        )
        assert result.violation.invariant in expectation.violates, (
            f"{where}\n{result.counterexample()}"
        )
    assert result.states > 1, where


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_mutation_yields_a_counterexample(name: str, request: pytest.FixtureRequest) -> None:
    expectation = MUTANTS[name]
    result = _run(expectation, request)
    where = f"{result.summary()}\nbounds: {expectation.config.describe()}"
    assert result.violation is not None, f"the model is vacuous for this mutation: {where}"
    assert result.violation.invariant in expectation.violates, (
        f"{where}\nexpected {sorted(expectation.violates)}\n{result.counterexample()}"
    )
    # The counterexample is shown on a failure and kept for the summary.
    request.node.user_properties.append(("model-counterexample", result.counterexample()))


def test_every_mutation_and_every_invariant_is_exercised() -> None:
    mutated = {m for e in MUTANTS.values() for m in e.config.mutations}
    assert mutated == set(MUTATIONS)
    broken = {i for e in MUTANTS.values() for i in e.violates}
    # "quiescent" is the checker's own sanity check (no run may get stuck).
    assert set(INVARIANTS) - broken <= {"exactly-once", "quiescent"}
    documented = {i for e in CONFIGS.values() for i in e.violates}
    assert "exactly-once" in documented


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_every_action_names_code_that_exists(action: str) -> None:
    spec = ACTIONS[action]
    assert spec.code or spec.aws, f"{action} models nothing"
    for code in spec.code:
        try:
            code.resolve()
        except (ImportError, AttributeError) as exc:
            pytest.fail(
                f"action {action!r} models {code}, which no longer exists ({exc}): "
                "update tests/model/protocol.py to what the code does now"
            )


def test_the_features_are_read_from_the_code() -> None:
    from idempotent_messaging.runtime import batch
    from idempotent_messaging.runtime.errors import PoisonKind

    features = Features.of_code()
    kinds = {str(k) for k in PoisonKind}
    assert features.horizon == ("beyond_dedup_horizon" in kinds)
    assert features.fingerprint == ("conflicting_duplicate" in kinds)
    assert features.read_attempts == getattr(batch, "STATUS_READ_ATTEMPTS", 1)
    # issue 37, item 1: the guards the model reads from the code
    from idempotent_messaging.components import queues
    from idempotent_messaging.ops import dlq

    assert features.native_move_denied == hasattr(queues, "deny_message_move_statement")
    assert features.redrive_fifo_before_retention == hasattr(dlq, "bare_first_seen_ms")
    assert features.horizon_reads_claim == (
        "beyond_horizon" in batch.RecordState.__dataclass_fields__
    )


# --- issue 37, item 1: redrive never defeats the dedup horizon ----------------------------------

BEFORE_ISSUE_37 = replace(
    Features.of_code(),
    native_move_denied=False,
    horizon_reads_claim=False,
    redrive_fifo_before_retention=False,
)
"""The protocol as it was: the console's native move allowed, a copy beyond the horizon refused
unread, a FIFO bare copy stamped with its DLQ SentTimestamp."""


@pytest.mark.parametrize(
    ("family", "invariant", "must_show"),
    [
        # commit, death before the publish, SQS's bare copy, a native move, death before the
        # commit, bare again, the claim TTL passes, ops redrive stamps the move's time
        (configs.native_move, "at-most-once", ("native-move", "ttl-delete", "ops-redrive")),
        # the claim is live and pending, its owing copy redriven late and refused unread
        (configs.redrive, "notified", ("ops-redrive", "quarantine")),
        # a FIFO DLQ reset the bare copy's enqueue time, the redrive stamps it
        (configs.redrive_fifo, "at-most-once", ("sqs-redrive", "ttl-delete", "ops-redrive")),
    ],
)
def test_the_redrive_traces_are_reachable_before_the_guards_and_not_with_them(
    family: Any, invariant: str, must_show: tuple[str, ...]
) -> None:
    """The issue's traces: found on the protocol before its guards (the DLQ policy's deny of
    the native move, the horizon reading the claim, the FIFO stamp back by the source's
    retention), and on the code's protocol no run reaches them."""
    before = replace(family(BOUND, BEFORE_ISSUE_37), only=frozenset({invariant}))
    result = check(before)
    assert result.violation is not None, result.summary()
    assert result.violation.invariant == invariant, result.counterexample()
    for step in must_show:
        assert any(step in line for line in result.trace), result.counterexample()
    after = replace(family(BOUND, Features.of_code()), only=frozenset({invariant}))
    fixed = check(after)
    assert fixed.violation is None, fixed.counterexample()
