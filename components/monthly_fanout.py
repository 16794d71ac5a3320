"""MonthlyFanout: a scheduled, scalable, idempotent monthly batch (seed 003, section 8).

EventBridge Scheduler (cron in a time zone, no flexible window, retries, DLQ) invokes a
dispatcher Lambda that enumerates billable items and enqueues one charge per (tenant,
employee, month) on a FIFO work queue; the work queue and its charge consumer are an
IdempotentQueueConsumer child (FIFO, tenant-layout claims, a ledger business table).

Scale: the dispatcher works on N parallel scan segments and checkpoints every page in a run
record; when its time runs low it hands each unfinished segment to a FIFO control queue that
invokes the dispatcher again (docs/monthly.md). That loop is deliberate, so the function's
recursive-loop detection is set to Allow and the dispatcher bounds it itself (max_hops).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pulumi
import pulumi_aws as aws

from handlers.dispatch import env as denv
from handlers.runtime import env as renv
from policy import limits

from . import alarms, dashboards, iam
from .consumer import COMPONENT_TAG_KEY, CONSUMER_OUTPUTS, IdempotentQueueConsumer
from .consumer_args import (
    DEFAULT_POWERTOOLS_LAYER_VERSION,
    BusinessTableArgs,
    IdempotentQueueConsumerArgs,
)
from .function import FunctionSpec, create_function
from .powertools import deployment_layer_arn
from .queues import QueuePairSpec, create_queue_pair, tls_only_policy
from .tables import KeySchema, create_table
from .validation import (
    LOG_LEVELS,
    LOG_RETENTION_DAYS,
    MAX_PHYSICAL_NAME_LEN,
    check_alarm_target,
    check_choice,
    check_name,
    check_range,
    fail,
)

TYPE_TOKEN = "idempotent-messaging:components:MonthlyFanout"
DISPATCHER_HANDLER = "handlers.dispatch.app.handler"
CHARGES_HANDLER = "handlers.charges.handler"
SCHEDULE_INPUT = json.dumps(
    {"trigger": "schedule", "scheduled_time": "<aws.scheduler.scheduled-time>"}, sort_keys=True
)
"""The target input: Scheduler substitutes the SCHEDULED time (not the delivery time), so a
retry an hour late still names the same billing month."""
CHILD_SUFFIX = "-charges"
DISPATCHER_SUFFIX = "-dispatcher"
MAX_FANOUT_PHYSICAL_NAME_LEN = MAX_PHYSICAL_NAME_LEN - len(CHILD_SUFFIX)
RECURSIVE_LOOP_CHOICES = ("Allow", "Terminate")
SOURCE_CHOICES = (denv.SOURCE_DYNAMODB, denv.SOURCE_S3)
SCHEDULER_MAX_RETRY_ATTEMPTS = 185
SCHEDULER_MIN_EVENT_AGE_S = 60
SCHEDULER_MAX_EVENT_AGE_S = 86_400
CONTROL_RETENTION_SECONDS = 4 * 24 * 3600
LEDGER_TABLE = "ledger"
FANOUT_OUTPUTS = (
    "schedule_name", "schedule_arn", "schedule_dlq_url", "dispatcher_name", "dispatcher_arn",
    "control_queue_url", "control_dlq_url", "runs_table_name", "billing_accounts_table_name",
    "work_queue_url", "work_queue_arn", "alarm_names", "dashboard_name",
)  # fmt: skip
"""The component's own outputs; the consumer child's are registered as ``consumer_<output>``."""

_CRON_RE = re.compile(r"^cron\((\S+\s+){5}\S+\)$")
_RATE_RE = re.compile(r"^rate\(\d+ (minute|minutes|hour|hours|day|days)\)$")
_AT_RE = re.compile(r"^at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\)$")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


@dataclass(frozen=True, kw_only=True)
class MonthlyFanoutArgs:
    """Everything a monthly, idempotent fan-out needs. Only the time zone is required."""

    # --- Schedule -------------------------------------------------------------------------------
    schedule_expression_timezone: str
    """Required. IANA time zone of the cron AND of the billing month (e.g. ``Asia/Tokyo``):
    00:30 on the 1st in Tokyo is already the new month while UTC is still on the last day."""
    schedule_expression: str = "cron(0 3 1 * ? *)"
    """Default 03:00 on the 1st of every month (seed 003). ``cron(...)``, ``rate(...)`` or
    ``at(...)`` as EventBridge Scheduler accepts them."""
    schedule_enabled: bool = True
    """Default True. False creates the schedule DISABLED (e.g. a stage that only backfills)."""
    retry_maximum_attempts: int = 3
    """Default 3 (seed 003): Scheduler retries a failed delivery to the dispatcher; 0..185."""
    retry_maximum_event_age_seconds: int = 3600
    """Default 3600 s (seed 003): after an hour the fire goes to the schedule DLQ; 60..86400."""

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
    dispatcher_timeout_seconds: int = 900
    """Default 900 s (Lambda's maximum): a long invocation hands off rarely; 60..900."""
    dispatcher_memory_size_mb: int = 1024
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
    consumer_function_timeout_seconds: int = 30
    """Default 30 s: a batch of 10 charges is one transaction + one PublishBatch + one write."""
    consumer_memory_size_mb: int = 256
    consumer_maximum_concurrency: int | None = None
    """Default None. 2..1000 caps the charge consumer (FIFO: also bounded by message groups)."""
    consumer_reserved_concurrency: int | None = None
    max_receive_count: int = 5
    """Default 5 (seed 003) for the work queue; 3..20."""
    work_queue_high_throughput: bool = True
    """Default True: the work queue (and its DLQ) use SQS high-throughput FIFO. A plain FIFO
    queue takes 300 SendMessageBatch calls/s, i.e. 3,000 charges/s for the whole queue, so a
    1,000,000-item month would need over 5 minutes of sending at best; high-throughput mode
    limits per message group (``<tenant>#<month>``) instead, and the per-group deduplication
    it implies is exact here because a charge's dedup id and its group both come from its
    tenant and month. False keeps the per-queue limit (e.g. a region without the mode)."""
    claim_ttl_seconds: int = renv.DEFAULT_CLAIM_TTL_SECONDS
    """Default 90 days (seed 003): charge claims outlive any redelivery of the month."""

    # --- Shared ---------------------------------------------------------------------------------
    architecture: str = "arm64"
    runtime: str = "python3.12"
    powertools_layer_version: int = DEFAULT_POWERTOOLS_LAYER_VERSION
    log_retention_days: int = 30
    log_level: str = "INFO"
    metrics_namespace: str = "IdempotentMessaging"
    tracing: bool = False
    kms_master_key_id: pulumi.Input[str] | None = None
    """Default None (SQS-managed SSE, AWS-managed table keys). A KMS key ARN encrypts queues
    and tables with it and grants both functions its use."""
    alarm_topic_arn: pulumi.Input[str] | None = None
    """Default None = the consumer child's alarm topic (created by it) for every alarm here."""
    alarm_emails: Sequence[str] = ()
    create_dashboard: bool = True
    """Default True: a CloudWatch dashboard ``<physical>-fanout`` with the run's progress
    (charges enqueued, rejected, segments handed off, charges processed), the work and control
    queues, both DLQs and the dispatcher's errors and duration; the charge consumer gets its own.
    False opts out of both."""
    physical_name: str | None = None
    """Default None = ``<name>-<stack>`` (at most 32 characters: the consumer child appends
    ``-charges`` and its own names stay within AWS limits)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def validate_fanout_args(name: str, physical: str, args: MonthlyFanoutArgs) -> None:
    """Every arg, before any resource exists; ValueError naming field, value and rule."""
    check_name("name", name, 64)
    check_name("physical_name", physical, MAX_FANOUT_PHYSICAL_NAME_LEN)
    tz = args.schedule_expression_timezone
    try:
        if not isinstance(tz, str) or not tz:
            raise ValueError
        ZoneInfo(tz)
    except (ValueError, ZoneInfoNotFoundError):
        raise fail(
            "schedule_expression_timezone", tz, "must be an IANA time zone such as 'Asia/Tokyo'"
        ) from None
    expr = args.schedule_expression
    if not isinstance(expr, str) or not (
        _CRON_RE.match(expr) or _RATE_RE.match(expr) or _AT_RE.match(expr)
    ):
        raise fail(
            "schedule_expression",
            expr,
            "must be 'cron(min hour day-of-month month day-of-week year)' (six fields), "
            "'rate(N unit)' or 'at(yyyy-mm-ddThh:mm:ss)'",
        )
    check_range(
        "retry_maximum_attempts", args.retry_maximum_attempts, 0, SCHEDULER_MAX_RETRY_ATTEMPTS
    )
    check_range(
        "retry_maximum_event_age_seconds",
        args.retry_maximum_event_age_seconds,
        SCHEDULER_MIN_EVENT_AGE_S,
        SCHEDULER_MAX_EVENT_AGE_S,
        " seconds (EventBridge Scheduler's limits)",
    )
    check_choice("item_source", args.item_source, SOURCE_CHOICES)
    _pair(
        "existing_billing_accounts_table",
        args.existing_billing_accounts_table_name,
        args.existing_billing_accounts_table_arn,
    )
    _pair("existing_runs_table", args.existing_runs_table_name, args.existing_runs_table_arn)
    if args.item_source == denv.SOURCE_S3:
        if not isinstance(args.manifest_bucket_name, str) or not _BUCKET_RE.match(
            args.manifest_bucket_name
        ):
            raise fail(
                "manifest_bucket_name",
                args.manifest_bucket_name,
                "must be an S3 bucket name when item_source is 's3'",
            )
        if args.existing_billing_accounts_table_name is not None:
            raise fail(
                "existing_billing_accounts_table_name",
                args.existing_billing_accounts_table_name,
                "is unused when item_source is 's3'; remove it",
            )
    elif args.manifest_bucket_name is not None:
        raise fail(
            "manifest_bucket_name",
            args.manifest_bucket_name,
            "is only read when item_source is 's3'",
        )
    if "{month}" not in args.manifest_key_template:
        raise fail("manifest_key_template", args.manifest_key_template, "must contain '{month}'")
    check_range(
        "dispatcher_timeout_seconds",
        args.dispatcher_timeout_seconds,
        60,
        limits.LAMBDA_MAX_TIMEOUT_S,
        " seconds (a page, a checkpoint and a hand-off need at least a minute)",
    )
    check_range("dispatcher_memory_size_mb", args.dispatcher_memory_size_mb, 128, 10_240)
    check_range("scan_segments", args.scan_segments, 1, 1000)
    check_range("scan_page_size", args.scan_page_size, 1, 100_000)
    check_range("send_concurrency", args.send_concurrency, 1, 256)
    check_range(
        "time_reserve_seconds",
        args.time_reserve_seconds,
        1,
        args.dispatcher_timeout_seconds - 1,
        f" (below dispatcher_timeout_seconds {args.dispatcher_timeout_seconds})",
    )
    check_range("max_hops", args.max_hops, 1, 10_000)
    check_choice("recursive_loop", args.recursive_loop, RECURSIVE_LOOP_CHOICES)
    check_range("async_retry_attempts", args.async_retry_attempts, 0, 2)
    if args.reserved_concurrency is not None:
        check_range(
            "reserved_concurrency",
            args.reserved_concurrency,
            2,
            100_000,
            " (one for a schedule fire plus at least one continuation worker)",
        )
    check_choice("log_level", args.log_level, LOG_LEVELS)
    if args.log_retention_days not in LOG_RETENTION_DAYS:
        raise fail(
            "log_retention_days",
            args.log_retention_days,
            f"must be a CloudWatch Logs retention value {list(LOG_RETENTION_DAYS)}",
        )
    check_alarm_target(args.alarm_emails, args.alarm_topic_arn)


def _pair(field_name: str, name: object, arn: object) -> None:
    if (name is None) != (arn is None):
        raise fail(
            f"{field_name}_name/_arn",
            (name, arn),
            "give both the name and the ARN (the grant is scoped to the ARN) or neither",
        )


class MonthlyFanout(pulumi.ComponentResource):
    """Schedule -> dispatcher -> FIFO work queue -> idempotent charge consumer."""

    schedule_name: pulumi.Output[str]
    schedule_arn: pulumi.Output[str]
    schedule_dlq_url: pulumi.Output[str]
    """Failed fires (Scheduler) and failed scheduled invocations (Lambda async) land here."""
    dispatcher_name: pulumi.Output[str]
    """Invoke it with ``{"month": "YYYY-MM"}`` for a manual run (make run-month)."""
    dispatcher_arn: pulumi.Output[str]
    control_queue_url: pulumi.Output[str]
    """Continuations of segments handed off when a dispatcher invocation ran low on time."""
    control_dlq_url: pulumi.Output[str]
    runs_table_name: pulumi.Output[str]
    """One run record per billing month (status, counts, trigger, cursors)."""
    billing_accounts_table_name: pulumi.Output[str | None]
    work_queue_url: pulumi.Output[str]
    work_queue_arn: pulumi.Output[str]
    dashboard_name: pulumi.Output[str | None]
    """The fan-out's CloudWatch dashboard; None with create_dashboard=False."""
    consumer: IdempotentQueueConsumer
    """The work queue + charge consumer child; its outputs are re-exported as consumer_*."""
    alarm_names: pulumi.Output[list[str]]
    """Alarms created here (schedule DLQ, control DLQ, dispatcher errors/throttles)."""

    def __init__(
        self, name: str, args: MonthlyFanoutArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        if not isinstance(args, MonthlyFanoutArgs):
            raise fail("args", type(args).__name__, "must be MonthlyFanoutArgs")
        physical = args.physical_name or f"{name}-{pulumi.get_stack()}"
        validate_fanout_args(name, physical, args)
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {COMPONENT_TAG_KEY: name, **dict(args.tags)}
        kms = args.kms_master_key_id

        # --- Work queue + charge consumer: the reusable component, FIFO, tenant claims -------
        self.consumer = IdempotentQueueConsumer(
            f"{name}-charges",
            IdempotentQueueConsumerArgs(
                handler=CHARGES_HANDLER,
                fifo=True,
                content_based_deduplication=False,  # the dispatcher sends a dedup id
                high_throughput_fifo=args.work_queue_high_throughput,
                state_key_layout=renv.LAYOUT_TENANT,
                claim_ttl_seconds=args.claim_ttl_seconds,
                business_table=BusinessTableArgs(
                    name=LEDGER_TABLE,
                    hash_key=denv.LEDGER_HASH_KEY,
                    range_key=denv.LEDGER_RANGE_KEY,
                ),
                create_notification_topic=True,
                function_timeout_seconds=args.consumer_function_timeout_seconds,
                memory_size_mb=args.consumer_memory_size_mb,
                maximum_concurrency=args.consumer_maximum_concurrency,
                reserved_concurrency=args.consumer_reserved_concurrency,
                max_receive_count=args.max_receive_count,
                architecture=args.architecture,
                runtime=args.runtime,
                powertools_layer_version=args.powertools_layer_version,
                log_retention_days=args.log_retention_days,
                log_level=args.log_level,
                metrics_namespace=args.metrics_namespace,
                tracing=args.tracing,
                kms_master_key_id=kms,
                alarm_topic_arn=args.alarm_topic_arn,
                alarm_emails=args.alarm_emails,
                service_name=f"{name}{CHILD_SUFFIX}",
                create_dashboard=args.create_dashboard,
                physical_name=f"{physical}{CHILD_SUFFIX}",
                tags=dict(args.tags),
            ),
            opts=child,
        )
        alarm_actions: list[pulumi.Input[str]] = [self.consumer.alarm_topic_arn]

        # --- Tables ------------------------------------------------------------------------------
        billing_name: pulumi.Input[str] | None = None
        billing_arn: pulumi.Input[str] | None = None
        if args.item_source == denv.SOURCE_DYNAMODB:
            if args.existing_billing_accounts_table_name is not None:
                billing_name = args.existing_billing_accounts_table_name
                billing_arn = args.existing_billing_accounts_table_arn
            else:
                billing = create_table(
                    f"{name}-billing-accounts",
                    table_name=f"{physical}-billing-accounts",
                    schema=KeySchema(
                        hash_key=denv.BILLING_HASH_KEY, range_key=denv.BILLING_RANGE_KEY
                    ),
                    kms_key_arn=kms,
                    tags=tags,
                    parent=self,
                )
                billing_name, billing_arn = billing.name, billing.arn
        if args.existing_runs_table_name is not None:
            runs_name: pulumi.Input[str] = args.existing_runs_table_name
            runs_arn: pulumi.Input[str] = args.existing_runs_table_arn  # type: ignore[assignment]
        else:
            runs = create_table(
                f"{name}-runs",
                table_name=f"{physical}-runs",
                schema=KeySchema(hash_key=denv.RUNS_HASH_KEY),
                kms_key_arn=kms,
                tags=tags,
                parent=self,
            )
            runs_name, runs_arn = runs.name, runs.arn

        # --- Queues: continuations (FIFO, one group per segment) and failed starts ------------
        control = create_queue_pair(
            f"{name}-control",
            QueuePairSpec(
                queue_name=f"{physical}-control",
                fifo=True,
                content_based_deduplication=False,
                visibility_timeout_seconds=limits.recommended_visibility_timeout(
                    args.dispatcher_timeout_seconds
                ),
                message_retention_seconds=CONTROL_RETENTION_SECONDS,
                dlq_message_retention_seconds=limits.SQS_MAX_RETENTION_S,
                max_receive_count=args.max_receive_count,
                kms_master_key_id=kms,
                tags=tags,
            ),
            parent=self,
        )
        schedule_dlq = aws.sqs.Queue(
            f"{name}-schedule-dlq",
            name=f"{physical}-schedule-dlq",  # Scheduler requires a STANDARD queue as its DLQ
            message_retention_seconds=limits.SQS_MAX_RETENTION_S,
            sqs_managed_sse_enabled=True if kms is None else None,
            kms_master_key_id=kms,
            kms_data_key_reuse_period_seconds=300 if kms is not None else None,
            tags=tags,
            opts=child,
        )
        tls_only_policy(f"{name}-schedule-dlq-tls-only", schedule_dlq, parent=self)

        # --- Dispatcher --------------------------------------------------------------------------
        statements = [
            iam.table_statement(
                "RecordRuns",
                runs_arn,
                ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
            ),
            iam.send_queue_statement("EnqueueCharges", self.consumer.queue_arn),
            iam.allow(
                "ContinueRuns",
                (*iam.SQS_CONSUME_ACTIONS, *iam.SQS_SEND_ACTIONS),
                [control.queue.arn],
            ),
            # Lambda delivers a failed asynchronous invocation with the function's own role.
            iam.send_queue_statement("ReportFailedStarts", schedule_dlq.arn),
        ]
        if billing_arn is not None:
            statements.append(
                iam.table_statement("ScanBillingAccounts", billing_arn, ("dynamodb:Scan",))
            )
        if args.item_source == denv.SOURCE_S3:
            bucket = args.manifest_bucket_name
            prefix = args.manifest_key_template.split("{month}", 1)[0]
            # HeadObject and ranged GETs are both authorised by s3:GetObject.
            statements.append(
                iam.allow("ReadManifests", ("s3:GetObject",), [f"arn:aws:s3:::{bucket}/{prefix}*"])
            )
        if kms is not None:
            statements.append(iam.kms_statement(kms))
        environment: dict[str, pulumi.Input[str]] = {
            denv.ITEM_SOURCE: args.item_source,
            denv.RUNS_TABLE: runs_name,
            denv.WORK_QUEUE_URL: self.consumer.queue_url,
            denv.CONTROL_QUEUE_URL: control.queue.url,
            denv.SCHEDULE_TIMEZONE: args.schedule_expression_timezone,
            denv.SCAN_SEGMENTS: str(args.scan_segments),
            denv.SCAN_PAGE_SIZE: str(args.scan_page_size),
            denv.SEGMENT_CONCURRENCY: str(args.scan_segments),
            denv.SEND_CONCURRENCY: str(args.send_concurrency),
            denv.TIME_RESERVE_MS: str(args.time_reserve_seconds * 1000),
            denv.MAX_HOPS: str(args.max_hops),
            renv.POWERTOOLS_SERVICE_NAME: f"{name}{DISPATCHER_SUFFIX}",
            renv.POWERTOOLS_LOG_LEVEL: args.log_level,
            renv.POWERTOOLS_METRICS_NAMESPACE: args.metrics_namespace,
        }
        if billing_name is not None:
            environment[denv.BILLING_ACCOUNTS_TABLE] = billing_name
        if args.item_source == denv.SOURCE_S3:
            assert args.manifest_bucket_name is not None
            environment[denv.MANIFEST_BUCKET] = args.manifest_bucket_name
            environment[denv.MANIFEST_KEY_TEMPLATE] = args.manifest_key_template
        dispatcher = create_function(
            f"{name}-dispatcher",
            FunctionSpec(
                function_name=f"{physical}-dispatcher",
                handler=DISPATCHER_HANDLER,
                runtime=args.runtime,
                architecture=args.architecture,
                timeout_seconds=args.dispatcher_timeout_seconds,
                memory_size_mb=args.dispatcher_memory_size_mb,
                environment=environment,
                layers=[
                    deployment_layer_arn(
                        architecture=args.architecture,
                        runtime=args.runtime,
                        version=args.powertools_layer_version,
                        regional_arn=control.queue.arn,
                        opts=opts,
                    )
                ],
                tracing=args.tracing,
                reserved_concurrency=args.reserved_concurrency,
                log_retention_days=args.log_retention_days,
                description=f"Monthly dispatcher of {physical}",
                tags=tags,
            ),
            statements=statements,
            alarm_actions=alarm_actions,
            parent=self,
        )
        fn = dispatcher.function
        # Continuations: one message per invocation (each may take the full timeout); at most
        # one worker per segment anyway (FIFO group per segment).
        aws.lambda_.EventSourceMapping(
            f"{name}-control-esm",
            event_source_arn=control.queue.arn,
            function_name=fn.arn,
            batch_size=1,
            function_response_types=["ReportBatchItemFailures"],
            scaling_config=aws.lambda_.EventSourceMappingScalingConfigArgs(
                maximum_concurrency=min(
                    max(args.scan_segments, limits.ESM_MIN_MAXIMUM_CONCURRENCY),
                    limits.ESM_MAX_MAXIMUM_CONCURRENCY,
                )
            ),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[dispatcher.role_policy]),
        )
        # Scheduler invokes Lambda asynchronously: a function error is retried by Lambda, not
        # by Scheduler; after the retries the event must land somewhere an alarm watches.
        aws.lambda_.FunctionEventInvokeConfig(
            f"{name}-dispatcher-async",
            function_name=fn.name,
            maximum_retry_attempts=args.async_retry_attempts,
            maximum_event_age_in_seconds=args.retry_maximum_event_age_seconds,
            destination_config=aws.lambda_.FunctionEventInvokeConfigDestinationConfigArgs(
                on_failure=aws.lambda_.FunctionEventInvokeConfigDestinationConfigOnFailureArgs(
                    destination=schedule_dlq.arn
                )
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[dispatcher.role_policy]),
        )
        aws.lambda_.FunctionRecursionConfig(
            f"{name}-dispatcher-recursion",
            function_name=fn.name,
            recursive_loop=args.recursive_loop,
            opts=child,
        )

        # --- Schedule ----------------------------------------------------------------------------
        scheduler_role = aws.iam.Role(
            f"{name}-scheduler-role",
            name=f"{physical}-scheduler-role",
            assume_role_policy=iam.service_trust_policy("scheduler.amazonaws.com"),
            description=f"Lets the {physical} schedule invoke its dispatcher, and nothing else",
            tags=tags,
            opts=child,
        )
        scheduler_policy = aws.iam.RolePolicy(
            f"{name}-scheduler-policy",
            role=scheduler_role.id,
            name=f"{physical}-invoke-dispatcher",
            policy=iam.policy_json(
                [
                    iam.allow("InvokeDispatcherOnly", ("lambda:InvokeFunction",), [fn.arn]),
                    # Scheduler delivers dead-letter events with the schedule's role.
                    iam.send_queue_statement("DeadLetterFailedFires", schedule_dlq.arn),
                ]
            ),
            opts=child,
        )
        schedule = aws.scheduler.Schedule(
            f"{name}-schedule",
            name=physical,
            description=f"Monthly fan-out {physical}: fires the dispatcher with its scheduled time",
            schedule_expression=args.schedule_expression,
            schedule_expression_timezone=args.schedule_expression_timezone,
            # OFF: fire at the stated time; a window would only blur which run is which.
            flexible_time_window=aws.scheduler.ScheduleFlexibleTimeWindowArgs(mode="OFF"),
            state="ENABLED" if args.schedule_enabled else "DISABLED",
            kms_key_arn=kms,
            target=aws.scheduler.ScheduleTargetArgs(
                arn=fn.arn,
                role_arn=scheduler_role.arn,
                input=SCHEDULE_INPUT,
                retry_policy=aws.scheduler.ScheduleTargetRetryPolicyArgs(
                    maximum_retry_attempts=args.retry_maximum_attempts,
                    maximum_event_age_in_seconds=args.retry_maximum_event_age_seconds,
                ),
                dead_letter_config=aws.scheduler.ScheduleTargetDeadLetterConfigArgs(
                    arn=schedule_dlq.arn
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[scheduler_policy]),
        )

        # --- Alarms ------------------------------------------------------------------------------
        own_alarms = [
            alarms.dlq_visible_alarm(
                f"{name}-alarm-schedule-dlq",
                alarm_name=f"{physical}-schedule-dlq-not-empty",
                dlq_name=schedule_dlq.name,
                actions=alarm_actions,
                tags=tags,
                parent=self,
            ),
            alarms.dlq_visible_alarm(
                f"{name}-alarm-control-dlq",
                alarm_name=f"{physical}-control-dlq-not-empty",
                dlq_name=control.dlq.name,
                actions=alarm_actions,
                tags=tags,
                parent=self,
            ),
            *dispatcher.alarms,
        ]

        # --- Dashboard ---------------------------------------------------------------------------
        dashboard_name: pulumi.Input[str] | None = None
        if args.create_dashboard:
            dashboard = dashboards.create_dashboard(
                f"{name}-dashboard",
                dashboard_name=f"{physical}-fanout",
                regional_arn=control.queue.arn,
                names={
                    "dispatcher_name": fn.name,
                    "control_queue_name": control.queue.name,
                    "control_dlq_name": control.dlq.name,
                    "schedule_dlq_name": schedule_dlq.name,
                    "work_queue_name": self.consumer.queue_name,
                },
                build=lambda **names: dashboards.fanout_widgets(
                    **names,
                    metrics_namespace=args.metrics_namespace,
                    dispatcher_service=f"{name}{DISPATCHER_SUFFIX}",
                    consumer_service=f"{name}{CHILD_SUFFIX}",
                ),
                parent=self,
            )
            dashboard_name = dashboard.dashboard_name

        # --- Outputs -----------------------------------------------------------------------------
        self.schedule_name = schedule.name
        self.schedule_arn = schedule.arn
        self.schedule_dlq_url = schedule_dlq.url
        self.dispatcher_name = fn.name
        self.dispatcher_arn = fn.arn
        self.control_queue_url = control.queue.url
        self.control_dlq_url = control.dlq.url
        self.runs_table_name = pulumi.Output.from_input(runs_name)
        self.billing_accounts_table_name = pulumi.Output.from_input(billing_name)
        self.work_queue_url = self.consumer.queue_url
        self.work_queue_arn = self.consumer.queue_arn
        self.alarm_names = pulumi.Output.all(*[alarm.name for alarm in own_alarms])
        self.dashboard_name = pulumi.Output.from_input(dashboard_name)
        outputs: dict[str, pulumi.Input[object]] = {
            output: getattr(self, output) for output in FANOUT_OUTPUTS
        }
        for output in CONSUMER_OUTPUTS:
            outputs[f"consumer_{output}"] = getattr(self.consumer, output)
        self.register_outputs(outputs)
