"""Constructor-time validation of IdempotentQueueConsumerArgs (before any resource exists)."""

from __future__ import annotations

import re

from idempotent_messaging import limits, names
from idempotent_messaging.runtime import env, grants

from .consumer_args import IdempotentQueueConsumerArgs
from .errors import fail
from .validation import (
    MAX_PHYSICAL_NAME_LEN,
    check_alarm_target,
    check_choice,
    check_memory,
    check_name,
    check_range,
    validate_function_args,
)

KEY_TYPES = ("S", "N", "B")

_MODULE_HANDLER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_ATTR_RE = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
_TABLE_RE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_ENV_KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_KMS_KEY_ARN_RE = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+$")
# SNS CreateTopic: a name is 1..256 of [A-Za-z0-9_-], a FIFO topic's ending in ".fifo".
_SNS_TOPIC_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:(?=[^:]{1,256}$)[A-Za-z0-9_-]+(\.fifo)?$"
)

# Variables the component sets itself; user `environment` may not override them.
RESERVED_ENV_KEYS = frozenset(
    {
        env.STATE_TABLE,
        env.STATE_KEY_LAYOUT,
        env.STATE_TTL_ATTRIBUTE,
        env.CLAIM_TTL_SECONDS,
        env.BUSINESS_TABLE,
        env.NOTIFICATION_TOPIC_ARN,
        env.DLQ_URL,
        env.DLQ_MAX_MESSAGE_BYTES,
        env.SOURCE_QUEUE_FIFO,
        env.SOURCE_RETENTION_SECONDS,
        env.DLQ_RETENTION_SECONDS,
        env.MAX_RECEIVE_COUNT,
        env.FINGERPRINT_FIELDS,
        env.POWERTOOLS_SERVICE_NAME,
        env.POWERTOOLS_LOG_LEVEL,
        env.POWERTOOLS_METRICS_NAMESPACE,
        env.POWERTOOLS_TRACE_DISABLED,
    }
)
# Lambda reserves these itself; setting them fails at deploy time.
LAMBDA_RESERVED_ENV_PREFIXES = ("AWS_", "LAMBDA_")
LAMBDA_RESERVED_ENV_KEYS = frozenset({"_HANDLER", "_X_AMZN_TRACE_ID", "TZ"})


def validate_consumer_args(name: str, physical_name: str, args: IdempotentQueueConsumerArgs) -> int:
    """Validate every arg; return the effective visibility timeout (derived or explicit)."""
    check_name("name", name, 64)
    check_name("physical_name", physical_name, MAX_PHYSICAL_NAME_LEN)
    _validate_function(args)
    visibility = _validate_queues(args)
    _validate_state(args)
    _validate_business_and_topics(args)
    _validate_grants(args)
    if args.business_table is not None:
        full = f"{physical_name}-{args.business_table.name}"
        if len(full) > names.TAG_VALUE:
            raise fail(
                "business_table.name",
                args.business_table.name,
                f"makes the table's full name {physical_name!r}-<name> {len(full)} characters; "
                f"it is kept in a tag, which holds at most {names.TAG_VALUE}",
            )
    _validate_alarms(args)
    return visibility


def check_handler(field: str, handler: object) -> None:
    """A Lambda handler string: ``<module>.<function>``, the module a path from the code root."""
    if not isinstance(handler, str) or not _MODULE_HANDLER_RE.match(handler):
        raise fail(
            field,
            handler,
            "must be '<module>.<function>' (e.g. 'app.handler'), the module a path from "
            "the root of your code",
        )


def _validate_function(args: IdempotentQueueConsumerArgs) -> None:
    if args.code_path is not None and args.code is not None:
        raise fail("code", type(args.code).__name__, "give either code_path or code, not both")
    check_handler("handler", args.handler)
    validate_function_args(args)
    check_range(
        "function_timeout_seconds",
        args.function_timeout_seconds,
        limits.LAMBDA_MIN_TIMEOUT_S,
        limits.LAMBDA_MAX_TIMEOUT_S,
        " seconds (Lambda's limits)",
    )
    check_memory("memory_size_mb", args.memory_size_mb)
    if args.reserved_concurrency is not None:
        check_range(
            "reserved_concurrency",
            args.reserved_concurrency,
            1,
            100_000,
            " (0 would stop the consumer and age every message into the DLQ)",
        )
    if args.service_name is not None:
        check_name("service_name", args.service_name, 128)
    for key in args.environment:
        if not isinstance(key, str) or not _ENV_KEY_RE.match(key):
            raise fail("environment", key, "keys must match [A-Za-z][A-Za-z0-9_]*")
        if key in RESERVED_ENV_KEYS:
            raise fail("environment", key, "is set by the component and may not be overridden")
        if key in LAMBDA_RESERVED_ENV_KEYS or key.startswith(LAMBDA_RESERVED_ENV_PREFIXES):
            raise fail("environment", key, "is reserved by Lambda")


def _validate_queues(args: IdempotentQueueConsumerArgs) -> int:
    if args.content_based_deduplication and not args.fifo:
        raise fail(
            "content_based_deduplication",
            args.content_based_deduplication,
            "applies to FIFO queues only; set fifo=True or leave it False",
        )
    if args.high_throughput_fifo and not args.fifo:
        raise fail(
            "high_throughput_fifo",
            args.high_throughput_fifo,
            "applies to FIFO queues only; set fifo=True or leave it False",
        )
    check_range(
        "maximum_batching_window_seconds",
        args.maximum_batching_window_seconds,
        0,
        limits.SQS_MAX_BATCHING_WINDOW_S,
        " seconds",
    )
    if args.fifo and args.maximum_batching_window_seconds != 0:
        raise fail(
            "maximum_batching_window_seconds",
            args.maximum_batching_window_seconds,
            "must be 0 for a FIFO queue: Lambda supports no batching window on FIFO sources",
        )
    max_batch = limits.SQS_MAX_BATCH_SIZE_FIFO if args.fifo else limits.SQS_MAX_BATCH_SIZE_STANDARD
    check_range(
        "batch_size",
        args.batch_size,
        1,
        max_batch,
        " for a FIFO queue" if args.fifo else " for a standard queue",
    )
    if (
        args.batch_size > limits.SQS_BATCH_SIZE_WITHOUT_WINDOW
        and args.maximum_batching_window_seconds < 1
    ):
        raise fail(
            "batch_size",
            args.batch_size,
            f"above {limits.SQS_BATCH_SIZE_WITHOUT_WINDOW} needs "
            "maximum_batching_window_seconds >= 1 (got "
            f"{args.maximum_batching_window_seconds})",
        )
    if args.maximum_concurrency is not None:
        check_range(
            "maximum_concurrency",
            args.maximum_concurrency,
            limits.ESM_MIN_MAXIMUM_CONCURRENCY,
            limits.ESM_MAX_MAXIMUM_CONCURRENCY,
        )
        if (
            args.reserved_concurrency is not None
            and args.maximum_concurrency > args.reserved_concurrency
        ):
            raise fail(
                "maximum_concurrency",
                args.maximum_concurrency,
                f"must not exceed reserved_concurrency {args.reserved_concurrency}, "
                "or the mapping is throttled and messages age into the DLQ",
            )
    check_range(
        "message_retention_seconds",
        args.message_retention_seconds,
        limits.SQS_MIN_RETENTION_S,
        limits.SQS_MAX_RETENTION_S,
        " seconds (60 s..14 days)",
    )
    check_range(
        "dlq_message_retention_seconds",
        args.dlq_message_retention_seconds,
        limits.SQS_MIN_RETENTION_S,
        limits.SQS_MAX_RETENTION_S,
        " seconds (60 s..14 days)",
    )
    if args.dlq_message_retention_seconds <= args.message_retention_seconds:
        raise fail(
            "dlq_message_retention_seconds",
            args.dlq_message_retention_seconds,
            "must be greater than message_retention_seconds "
            f"{args.message_retention_seconds}: messages keep their original enqueue time "
            "in the DLQ",
        )
    check_range(
        "max_receive_count",
        args.max_receive_count,
        limits.DEFAULT_MIN_MAX_RECEIVE_COUNT,
        limits.DEFAULT_MAX_MAX_RECEIVE_COUNT,
        " (lower dead-letters transient failures; higher burns retries on poison messages)",
    )
    if isinstance(args.kms_master_key_id, str) and not _KMS_KEY_ARN_RE.match(
        args.kms_master_key_id
    ):
        raise fail(
            "kms_master_key_id",
            args.kms_master_key_id,
            "must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>) so the "
            "function's role can be granted on exactly that key",
        )
    return _visibility(args)


def _visibility(args: IdempotentQueueConsumerArgs) -> int:
    recommended = limits.recommended_visibility_timeout(
        args.function_timeout_seconds, args.maximum_batching_window_seconds
    )
    explicit = args.visibility_timeout_seconds
    if explicit is None:
        if recommended > limits.SQS_MAX_VISIBILITY_TIMEOUT_S:
            raise fail(
                "function_timeout_seconds",
                args.function_timeout_seconds,
                f"derived visibility timeout {recommended} s exceeds the SQS maximum "
                f"{limits.SQS_MAX_VISIBILITY_TIMEOUT_S} s",
            )
        return recommended
    check_range(
        "visibility_timeout_seconds", explicit, 0, limits.SQS_MAX_VISIBILITY_TIMEOUT_S, " seconds"
    )
    if explicit < args.function_timeout_seconds:
        raise fail(
            "visibility_timeout_seconds",
            explicit,
            f"is below the function timeout {args.function_timeout_seconds} s; Lambda refuses "
            "such an event source (no opt-out)",
        )
    if explicit < recommended and not args.allow_visibility_below_recommended:
        raise fail(
            "visibility_timeout_seconds",
            explicit,
            f"is below {limits.DEFAULT_VISIBILITY_MULTIPLIER} x function timeout "
            f"{args.function_timeout_seconds} s + batching window "
            f"{args.maximum_batching_window_seconds} s = {recommended} s; raise it, leave it "
            "None to derive it, or set allow_visibility_below_recommended=True",
        )
    return explicit


def _validate_state(args: IdempotentQueueConsumerArgs) -> None:
    check_choice(
        "state_key_layout", args.state_key_layout, (env.LAYOUT_EVENT_ID, env.LAYOUT_TENANT)
    )
    if not isinstance(args.state_ttl_attribute, str) or not _ATTR_RE.match(
        args.state_ttl_attribute
    ):
        raise fail("state_ttl_attribute", args.state_ttl_attribute, "is not an attribute name")
    key_attributes = (
        {env.EVENT_ID_KEY}
        if args.state_key_layout == env.LAYOUT_EVENT_ID
        else {env.TENANT_PARTITION_KEY, env.TENANT_SORT_KEY}
    )
    if args.state_ttl_attribute in key_attributes:
        raise fail("state_ttl_attribute", args.state_ttl_attribute, "may not be a key attribute")
    fields = args.fingerprint_fields
    if fields is not None and (
        isinstance(fields, str) or not all(isinstance(f, str) and f.strip() for f in fields)
    ):
        raise fail("fingerprint_fields", fields, "is not a list of JMESPath expressions")
    minimum = args.message_retention_seconds + args.dlq_message_retention_seconds
    check_range("claim_ttl_seconds", args.claim_ttl_seconds, 1, 10 * 365 * 24 * 3600)
    if args.claim_ttl_seconds < minimum:
        raise fail(
            "claim_ttl_seconds",
            args.claim_ttl_seconds,
            f"must be >= message_retention_seconds + dlq_message_retention_seconds = {minimum}: "
            "a message redriven from the DLQ must still find its claim",
        )


def _validate_business_and_topics(args: IdempotentQueueConsumerArgs) -> None:
    table = args.business_table
    has_existing = (
        args.existing_business_table_name is not None
        or args.existing_business_table_arn is not None
    )
    if table is not None and has_existing:
        raise fail(
            "business_table",
            table.name,
            "give either business_table or existing_business_table_name/arn, not both",
        )
    if has_existing and (
        args.existing_business_table_name is None or args.existing_business_table_arn is None
    ):
        raise fail(
            "existing_business_table_arn",
            args.existing_business_table_arn,
            "existing_business_table_name and existing_business_table_arn go together "
            "(the name for the runtime, the ARN for the grant)",
        )
    if table is not None:
        if not isinstance(table.name, str) or not _TABLE_RE.match(table.name):
            raise fail("business_table.name", table.name, "must be 3..255 of [A-Za-z0-9_.-]")
        if not isinstance(table.hash_key, str) or not _ATTR_RE.match(table.hash_key):
            raise fail("business_table.hash_key", table.hash_key, "is not an attribute name")
        check_choice("business_table.hash_key_type", table.hash_key_type, KEY_TYPES)
        if table.range_key is not None:
            if not _ATTR_RE.match(table.range_key) or table.range_key == table.hash_key:
                raise fail(
                    "business_table.range_key",
                    table.range_key,
                    "must be an attribute name different from hash_key",
                )
            check_choice("business_table.range_key_type", table.range_key_type, KEY_TYPES)
    if args.create_notification_topic and args.notification_topic_arn is not None:
        raise fail(
            "notification_topic_arn",
            args.notification_topic_arn,
            "give either create_notification_topic=True or notification_topic_arn, not both",
        )
    topic = args.notification_topic_arn
    if isinstance(topic, str) and not _SNS_TOPIC_ARN_RE.match(topic):
        raise fail(
            "notification_topic_arn",
            topic,
            "must be an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>, a FIFO topic's "
            "name ending in .fifo)",
        )


def notification_ordering(*, queue_fifo: bool, topic_fifo: bool) -> str:
    """What order the notifications keep, for a source queue and a topic of these types
    (the runtime's group id: runtime/notify.py ``notification_group_id``)."""
    if queue_fifo and topic_fifo:
        return (
            "FIFO queue -> FIFO topic: the notifications of each message group of the queue "
            "keep its order (the topic's MessageGroupId is the record's MessageGroupId); a "
            "re-publication within SNS's 5-minute deduplication interval is dropped "
            "(MessageDeduplicationId = SHA-256 of the event id)"
        )
    if topic_fifo:
        return (
            "standard queue -> FIFO topic: a standard queue has no order to keep, so each "
            "event is its own message group (its event id, or sha256:<hex> of it when SNS "
            "would refuse the id): no order across events; a re-publication within SNS's "
            "5-minute deduplication interval is dropped (MessageDeduplicationId = SHA-256 of "
            "the event id)"
        )
    if queue_fifo:
        return (
            "FIFO queue -> standard topic: the runtime publishes each message group's "
            "notifications in its order, one per call, but a standard topic does not keep "
            "order: subscribers may see a group's notifications in another order; use a FIFO "
            "topic to keep it"
        )
    return "standard queue -> standard topic: no order is kept (neither keeps one)"


def _validate_grants(args: IdempotentQueueConsumerArgs) -> None:
    """The declaration the role is derived from (runtime/grants.py)."""
    has_business = args.business_table is not None or args.existing_business_table_arn is not None
    placement = args.claim_placement
    calls = None
    if placement is not None:
        check_choice("claim_placement", placement, tuple(sorted(grants.PLACEMENTS)))
        calls = grants.placement_calls(placement)
        if calls.needs_business_table and not has_business:
            raise fail(
                "claim_placement",
                placement,
                "keeps the claim with the business row: give business_table or "
                "existing_business_table_name/arn",
            )
    writes = args.business_writes
    if writes is None:
        return
    if isinstance(writes, str) or not all(isinstance(w, str) for w in writes) or not writes:
        raise fail(
            "business_writes",
            writes,
            f"must be a non-empty list of item kinds of {list(grants.BUSINESS_WRITE_KINDS)}",
        )
    unknown = sorted(set(writes) - set(grants.BUSINESS_WRITE_KINDS))
    if unknown:
        raise fail(
            "business_writes",
            list(writes),
            f"{unknown} are no TransactWriteItems item kinds {list(grants.BUSINESS_WRITE_KINDS)}",
        )
    if not has_business:
        raise fail("business_writes", list(writes), "needs a business table to write to")
    if calls is None or not calls.business_writes_declared:
        declaring = sorted(n for n, c in grants.PLACEMENTS.items() if c.business_writes_declared)
        raise fail(
            "business_writes",
            list(writes),
            f"declares your writes' item kinds for claim_placement {declaring} only (another "
            "placement writes the business row itself; undeclared, the role must allow every "
            "placement)",
        )


def _validate_alarms(args: IdempotentQueueConsumerArgs) -> None:
    check_alarm_target(args.alarm_emails, args.alarm_topic_arn)
    if args.age_alarm_threshold_seconds is not None:
        check_range(
            "age_alarm_threshold_seconds",
            args.age_alarm_threshold_seconds,
            60,
            args.message_retention_seconds - 1,
            " seconds (the alarm must fire before the source queue's retention deletes "
            "the message)",
        )
    for key, value in args.tags.items():
        if not isinstance(key, str) or not isinstance(value, str) or not key or len(key) > 128:
            raise fail("tags", key, "keys and values must be strings; keys 1..128 characters")
