"""Arguments of the IdempotentQueueConsumer component (pure data, no resources).

Every default lives here (or, for the settings every function shares, in function_args),
with its reason. Plain ``int``/``bool``/``str`` for everything that
decides WHICH resources exist; ``pulumi.Input`` only where a value may come from another
resource (ARNs, names, KMS keys).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi

from idempotent_messaging import limits
from idempotent_messaging.runtime import env

from .function_args import (
    CONSUMER_MEMORY_MB,
    CONSUMER_TIMEOUT_SECONDS,
    DEFAULT_POWERTOOLS_LAYER_VERSION,
    FunctionArgs,
)

__all__ = [
    "DEFAULT_POWERTOOLS_LAYER_VERSION",
    "BusinessTableArgs",
    "IdempotentQueueConsumerArgs",
]

DEFAULT_MESSAGE_RETENTION_SECONDS = 4 * 24 * 3600
DEFAULT_DLQ_RETENTION_SECONDS = limits.SQS_MAX_RETENTION_S


@dataclass(frozen=True, kw_only=True)
class BusinessTableArgs:
    """A business table the component creates and grants to the function."""

    name: str
    """Logical table name (e.g. ``order_records``); the physical name is prefixed with the
    consumer's physical name so two stacks in one account never collide."""
    hash_key: str
    """Partition key attribute (e.g. ``order_id``)."""
    hash_key_type: str = "S"
    """``S``, ``N`` or ``B``. Default ``S``: producer-assigned ids are strings."""
    range_key: str | None = None
    """Optional sort key attribute. Default None: one row per business key."""
    range_key_type: str = "S"
    """``S``, ``N`` or ``B`` for the sort key (ignored without ``range_key``)."""


@dataclass(frozen=True, kw_only=True)
class IdempotentQueueConsumerArgs(FunctionArgs):
    """Everything an SQS -> Lambda consumer with exactly-once DB effects needs (plus the
    FunctionArgs every component's functions share: architecture, runtime, Powertools layer,
    logging, metrics namespace, tracing)."""

    # --- Function -----------------------------------------------------------------------------
    handler: str
    """Required. The Lambda handler string: a module path from the root of your code and the
    function, e.g. ``app.handler`` for ``app.py`` or ``payments.consumer.handler``."""
    code_path: str | None = None
    """A directory with your own handler code (give it or ``code``): it becomes the root of the
    function's archive and the component adds the library's Lambda code (the
    ``idempotent_messaging`` package your handler imports its runtime from) to the same archive.
    Checked before any resource: the handler's module is in it and it has no
    ``idempotent_messaging/`` of its own (which would shadow ours)."""
    code: pulumi.Archive | None = None
    """Your code as a ``pulumi.AssetArchive`` (its keys are checked, as for ``code_path``; a
    nested ``FileArchive`` of a directory keeps its key as a prefix) or a ``pulumi.FileArchive``
    of a directory; the alternative to ``code_path``. Packed (zip/tar) and remote archives are
    refused: the runtime could not be added to them and the handler module could not be
    checked."""
    function_timeout_seconds: int = CONSUMER_TIMEOUT_SECONDS
    """Default 30 s: enough for a batch of 10 short DynamoDB transactions plus an SNS publish;
    the visibility timeout is derived from it (1..900)."""
    memory_size_mb: int = CONSUMER_MEMORY_MB
    """Default 256 MB: Powertools + boto3 cold starts stay fast; 128..10240."""
    reserved_concurrency: int | None = None
    """Default None (unreserved). Set it to cap the function (and protect downstreams); must be
    >= maximum_concurrency when both are set, or the mapping gets throttled."""
    service_name: str | None = None
    """Default None = the component name (POWERTOOLS_SERVICE_NAME)."""
    environment: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """Extra environment variables. Default empty. May not override the reserved names the
    component sets (tables, topic, DLQ, Powertools settings)."""

    # --- Queues -------------------------------------------------------------------------------
    fifo: bool = False
    """Default False (standard queue). True makes source and DLQ FIFO (names end in ``.fifo``)."""
    content_based_deduplication: bool = False
    """FIFO only. Default False: producers send the idempotency key as MessageDeduplicationId
    (a body hash would merge distinct events with equal bodies)."""
    high_throughput_fifo: bool = False
    """FIFO only. Default False: a FIFO queue then allows 300 API calls/s per action (3,000
    messages/s when batched by 10). True turns on SQS high-throughput FIFO on both queues
    (deduplication scope ``messageGroup``, throughput limit ``perMessageGroupId``): the limit
    becomes per message group, so many groups scale far beyond 3,000 msg/s. Deduplication is
    then per group, which is enough when a deduplication id can only recur in its own group
    (e.g. both derived from the same tenant)."""
    batch_size: int = 10
    """Default 10: the largest batch that needs no batching window; FIFO allows at most 10."""
    maximum_batching_window_seconds: int = 0
    """Default 0: invoke as soon as messages arrive. Required >= 1 when batch_size > 10;
    must stay 0 on FIFO queues (Lambda supports no batching window there)."""
    maximum_concurrency: int | None = None
    """Default None (Lambda scales the pollers). 2..1000 caps concurrent invocations from this
    queue without throttling (better than reserved concurrency alone)."""
    visibility_timeout_seconds: int | None = None
    """Default None = derived: 6 x function timeout + batching window
    (policy.limits.recommended_visibility_timeout), AWS's guidance for Lambda consumers."""
    allow_visibility_below_recommended: bool = False
    """Default False. The explicit opt-out that lets visibility_timeout_seconds go below the
    recommended value; it can never go below the function timeout (Lambda refuses it)."""
    message_retention_seconds: int = DEFAULT_MESSAGE_RETENTION_SECONDS
    """Default 4 days (the SQS default); 60 s..14 days."""
    dlq_message_retention_seconds: int = DEFAULT_DLQ_RETENTION_SECONDS
    """Default 14 days (the maximum): standard-queue messages keep their original enqueue time
    in the DLQ, so it must outlive the source queue's retention."""
    max_receive_count: int = 5
    """Default 5: a few transient failures never dead-letter (at 1, a single throttle would);
    3..20."""
    allow_native_dlq_redrive: bool = False
    """Default False: the DLQ's policy denies ``sqs:StartMessageMoveTask`` (the console's
    "Start DLQ redrive"), which gives a copy SQS dead-lettered itself a new enqueue time and no
    first-seen time, so a state-table claim's dedup horizon could let it apply its effect
    twice; ``python -m idempotent_messaging.ops redrive`` carries or establishes that time.
    True removes the deny: safe only for a consumer whose claims live in the business item
    (``SingleItemEffect``: no claim TTL, no horizon)."""
    kms_master_key_id: pulumi.Input[str] | None = None
    """Default None: SQS-managed SSE on the queues, AWS-managed keys on tables/topic. A KMS key
    ARN encrypts queues, tables and the notification topic with it and grants the function
    kms:Decrypt/GenerateDataKey on it (so it must be a key ARN, not an alias)."""

    # --- Idempotency state --------------------------------------------------------------------
    state_key_layout: str = env.LAYOUT_EVENT_ID
    """Default ``event_id``: claims keyed by the producer's event id (partition key
    ``event_id``). ``tenant``: pk = tenant id, sk = ``<namespace>#<event id>``, so several
    tenants share one table without colliding."""
    state_ttl_attribute: str = env.DEFAULT_TTL_ATTRIBUTE
    """Default ``ttl``: DynamoDB TTL attribute of claim records."""
    claim_ttl_seconds: int = env.DEFAULT_CLAIM_TTL_SECONDS
    """Default 90 days: far beyond the longest life of a message (14 days in the source plus 14
    in the DLQ). Must be >= source retention + DLQ retention: a message
    redriven from the DLQ at the last moment must still find its claim."""
    fingerprint_fields: Sequence[str] | None = None
    """Default None: the consumer's own ``Consumer(fingerprint=...)`` (by default the whole
    decoded body) decides which content identifies an event. A list of JMESPath expressions
    over the decoded body (``["order.order_id", "order.amount"]``) overrides it through
    ``FINGERPRINT_FIELDS``: a re-send of a claimed event id whose fingerprint differs is a
    ``conflicting_duplicate`` (docs/runtime.md)."""

    claim_placement: str | None = None
    """Where your handler's ``Consumer`` keeps its claims, which decides what the role may call
    on each table (runtime/grants.py): ``state_table`` (no ``effect=`` declared: the claim is
    its own state-table item, written in one transaction with your ``writes``),
    ``business_item`` (``effect=SingleItemEffect(...)``: the claim lives in the one business
    row) or ``domain_keyed`` (``effect=DomainKeyedCreate(...)``: a state-table claim, then one
    business row keyed by your own id). Default None = not declared: the role gets what every
    placement calls (the grants of every consumer before this declaration). Declare it: a role
    that can do more than its code does fails a security review (docs/components.md, "What
    each grant is for")."""
    business_writes: Sequence[str] | None = None
    """The TransactWriteItems item kinds your ``writes`` returns on the business table, of
    ``Put``, ``Update``, ``ConditionCheck``, ``Delete`` (e.g. ``["Update"]`` for a counter):
    the role gets exactly their actions (``dynamodb:PutItem``, ``UpdateItem``,
    ``ConditionCheckItem``, ``DeleteItem``). Default None = all four (the documented
    fallback). Only with ``claim_placement`` ``state_table``: a ``business_item`` or
    ``domain_keyed`` consumer's one row is the placement's own."""

    # --- Business table and notifications ----------------------------------------------------
    business_table: BusinessTableArgs | None = None
    """Default None. Declares a business table the component creates and grants."""
    existing_business_table_name: pulumi.Input[str] | None = None
    """Default None. Name of an existing business table (give the ARN too)."""
    existing_business_table_arn: pulumi.Input[str] | None = None
    """Default None. ARN of that existing table: the grant is scoped to it."""
    create_notification_topic: bool = False
    """Default False. True creates an SSE SNS topic for at-least-once notifications."""
    notification_topic_arn: pulumi.Input[str] | None = None
    """Default None. An existing topic to publish notifications to (granted sns:Publish)."""

    # --- Alarms -------------------------------------------------------------------------------
    alarm_topic_arn: pulumi.Input[str] | None = None
    """Default None = create an alarm topic (encrypted with a key CloudWatch may use)."""
    alarm_emails: Sequence[str] = ()
    """Default none. Email subscriptions on the created alarm topic."""
    age_alarm_threshold_seconds: int | None = None
    """Default None = half the source retention (policy.limits.age_alarm_threshold): the other
    half is left for an operator to act before SQS deletes the message."""
    create_dashboard: bool = True
    """Default True: a CloudWatch dashboard ``<physical>-consumer`` with queue depth, age of the
    oldest message, DLQ depth, the runtime's record outcomes and the function's errors,
    throttles and duration: what an operator opens when an alarm fires. False opts out."""

    # --- Data safety --------------------------------------------------------------------------
    protect_data: bool = True
    """Default True: a ``pulumi up`` or ``destroy`` must never silently delete queued messages or
    idempotency claims (a lost claim lets a redelivered message take its effect twice). The
    source queue, the DLQ, the state table and a created business table get Pulumi
    ``protect`` and ``retain_on_delete``, and the tables DynamoDB deletion protection, so a
    change that would replace one (``fifo``, ``physical_name``, the key layout) fails instead.
    False (a stage of disposable data, e.g. ``protectData: false`` in Pulumi.dev.yaml) adds
    none of them; to tear a protected stage down, turn it off and ``pulumi up`` first
    (docs/deploy-safety.md)."""

    # --- Naming -------------------------------------------------------------------------------
    physical_name: str | None = None
    """Default None = ``<component name>-<stack>``: the prefix of every physical name (queues,
    tables, function, role), so dev and prod can share an account."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Default none. Tags applied to every taggable child."""
