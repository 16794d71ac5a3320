"""Pure parts of the consumer runtime: settings, failure classes, keys, backoff, chunking."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.claims import state_key
from idempotent_messaging.runtime.clients import (
    BOTOCORE_CONFIG,
    clients_from_env,
    reset_clients,
    transaction_backoff,
)
from idempotent_messaging.runtime.consumer import (
    EventIdFromAttribute,
    EventIdFromBody,
    EventIdFromContentHash,
    validate_event_id,
)
from idempotent_messaging.runtime.errors import (
    ConfigurationError,
    FailureClass,
    PoisonKind,
    PoisonMessage,
    classify_cancellation,
    classify_exception,
)
from idempotent_messaging.runtime.notify import Notification, PublishEntry, chunk_entries
from idempotent_messaging.runtime.quarantine import QuarantineEntry, _attributes, chunk_quarantine
from idempotent_messaging.runtime.settings import Settings

pytestmark = pytest.mark.unit

BASE_ENV = {env.STATE_TABLE: "state", env.DLQ_URL: "https://sqs/dlq"}


def client_error(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "Op",
    )


# --- settings ------------------------------------------------------------------------------
def test_settings_default_to_event_id_claims_kept_90_days() -> None:
    s = Settings.from_env(BASE_ENV)
    assert s.key_layout == env.LAYOUT_EVENT_ID
    assert s.claim_ttl_seconds == 90 * 24 * 3600
    assert s.ttl_attribute == "ttl"
    assert s.source_fifo is False
    assert s.business_table is None and s.topic_arn is None


@pytest.mark.parametrize("missing", [env.STATE_TABLE, env.DLQ_URL])
def test_settings_error_names_the_missing_variable(missing: str) -> None:
    e = {k: v for k, v in BASE_ENV.items() if k != missing}
    with pytest.raises(ConfigurationError, match=missing):
        Settings.from_env(e)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (env.CLAIM_TTL_SECONDS, "ninety days"),
        (env.CLAIM_TTL_SECONDS, "-1"),
        (env.SOURCE_QUEUE_FIFO, "maybe"),
        (env.STATE_KEY_LAYOUT, "hash"),
        (env.IDEMPOTENCY_STRATEGY, "magic"),
        (env.SOURCE_RETENTION_SECONDS, "1.5"),
    ],
)
def test_settings_error_names_the_invalid_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        Settings.from_env({**BASE_ENV, name: value})


def test_claim_ttl_shorter_than_source_plus_dlq_retention_is_refused() -> None:
    e = {
        **BASE_ENV,
        env.CLAIM_TTL_SECONDS: str(14 * 86400),
        env.SOURCE_RETENTION_SECONDS: str(4 * 86400),
        env.DLQ_RETENTION_SECONDS: str(14 * 86400),
    }
    with pytest.raises(ConfigurationError, match="1555200"):
        Settings.from_env(e)
    e[env.CLAIM_TTL_SECONDS] = str(18 * 86400)
    assert Settings.from_env(e).claim_ttl_seconds == 18 * 86400


def test_fifo_flag_parses_true_and_false() -> None:
    assert Settings.from_env({**BASE_ENV, env.SOURCE_QUEUE_FIFO: "TRUE"}).source_fifo is True
    assert Settings.from_env({**BASE_ENV, env.SOURCE_QUEUE_FIFO: "false"}).source_fifo is False


# --- failure classes -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (client_error("ThrottlingException"), FailureClass.TRANSIENT),
        (client_error("ProvisionedThroughputExceededException"), FailureClass.TRANSIENT),
        (client_error("InternalServerError", 500), FailureClass.TRANSIENT),
        (client_error("Whatever", 503), FailureClass.TRANSIENT),
        (client_error("ValidationException"), FailureClass.PERMANENT),
        (client_error("AccessDeniedException"), FailureClass.TRANSIENT),
        (ReadTimeoutError(endpoint_url="http://x"), FailureClass.TRANSIENT),
        (PoisonMessage(PoisonKind.SCHEMA, "r"), FailureClass.PERMANENT),
    ],
)
def test_exceptions_map_to_one_failure_class(error: BaseException, expected: FailureClass) -> None:
    assert classify_exception(error) is expected


@pytest.mark.parametrize(
    ("code", "is_claim", "expected"),
    [
        ("None", True, None),
        ("ConditionalCheckFailed", True, FailureClass.DUPLICATE),
        ("ConditionalCheckFailed", False, FailureClass.PERMANENT),
        ("TransactionConflict", True, FailureClass.TRANSIENT),
        ("ThrottlingError", False, FailureClass.TRANSIENT),
        ("ProvisionedThroughputExceeded", False, FailureClass.TRANSIENT),
        ("ValidationError", False, FailureClass.PERMANENT),
        # DynamoDB developer guide, "Error handling with DynamoDB": "OK to retry? Yes".
        ("ItemCollectionSizeLimitExceeded", False, FailureClass.TRANSIENT),
    ],
)
def test_cancellation_reasons_map_to_failure_classes(
    code: str, is_claim: bool, expected: FailureClass | None
) -> None:
    assert classify_cancellation(code, is_claim=is_claim) is expected


# --- keys ------------------------------------------------------------------------------------
def test_event_id_from_dotted_body_path() -> None:
    assert EventIdFromBody("meta.id").extract({}, {"meta": {"id": "x-1"}}) == "x-1"
    with pytest.raises(PoisonMessage) as info:
        EventIdFromBody("meta.id").extract({}, {"meta": {}})
    assert info.value.kind is PoisonKind.MISSING_EVENT_ID


def test_an_event_id_path_that_meets_a_json_string_says_so() -> None:
    """A path cannot reach inside a JSON string (SNS's ``Message`` without raw delivery is
    one): the reason names the string field and the declaration that unwraps it."""
    with pytest.raises(PoisonMessage) as info:
        EventIdFromBody("payload.id").extract({}, {"payload": '{"id": "x-1"}'})
    assert info.value.kind is PoisonKind.MISSING_EVENT_ID
    assert "'payload' is a string" in info.value.reason
    assert "SnsEnvelope()" in info.value.reason


@pytest.mark.parametrize("value", [7, None, "", "   ", "bad\ud800", "a\nb", ["x"]])
def test_invalid_event_ids_are_poison(value: Any) -> None:
    with pytest.raises(PoisonMessage) as info:
        validate_event_id(value, "body field 'event_id'")
    assert info.value.kind is PoisonKind.INVALID_EVENT_ID


def test_event_id_from_attribute_and_content_hash() -> None:
    raw = {"body": '{"a": 1}', "messageAttributes": {"id": {"stringValue": "attr-9"}}}
    assert EventIdFromAttribute("id").extract(raw, {}) == "attr-9"
    assert EventIdFromContentHash().extract(raw, {}) == hashlib.sha256(b'{"a": 1}').hexdigest()
    with pytest.raises(PoisonMessage):
        EventIdFromAttribute("other").extract(raw, {})


def test_state_keys_for_both_layouts() -> None:
    plain = state_key(tenant_layout=False, event_id="e", namespace="order", tenant=None)
    assert plain.key == {"event_id": {"S": "e"}}
    assert plain.condition == "attribute_not_exists(event_id)"
    tenant = state_key(tenant_layout=True, event_id="e", namespace="charge", tenant="t1")
    assert tenant.key == {"pk": {"S": "t1"}, "sk": {"S": "charge#e"}}
    assert tenant.condition == "attribute_not_exists(pk) AND attribute_not_exists(sk)"


# --- retries and clients -----------------------------------------------------------------------
def test_botocore_does_the_service_retries_with_three_attempts() -> None:
    assert BOTOCORE_CONFIG.retries == {"mode": "standard", "total_max_attempts": 3}


@pytest.mark.parametrize(("attempt", "low", "high"), [(1, 0.025, 0.075), (2, 0.05, 0.15)])
def test_transaction_backoff_is_50ms_doubling_with_half_jitter(
    attempt: int, low: float, high: float
) -> None:
    rng = random.Random(1)
    delays = [transaction_backoff(attempt, rng) for _ in range(500)]
    assert low <= min(delays) and max(delays) <= high
    assert max(delays) - min(delays) > (high - low) * 0.8  # really jittered


def test_clients_are_cached_per_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    reset_clients()
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    first = clients_from_env()
    assert clients_from_env() is first
    assert first.dynamodb.meta.endpoint_url == "http://127.0.0.1:1"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
    second = clients_from_env()
    assert second is not first and second.sqs.meta.endpoint_url == "http://127.0.0.1:2"
    reset_clients()


# --- chunking and attributes -------------------------------------------------------------------
def test_publish_batches_respect_ten_entries_and_256_kib() -> None:
    small = [PublishEntry(f"r{i}", Notification("x"), f"e{i}", None) for i in range(23)]
    assert [len(c) for c in chunk_entries(small)] == [10, 10, 3]
    big = [PublishEntry(f"b{i}", Notification("x" * 100_000), f"e{i}", None) for i in range(5)]
    assert [len(c) for c in chunk_entries(big)] == [2, 2, 1]


def quarantine_entry(i: int, body: str = "b", attributes: Any = None) -> QuarantineEntry:
    return QuarantineEntry(
        entry_id=f"q{i}",
        body=body,
        failure_class="permanent",
        kind="schema",
        reason="r",
        message_id=f"m{i}",
        receive_count=1,
        event_id=None,
        group_id=None,
        original_attributes=attributes or {},
    )


def test_quarantine_batches_respect_ten_entries_and_payload_size() -> None:
    assert [len(c) for c in chunk_quarantine([quarantine_entry(i) for i in range(12)])] == [10, 2]
    big = [quarantine_entry(i, "x" * 200_000) for i in range(3)]
    assert [len(c) for c in chunk_quarantine(big)] == [1, 1, 1]


def test_quarantine_keeps_producer_attributes_within_the_sqs_limit() -> None:
    original = {f"a{i}": {"stringValue": str(i), "dataType": "String"} for i in range(8)}
    attrs = _attributes(quarantine_entry(0, attributes=original))
    assert len(attrs) == 10
    assert attrs["failure_kind"]["StringValue"] == "schema"
    assert attrs["a0"]["StringValue"] == "0"


def test_the_dispatcher_and_the_consumers_share_one_client_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from idempotent_messaging.dispatch import app
    from idempotent_messaging.dispatch.settings import Settings as DispatchSettings
    from idempotent_messaging.runtime.clients import cached_client

    reset_clients()
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    dispatch = DispatchSettings.__new__(DispatchSettings)
    object.__setattr__(dispatch, "send_concurrency", 4)
    object.__setattr__(dispatch, "segment_concurrency", 2)
    client = app._client("dynamodb", dispatch)
    assert app._client("dynamodb", dispatch) is client
    assert (
        cached_client(
            "dynamodb",
            max_attempts=app.MAX_ATTEMPTS,
            max_pool_connections=10,
            connect_timeout=app.CONNECT_TIMEOUT_S,
            read_timeout=app.READ_TIMEOUT_S,
        )
        is client
    )
    # The runtime's clients come from the same cache, with their own retry budget/timeouts.
    assert clients_from_env().dynamodb is cached_client("dynamodb")
    assert client.meta.config.max_pool_connections == 10
    app.reset_clients()  # the dispatcher's reset is the runtime's
    assert app._client("dynamodb", dispatch) is not client
    reset_clients()


def test_the_claim_placement_is_chosen_by_the_declared_effect_alone() -> None:
    from idempotent_messaging.runtime.claims import (
        ItemClaims,
        SingleItemEffect,
        StateTableClaims,
        placement,
    )

    settings = Settings(state_table="s", dlq_url="q", business_table="b")
    assert type(placement(None, object(), settings)) is StateTableClaims
    effect = SingleItemEffect.keyed_by_event_id("event_id")
    assert type(placement(effect, object(), settings)) is ItemClaims
