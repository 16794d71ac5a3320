"""MonthlyFanout: a scheduled, scalable, idempotent monthly batch (e.g. monthly billing).

EventBridge Scheduler (cron in a time zone, no flexible window, retries, DLQ) invokes a
dispatcher Lambda that enumerates billable items and enqueues one charge per (tenant,
employee, month) on a FIFO work queue; the work queue and its charge consumer are an
IdempotentQueueConsumer child (FIFO, tenant-layout claims, a ledger business table).

Scale: the dispatcher works on N parallel scan segments and checkpoints every page in a run
record; when its time runs low it hands each unfinished segment to a FIFO control queue that
invokes the dispatcher again (docs/monthly.md). That loop is deliberate, so the function's
recursive-loop detection is set to Allow and the dispatcher bounds it itself (max_hops).

Every child that holds data (the consumer child's queues and tables, the runs and
billing-accounts tables, the control queues, the schedule DLQ) follows ``protect_data``
(protection.py).
"""

import json

import pulumi
import pulumi_aws as aws

from idempotent_messaging import limits, names
from idempotent_messaging.dispatch import env as denv
from idempotent_messaging.runtime import env as renv

from . import alarms, dashboards, iam
from .consumer import CONSUMER_OUTPUTS, IdempotentQueueConsumer, account_of, consumer_code
from .consumer_args import BusinessTableArgs, IdempotentQueueConsumerArgs
from .consumer_validation import check_handler
from .errors import fail
from .fanout_args import MonthlyFanoutArgs
from .fanout_validation import CHILD_SUFFIX, validate_fanout_args
from .function import FunctionSpec, create_function
from .opening import open_component
from .powertools import deployment_layer_arn, region_and_partition_of
from .protection import (
    ROLE_BILLING_ACCOUNTS,
    ROLE_CONTROL_DEAD_LETTER_QUEUE,
    ROLE_CONTROL_QUEUE,
    ROLE_RUN_RECORDS,
    ROLE_SCHEDULE_DEAD_LETTER_QUEUE,
    data_options,
    data_tags,
)
from .queues import QueuePairSpec, create_queue_pair, tls_only_policy
from .tables import KeySchema, create_table

__all__ = ["FANOUT_OUTPUTS", "MonthlyFanout", "MonthlyFanoutArgs", "validate_fanout_args"]

TYPE_TOKEN = "idempotent-messaging:index:MonthlyFanout"
"""``<package>:index:<class>``, as consumer.TYPE_TOKEN."""
FORMER_TYPE_TOKEN = "idempotent-messaging:components:MonthlyFanout"
"""The token before the component package; aliased so existing stacks keep their resources."""
DISPATCHER_HANDLER = "idempotent_messaging.dispatch.app.handler"
CHARGES_HANDLER = "handlers.charges.handler"
SCHEDULE_INPUT = json.dumps(
    {"trigger": "schedule", "scheduled_time": "<aws.scheduler.scheduled-time>"}, sort_keys=True
)
"""The target input: Scheduler substitutes the SCHEDULED time (not the delivery time), so a
retry an hour late still names the same billing month."""
DISPATCHER_SUFFIX = "-dispatcher"
CONTROL_RETENTION_SECONDS = 4 * 24 * 3600
LEDGER_TABLE = "ledger"
SCHEDULE_GROUP = "default"
"""The schedule's group: Scheduler's default one (always there, used when a schedule names no
group), which the scheduler role's trust names (aws:SourceArn)."""
FANOUT_OUTPUTS = (
    "schedule_name", "schedule_arn", "schedule_dlq_url", "dispatcher_name", "dispatcher_arn",
    "control_queue_url", "control_dlq_url", "runs_table_name", "billing_accounts_table_name",
    "work_queue_url", "work_queue_arn", "alarm_names", "dashboard_name",
)  # fmt: skip
"""The component's own outputs; the consumer child's are registered as ``consumer_<output>``."""


class MonthlyFanout(pulumi.ComponentResource):
    """Schedule -> dispatcher -> FIFO work queue -> idempotent charge consumer."""

    schedule_name: pulumi.Output[str]
    """Name of the EventBridge Scheduler schedule that starts each month's run."""
    schedule_arn: pulumi.Output[str]
    """ARN of that schedule."""
    schedule_dlq_url: pulumi.Output[str]
    """Failed fires (Scheduler) and failed scheduled invocations (Lambda async) land here."""
    dispatcher_name: pulumi.Output[str]
    """Invoke it with ``{"month": "YYYY-MM"}`` for a manual run (make run-month)."""
    dispatcher_arn: pulumi.Output[str]
    """ARN of the dispatcher Lambda function."""
    control_queue_url: pulumi.Output[str]
    """Continuations of segments handed off when a dispatcher invocation ran low on time."""
    control_dlq_url: pulumi.Output[str]
    """Continuations that failed max_receive_count times land here (alarmed)."""
    runs_table_name: pulumi.Output[str]
    """One run record per billing month (status, counts, trigger, cursors)."""
    billing_accounts_table_name: pulumi.Output[str | None]
    """The table the dispatcher scans (created or passed in); None with item_source ``s3``."""
    work_queue_url: pulumi.Output[str]
    """URL of the FIFO work queue (one charge per tenant, employee and month)."""
    work_queue_arn: pulumi.Output[str]
    """ARN of the FIFO work queue."""
    dashboard_name: pulumi.Output[str | None]
    """The fan-out's CloudWatch dashboard; None with create_dashboard=False."""
    alarm_names: pulumi.Output[list[str]]
    """Alarms created here (schedule DLQ, control DLQ, dispatcher errors/throttles)."""

    def __init__(
        self, name: str, args: MonthlyFanoutArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        def check(args: MonthlyFanoutArgs, physical: str) -> None:
            validate_fanout_args(name, physical, args)
            # The charge consumer's code, checked here so errors name this component's fields
            # (the child checks the same code again under its own names).
            check_handler("consumer_handler", args.consumer_handler)
            if args.consumer_code_path is not None and args.consumer_code is not None:
                raise fail(
                    "consumer_code",
                    type(args.consumer_code).__name__,
                    "give either consumer_code_path or consumer_code, not both",
                )
            consumer_code(
                args.consumer_handler, args.consumer_code_path, args.consumer_code, "consumer_"
            )

        # The dataclass, or a dict from the component provider host: see IdempotentQueueConsumer.
        opened = open_component(
            self,
            name,
            args,
            opts,
            args_type=MonthlyFanoutArgs,
            type_token=TYPE_TOKEN,
            former_type_token=FORMER_TYPE_TOKEN,
            check=check,
        )
        args, physical, tags, child = opened.args, opened.physical, opened.tags, opened.child
        kms = args.kms_master_key_id

        # --- Work queue + charge consumer: the reusable component, FIFO, tenant claims -------
        # Annotated here, not on the class: the class annotations are the component's schema
        # outputs, and a child component is no output another language can hold.
        self.consumer: IdempotentQueueConsumer = IdempotentQueueConsumer(
            f"{name}-charges",
            IdempotentQueueConsumerArgs(
                handler=args.consumer_handler,
                code_path=args.consumer_code_path,
                code=args.consumer_code,
                fifo=True,
                content_based_deduplication=False,  # the dispatcher sends a dedup id
                high_throughput_fifo=args.work_queue_high_throughput,
                state_key_layout=renv.LAYOUT_TENANT,
                claim_placement=args.consumer_claim_placement,
                business_writes=args.consumer_business_writes,
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
                protect_data=args.protect_data,
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
                    role=ROLE_BILLING_ACCOUNTS,
                    protect_data=args.protect_data,
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
                role=ROLE_RUN_RECORDS,
                protect_data=args.protect_data,
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
                protect_data=args.protect_data,
                queue_role=ROLE_CONTROL_QUEUE,
                dlq_role=ROLE_CONTROL_DEAD_LETTER_QUEUE,
                kms_master_key_id=kms,
                tags=tags,
            ),
            parent=self,
        )
        # The deploying account, region and partition, from an ARN this component created.
        account_id = control.queue.arn.apply(account_of)
        region = control.queue.arn.apply(lambda arn: region_and_partition_of(arn)[0])
        partition = control.queue.arn.apply(lambda arn: region_and_partition_of(arn)[1])
        schedule_dlq_full = f"{physical}-schedule-dlq"
        schedule_dlq_name = names.fit(schedule_dlq_full, names.SQS_QUEUE)
        schedule_dlq = aws.sqs.Queue(
            f"{name}-schedule-dlq",
            name=schedule_dlq_name,  # Scheduler requires a STANDARD queue as its DLQ
            message_retention_seconds=limits.SQS_MAX_RETENTION_S,
            sqs_managed_sse_enabled=True if kms is None else None,
            kms_master_key_id=kms,
            kms_data_key_reuse_period_seconds=300 if kms is not None else None,
            tags=data_tags(
                names.tagged(tags, schedule_dlq_full, schedule_dlq_name),
                ROLE_SCHEDULE_DEAD_LETTER_QUEUE,
                protect_data=args.protect_data,
            ),
            opts=data_options(self, args.protect_data),
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
            # The control queue's mapping polls it; the dispatcher sends continuations to it.
            iam.allow(
                "ContinueRuns",
                (*iam.SQS_POLL_ACTIONS, *iam.SQS_SEND_ACTIONS),
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
                account_id=account_id,
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
        # In the default group: the trust names that group (the schedule's ARN is not known
        # before the role exists, and Scheduler passes the group's ARN as aws:SourceArn).
        schedule_name = names.fit(physical, names.SCHEDULER_SCHEDULE)
        schedule_group_arn = pulumi.Output.all(partition, region, account_id).apply(
            lambda v: f"arn:{v[0]}:scheduler:{v[1]}:{v[2]}:schedule-group/{SCHEDULE_GROUP}"
        )
        scheduler_role_full = f"{physical}-scheduler-role"
        scheduler_role_name = names.fit(scheduler_role_full, names.IAM_ROLE)
        scheduler_role = aws.iam.Role(
            f"{name}-scheduler-role",
            name=scheduler_role_name,
            # EventBridge Scheduler user guide, "Cross-service confused deputy prevention".
            assume_role_policy=iam.service_trust_policy(
                "scheduler.amazonaws.com", account_id=account_id, source_arn=schedule_group_arn
            ),
            description=f"Lets the {physical} schedule invoke its dispatcher, and nothing else",
            tags=names.tagged(tags, scheduler_role_full, scheduler_role_name),
            opts=child,
        )
        scheduler_statements = [
            iam.allow("InvokeDispatcherOnly", ("lambda:InvokeFunction",), [fn.arn]),
            # Scheduler delivers dead-letter events with the schedule's role.
            iam.send_queue_statement("DeadLetterFailedFires", schedule_dlq.arn),
        ]
        if kms is not None:
            # The role reads the encrypted schedule (kms:Decrypt: EventBridge Scheduler user
            # guide, "Encryption at rest") and sends to the key-encrypted schedule DLQ
            # (kms:GenerateDataKey + kms:Decrypt: SQS developer guide, "Key management").
            scheduler_statements.append(iam.kms_statement(kms, "UseScheduleKey"))
        scheduler_policy = aws.iam.RolePolicy(
            f"{name}-scheduler-policy",
            role=scheduler_role.id,
            name=names.fit(f"{physical}-invoke-dispatcher", names.IAM_INLINE_POLICY),
            policy=iam.policy_json(scheduler_statements),
            opts=child,
        )
        schedule = aws.scheduler.Schedule(
            f"{name}-schedule",
            name=schedule_name,  # in SCHEDULE_GROUP: Scheduler's default when none is named
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
