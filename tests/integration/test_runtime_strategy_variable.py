"""``IDEMPOTENCY_STRATEGY`` is no longer read: the runtime has one way to claim (the claim
commits with the business write). Deployments made before still carry the value
``transactional``: accepted and ignored. Any other value was set by hand for a behaviour that
does not exist: refused before any AWS call, the error naming the variable, the value and the
rule; every record is reported failed (kept in SQS, nothing lost)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from handlers import orders
from idempotent_messaging.runtime import ConfigurationError, Settings, env
from idempotent_messaging.runtime.clients import reset_clients
from tests.integration.test_runtime_world import Aws, FakeContext, order_body, record, sqs_event

pytestmark = pytest.mark.integration

BASE = {env.STATE_TABLE: "s", env.DLQ_URL: "d"}


@pytest.fixture
def lambda_env(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in aws.env().items():
        monkeypatch.setenv(name, value)
    reset_clients()
    yield aws
    reset_clients()


def test_the_stale_value_older_deployments_set_is_accepted_and_ignored(
    lambda_env: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Settings.from_env({**BASE, env.IDEMPOTENCY_STRATEGY: "transactional"}) == (
        Settings.from_env(BASE)
    )
    monkeypatch.setenv(env.IDEMPOTENCY_STRATEGY, env.STALE_IDEMPOTENCY_STRATEGY)
    rec = record(order_body("s1"))
    assert orders.handler(sqs_event(rec), FakeContext()) == {"batchItemFailures": []}
    assert [r["order_id"]["S"] for r in lambda_env.order_rows()] == ["order-s1"]


def test_any_other_value_is_refused_naming_the_variable_the_value_and_the_rule(
    lambda_env: Aws, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env({**BASE, env.IDEMPOTENCY_STRATEGY: "exactly-once-please"})
    message = str(refused.value)
    assert "IDEMPOTENCY_STRATEGY='exactly-once-please' is refused" in message
    assert "no longer read" in message and "'transactional'" in message

    monkeypatch.setenv(env.IDEMPOTENCY_STRATEGY, "exactly-once-please")
    records = [record(order_body("r1")), record(order_body("r2"))]
    lambda_env.reset_counts()
    response = orders.handler(sqs_event(*records), FakeContext())
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        r["messageId"] for r in records
    }
    assert lambda_env.calls == []
    assert lambda_env.order_rows() == []
    text = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
    assert "IDEMPOTENCY_STRATEGY='exactly-once-please' is refused" in text


def test_unset_is_the_normal_case(lambda_env: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(env.IDEMPOTENCY_STRATEGY, raising=False)
    rec = record(order_body("u1"))
    assert orders.handler(sqs_event(rec), FakeContext()) == {"batchItemFailures": []}
