"""The Powertools idempotency strategy is withdrawn: refused with an error naming the
alternative, before any AWS call, so no record is ever processed without exactly-once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from handlers import orders
from idempotent_messaging.runtime import ConfigurationError, Settings, env
from idempotent_messaging.runtime.clients import reset_clients
from tests.integration.test_runtime_world import Aws, FakeContext, order_body, record, sqs_event

pytestmark = pytest.mark.integration


@pytest.fixture
def lambda_env(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in aws.env().items():
        monkeypatch.setenv(name, value)
    reset_clients()
    yield aws
    reset_clients()


def test_powertools_strategy_is_refused_through_the_entry_point_naming_the_alternative(
    lambda_env: Aws, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """Powertools writes the business effect and COMPLETED in two calls; a crash between them
    re-runs ``writes`` on redelivery (a counter ADD twice). Every record is reported failed
    (kept in SQS, nothing lost), nothing is written, and the log names the fix."""
    monkeypatch.setenv(env.IDEMPOTENCY_STRATEGY, env.STRATEGY_POWERTOOLS)
    records = [record(order_body("p1")), record(order_body("p2"))]
    lambda_env.reset_counts()
    response = orders.handler(sqs_event(*records), FakeContext())
    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == {
        r["messageId"] for r in records
    }
    assert lambda_env.calls == []
    assert lambda_env.order_rows() == []
    text = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
    assert f"{env.IDEMPOTENCY_STRATEGY}={env.STRATEGY_TRANSACTIONAL}" in text
    assert "withdrawn" in text


def test_powertools_settings_are_refused_with_the_alternative_named() -> None:
    with pytest.raises(ConfigurationError, match=r"withdrawn.*IDEMPOTENCY_STRATEGY=transactional"):
        Settings(state_table="s", dlq_url="d", strategy=env.STRATEGY_POWERTOOLS)


def test_transactional_strategy_is_the_default(lambda_env: Aws) -> None:
    rec = record(order_body("p3"))
    assert orders.handler(sqs_event(rec), FakeContext()) == {"batchItemFailures": []}
    assert [r["order_id"]["S"] for r in lambda_env.order_rows()] == ["order-p3"]
