"""Arguments of the MonthlyFanout component (pure data, no resources).

Every default lives here (or, for the settings every function shares, in function_args), with
its reason.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi

from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.runtime import env as renv

from .function_args import (
    CONSUMER_MEMORY_MB,
    CONSUMER_TIMEOUT_SECONDS,
    DISPATCHER_MEMORY_MB,
    DISPATCHER_TIMEOUT_SECONDS,
    FunctionArgs,
)


@dataclass(frozen=True, kw_only=True)
class MonthlyFanoutArgs(FunctionArgs):
    """Everything a monthly, idempotent fan-out needs. Required: the time zone and the charge
    consumer's code (``consumer_handler`` plus ``consumer_code_path`` or ``consumer_code``). The
    FunctionArgs (architecture, runtime, Powertools layer, logging, metrics namespace, tracing)
    apply to the dispatcher and the charge consumer alike."""

    # --- Schedule -------------------------------------------------------------------------------
    schedule_expression_timezone: str
    """Required. IANA time zone of the cron AND of the billing month (e.g. ``Asia/Tokyo``):
    00:30 on the 1st in Tokyo is already the new month while UTC is still on the last day."""
    schedule_expression: str = "cron(0 3 1 * ? *)"
    """Default 03:00 on the 1st of every month: the month just closed, at a quiet hour.
    ``cron(...)``, ``rate(...)`` or
    ``at(...)`` as EventBridge Scheduler accepts them."""
    schedule_enabled: bool = True
    """Default True. False creates the schedule DISABLED (e.g. a stage that only backfills)."""
    retry_maximum_attempts: int = 3
    """Default 3: Scheduler retries a failed delivery to the dispatcher (a retried fire is
    harmless: the charge keys are deterministic); 0..185."""
    retry_maximum_event_age_seconds: int = 3600
    """Default 3600 s: a fire not delivered within an hour goes to the schedule DLQ, for an
    operator to re-run, instead of running late; 60..86400."""

    # --- Charge consumer code (yours, as IdempotentQueueConsumer's handler/code_path/code) -----
    consumer_handler: str
    """Required. The charge consumer's handler, a module path from the root of your code, e.g.
    ``billing.charges.handler``. It receives one work message per (tenant, employee, month) and
    reads it with ``idempotent_messaging.dispatch.keys`` (docs/monthly.md)."""
    consumer_code_path: str | None = None
    """A directory with the charge consumer's code (give it or ``consumer_code``); the component
    adds the library's Lambda code, as IdempotentQueueConsumer's ``code_path``."""
    consumer_code: pulumi.Archive | None = None
    """The charge consumer's code as an archive, as IdempotentQueueConsumer's ``code``."""

    # --- Dispatcher -----------------------------------------------------------------------------
    item_source: str = denv.SOURCE_DYNAMODB
    """Default ``dynamodb``: the ``billing_accounts`` table (created here or passed in).
    ``s3``: a JSONL manifest per month in ``manifest_bucket_name``."""
    existing_billing_accounts_table_name: pulumi.Input[str] | None = None
    """Default None = create ``<physical>-billing-accounts`` (tenant_id + employee_id)."""
    existing_billing_accounts_table_arn: pulumi.Input[str] | None = None
    """ARN of that existing table (the Scan grant is scoped to it); required with the name."""
    manifest_bucket_name: str | None = None
    """Required when item_source is ``s3``: the bucket holding the manifests."""
    manifest_key_template: str = "billing/{month}.jsonl"
    """Default ``billing/{month}.jsonl``: must contain ``{month}`` (one manifest per month)."""
    existing_runs_table_name: pulumi.Input[str] | None = None
    """Default None = create ``<physical>-runs`` (partition key ``month``)."""
    existing_runs_table_arn: pulumi.Input[str] | None = None
    """ARN of that existing runs table; required with the name."""
    dispatcher_timeout_seconds: int = DISPATCHER_TIMEOUT_SECONDS
    """Default 900 s (Lambda's maximum): a long invocation hands off rarely; 60..900."""
    dispatcher_memory_size_mb: int = DISPATCHER_MEMORY_MB
    """Default 1024 MB: CPU (proportional to memory) for JSON and TLS of parallel sends."""
    scan_segments: int = denv.DEFAULT_SCAN_SEGMENTS
    """Default 16 parallel scan segments (also the cap of parallel continuation workers)."""
    scan_page_size: int = denv.DEFAULT_SCAN_PAGE_SIZE
    """Default 1000 items per page = per checkpoint; a crash re-sends at most one page."""
    send_concurrency: int = denv.DEFAULT_SEND_CONCURRENCY
    """Default 16 threads sending SendMessageBatch calls in parallel."""
    time_reserve_seconds: int = denv.DEFAULT_TIME_RESERVE_MS // 1000
    """Default 60 s: stop taking pages with this much time left, checkpoint, hand off."""
    max_hops: int = denv.DEFAULT_MAX_HOPS
    """Default 48 continuations per segment: the runaway bound that replaces Lambda's."""
    recursive_loop: str = "Allow"
    """Default ``Allow``: continuations are a deliberate dispatcher -> SQS -> dispatcher loop
    that Lambda would stop after ~16 hops; the dispatcher's own max_hops bounds it instead.
    ``Terminate`` keeps AWS's stop (safe whenever a run needs fewer than 16 hand-offs)."""
    async_retry_attempts: int = 2
    """Default 2 (Lambda's maximum): Lambda's retries of a failed scheduled invocation (they
    resume from the run record's checkpoints); after them the event goes to the schedule DLQ."""
    reserved_concurrency: int | None = None
    """Default None. Caps the dispatcher (schedule fires + continuation workers)."""

    # --- Work queue and charge consumer (an IdempotentQueueConsumer child) ----------------------
    consumer_function_timeout_seconds: int = CONSUMER_TIMEOUT_SECONDS
    """Default 30 s: a batch of 10 charges is one transaction + one PublishBatch + one write."""
    consumer_memory_size_mb: int = CONSUMER_MEMORY_MB
    """Default 256 MB, as every consumer (function_args.CONSUMER_MEMORY_MB)."""
    consumer_maximum_concurrency: int | None = None
    """Default None. 2..1000 caps the charge consumer (FIFO: also bounded by message groups)."""
    consumer_reserved_concurrency: int | None = None
    """Default None (unreserved). Caps the charge consumer; must be >= its maximum concurrency
    when both are set."""
    max_receive_count: int = 5
    """Default 5 for the work queue: a few transient failures never dead-letter; 3..20."""
    work_queue_high_throughput: bool = True
    """Default True: the work queue (and its DLQ) use SQS high-throughput FIFO. A plain FIFO
    queue takes 300 SendMessageBatch calls/s, i.e. 3,000 charges/s for the whole queue, so a
    1,000,000-item month would need over 5 minutes of sending at best; high-throughput mode
    limits per message group (``<tenant>#<month>``) instead, and the per-group deduplication
    it implies is exact here because a charge's dedup id and its group both come from its
    tenant and month. False keeps the per-queue limit (e.g. a region without the mode)."""
    consumer_claim_placement: str | None = None
    """Where the charge consumer's ``Consumer`` keeps its claims, as IdempotentQueueConsumer's
    ``claim_placement``: ``business_item`` for a ``SingleItemEffect`` on the ledger row (the
    pattern docs/monthly.md shows), ``state_table`` without ``effect=``. Default None = not
    declared: the role allows every placement's calls."""
    consumer_business_writes: Sequence[str] | None = None
    """The charge consumer's ``writes`` item kinds on the ledger, as IdempotentQueueConsumer's
    ``business_writes`` (``state_table`` placement only). Default None = all four kinds."""
    claim_ttl_seconds: int = renv.DEFAULT_CLAIM_TTL_SECONDS
    """Default 90 days: charge claims outlive any redelivery of the month."""

    # --- Shared ---------------------------------------------------------------------------------
    kms_master_key_id: pulumi.Input[str] | None = None
    """Default None (SQS-managed SSE, AWS-managed table keys). A KMS key ARN encrypts queues
    and tables with it and grants both functions its use."""
    alarm_topic_arn: pulumi.Input[str] | None = None
    """Default None = the consumer child's alarm topic (created by it) for every alarm here."""
    alarm_emails: Sequence[str] = ()
    """Default none. Email subscriptions on the alarm topic the charge consumer creates (not
    allowed with alarm_topic_arn)."""
    create_dashboard: bool = True
    """Default True: a CloudWatch dashboard ``<physical>-fanout`` with the run's progress
    (charges enqueued, rejected, segments handed off, charges processed), the work and control
    queues, both DLQs and the dispatcher's errors and duration; the charge consumer gets its own.
    False opts out of both."""
    protect_data: bool = True
    """Default True: a ``pulumi up`` or ``destroy`` must never silently delete a month's work or
    its memory. The work queue, its DLQ, the charge claims and the ledger (the consumer child's),
    the runs table, a created billing-accounts table, the control queue and its DLQ and the
    schedule DLQ get Pulumi ``protect`` and ``retain_on_delete``, and the tables DynamoDB
    deletion protection. False (a stage of disposable data, e.g. ``protectData: false`` in
    Pulumi.dev.yaml) adds none of them (docs/deploy-safety.md)."""
    physical_name: str | None = None
    """Default None = ``<name>-<stack>`` (at most 32 characters: the consumer child appends
    ``-charges`` and its own names stay within AWS limits)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Default none. Tags applied to every taggable child (the charge consumer's included)."""
