"""IdempotentQueueConsumer: SQS (+DLQ) -> Lambda with an idempotency state table.

One instance creates the queues, the state table, the optional business table and
notification topic, the function with a least-privilege role, the event source mapping and
the alarms. Everything that decides which resources exist is validated first. The children
that hold data (both queues and the tables) follow ``protect_data`` (protection.py).
"""

import json
from pathlib import Path

import pulumi
import pulumi_aws as aws

from idempotent_messaging import limits, names
from idempotent_messaging.runtime import env, grants
from idempotent_messaging.runtime.settings import is_fifo

from . import alarms, dashboards, iam
from .bundle import archive_assets, directory_files, user_code_archive
from .consumer_args import BusinessTableArgs, IdempotentQueueConsumerArgs
from .consumer_validation import notification_ordering, validate_consumer_args
from .errors import ArgumentError, fail
from .function import FunctionSpec, create_function
from .opening import open_component
from .powertools import deployment_layer_arn, region_and_partition_of
from .protection import ROLE_BUSINESS_ROWS
from .queues import QueuePairSpec, create_queue_pair
from .tables import KeySchema, create_state_table, create_table

__all__ = [
    "CONSUMER_OUTPUTS",
    "BusinessTableArgs",
    "IdempotentQueueConsumer",
    "IdempotentQueueConsumerArgs",
]

TYPE_TOKEN = "idempotent-messaging:index:IdempotentQueueConsumer"
"""``<package>:index:<class>``: the token the engine expects of a component the package's
provider hosts (components/provider.py), so Python and every other language agree on it."""
FORMER_TYPE_TOKEN = "idempotent-messaging:components:IdempotentQueueConsumer"
"""The token before the component package; aliased so existing stacks keep their resources."""
CONSUMER_OUTPUTS = (
    "queue_url", "queue_arn", "queue_name", "dlq_url", "dlq_arn", "dlq_name",
    "state_table_name", "state_table_arn", "business_table_name", "topic_arn",
    "function_name", "function_arn", "role_arn", "alarm_names", "alarm_topic_arn",
    "dashboard_name",
)  # fmt: skip
"""Every output of the component: its annotated attributes, registered under these names."""


def account_of(arn: str) -> str:
    """Account id of an ARN (arn:partition:service:region:account:...)."""
    parts = arn.split(":")
    if len(parts) < 6 or not parts[4].isdigit():
        raise ValueError(f"arn={arn!r}: carries no account id")
    return parts[4]


def consumer_code(
    handler: str, code_path: str | None, code: pulumi.Archive | None, prefix: str = ""
) -> pulumi.Archive:
    """The function's archive: the user's code with the runtime merged in. Raises before any
    resource exists; ``prefix`` names where the fields sit (``consumer_`` in MonthlyFanout)."""
    try:
        if code_path is not None:
            directory = Path(code_path)
            if not directory.is_dir():
                raise fail(f"{prefix}code_path", code_path, "is not a directory")
            return user_code_archive(
                handler, directory_files(directory), f"{prefix}code_path", code_path
            )
        if code is None:
            raise fail(
                f"{prefix}code_path",
                None,
                f"give your handler's code: {prefix}code_path (a directory) or {prefix}code (a "
                "pulumi archive); the library ships no consumer code of its own",
            )
        return user_code_archive(
            handler, archive_assets(code, f"{prefix}code"), f"{prefix}code", type(code).__name__
        )
    except ArgumentError as exc:
        if exc.path.startswith(prefix):
            raise
        raise fail(f"{prefix}{exc.path}", exc.value, exc.rule) from None


class IdempotentQueueConsumer(pulumi.ComponentResource):
    """An SQS consumer whose DB effects happen exactly once and notifications at least once."""

    queue_url: pulumi.Output[str]
    """URL of the source queue (producers send here)."""
    queue_arn: pulumi.Output[str]
    """ARN of the source queue (grant producers sqs:SendMessage on it)."""
    queue_name: pulumi.Output[str]
    """Name of the source queue (``<physical>`` or ``<physical>.fifo``)."""
    dlq_url: pulumi.Output[str]
    """URL of the dead-letter queue (the function quarantines here; redrive from here)."""
    dlq_arn: pulumi.Output[str]
    """ARN of the dead-letter queue (the source queue's redrive target)."""
    dlq_name: pulumi.Output[str]
    """Name of the dead-letter queue (its depth alarm watches this name)."""
    state_table_name: pulumi.Output[str]
    """The idempotency state (claim) table."""
    state_table_arn: pulumi.Output[str]
    """ARN of the idempotency state table."""
    business_table_name: pulumi.Output[str | None]
    """Created or passed-in business table; None without one."""
    topic_arn: pulumi.Output[str | None]
    """Notification topic (created or passed in); None without one."""
    function_name: pulumi.Output[str]
    """Name of the consumer Lambda function."""
    function_arn: pulumi.Output[str]
    """ARN of the consumer Lambda function."""
    role_arn: pulumi.Output[str]
    """ARN of the function's least-privilege execution role."""
    alarm_names: pulumi.Output[list[str]]
    """Names of every alarm the component created."""
    alarm_topic_arn: pulumi.Output[str]
    """Topic every alarm notifies (created or passed in)."""
    dashboard_name: pulumi.Output[str | None]
    """The consumer's CloudWatch dashboard; None with create_dashboard=False."""

    def __init__(
        self,
        name: str,
        args: IdempotentQueueConsumerArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        def check(args: IdempotentQueueConsumerArgs, physical: str) -> tuple[int, pulumi.Archive]:
            visibility = validate_consumer_args(name, physical, args)
            return visibility, consumer_code(args.handler, args.code_path, args.code)

        # `args` is the dataclass, or the dict of inputs the component provider host passes for
        # a program in another Pulumi language (open_component builds the dataclass from it).
        opened = open_component(
            self,
            name,
            args,
            opts,
            args_type=IdempotentQueueConsumerArgs,
            type_token=TYPE_TOKEN,
            former_type_token=FORMER_TYPE_TOKEN,
            check=check,
        )
        args, physical, tags = opened.args, opened.physical, opened.tags
        visibility, code = opened.checked
        kms = args.kms_master_key_id

        # --- Queues ----------------------------------------------------------------------------
        pair = create_queue_pair(
            f"{name}-queue",
            QueuePairSpec(
                queue_name=physical,
                fifo=args.fifo,
                content_based_deduplication=args.content_based_deduplication,
                high_throughput=args.high_throughput_fifo,
                visibility_timeout_seconds=visibility,
                message_retention_seconds=args.message_retention_seconds,
                dlq_message_retention_seconds=args.dlq_message_retention_seconds,
                max_receive_count=args.max_receive_count,
                protect_data=args.protect_data,
                kms_master_key_id=kms,
                tags=tags,
                deny_native_redrive=not args.allow_native_dlq_redrive,
            ),
            parent=self,
        )
        queue, dlq = pair.queue, pair.dlq
        # The trusts and key policies name the deploying account: the queue's ARN carries it.
        account_id = queue.arn.apply(account_of)

        # --- Tables ----------------------------------------------------------------------------
        state_table = create_state_table(
            f"{name}-state",
            table_name=f"{physical}-idempotency-state",
            layout=args.state_key_layout,
            ttl_attribute=args.state_ttl_attribute,
            protect_data=args.protect_data,
            kms_key_arn=kms,
            tags=tags,
            parent=self,
        )
        business_name: pulumi.Input[str] | None = None
        business_arn: pulumi.Input[str] | None = None
        if args.business_table is not None:
            spec = args.business_table
            business = create_table(
                f"{name}-{spec.name}",
                table_name=f"{physical}-{spec.name}",
                schema=KeySchema(
                    hash_key=spec.hash_key,
                    hash_key_type=spec.hash_key_type,
                    range_key=spec.range_key,
                    range_key_type=spec.range_key_type,
                ),
                role=ROLE_BUSINESS_ROWS,
                protect_data=args.protect_data,
                kms_key_arn=kms,
                tags=tags,
                parent=self,
            )
            business_name, business_arn = business.name, business.arn
        elif args.existing_business_table_name is not None:
            business_name = args.existing_business_table_name
            business_arn = args.existing_business_table_arn

        # --- Topics ----------------------------------------------------------------------------
        topic_arn: pulumi.Input[str] | None = args.notification_topic_arn
        if args.create_notification_topic:
            topic_full = f"{physical}-notifications"
            topic_name = names.fit(topic_full, names.SNS_TOPIC)
            topic = aws.sns.Topic(
                f"{name}-notifications",
                name=topic_name,
                # The AWS-managed key works for publishers in this account (the function).
                kms_master_key_id=kms if kms is not None else "alias/aws/sns",
                tags=names.tagged(tags, topic_full, topic_name),
                opts=pulumi.ResourceOptions(parent=self),
            )
            topic_arn = topic.arn
        if topic_arn is not None:
            # Say what order the notifications keep (a FIFO topic from a standard queue: none).
            pulumi.Output.from_input(topic_arn).apply(
                lambda arn: pulumi.log.info(
                    notification_ordering(queue_fifo=args.fifo, topic_fifo=is_fifo(arn or "")),
                    resource=self,
                )
            )

        if args.alarm_topic_arn is None:
            alarm_topic = alarms.create_alarm_topic(
                f"{name}-alarms",
                topic_name=f"{physical}-alarms",
                # The key policy names this account's root in this partition (aws-cn, ...).
                account_id=account_id,
                partition=queue.arn.apply(lambda arn: region_and_partition_of(arn)[1]),
                emails=args.alarm_emails,
                tags=tags,
                parent=self,
            )
            alarm_topic_arn: pulumi.Input[str] = alarm_topic.topic.arn
        else:
            alarm_topic_arn = args.alarm_topic_arn
        alarm_actions = [alarm_topic_arn]

        # --- Function --------------------------------------------------------------------------
        # Exactly what the declared consumer calls (runtime/grants.py), per resource.
        granted = grants.consumer_grants(
            placement=args.claim_placement,
            fifo=args.fifo,
            notifies=topic_arn is not None,
            has_business_table=business_arn is not None,
            business_writes=args.business_writes,
        )
        statements = [
            iam.consume_queue_statement(queue.arn, granted.source_queue),
            iam.allow("QuarantineToDeadLetterQueue", granted.dead_letter_queue, [dlq.arn]),
        ]
        if granted.state_table:
            statements.append(
                iam.table_statement("ClaimEvents", state_table.arn, granted.state_table)
            )
        if business_arn is not None and granted.business_table:
            statements.append(
                iam.table_statement("WriteBusinessRows", business_arn, granted.business_table)
            )
        if topic_arn is not None and granted.topic:
            statements.append(iam.allow("PublishNotifications", granted.topic, [topic_arn]))
        if kms is not None:
            # The mapping decrypts what it receives; the DLQ send, the notification publish
            # and the encrypted tables use the key too (iam.KMS_USE_ACTIONS).
            statements.append(iam.kms_statement(kms))

        environment: dict[str, pulumi.Input[str]] = {
            **dict(args.environment),
            env.STATE_TABLE: state_table.name,
            env.STATE_KEY_LAYOUT: args.state_key_layout,
            env.STATE_TTL_ATTRIBUTE: args.state_ttl_attribute,
            env.CLAIM_TTL_SECONDS: str(args.claim_ttl_seconds),
            env.DLQ_URL: dlq.url,
            env.DLQ_MAX_MESSAGE_BYTES: str(limits.SQS_MAX_MESSAGE_BYTES),
            env.SOURCE_QUEUE_FIFO: "true" if args.fifo else "false",
            env.SOURCE_RETENTION_SECONDS: str(args.message_retention_seconds),
            env.DLQ_RETENTION_SECONDS: str(args.dlq_message_retention_seconds),
            env.MAX_RECEIVE_COUNT: str(args.max_receive_count),
            env.POWERTOOLS_SERVICE_NAME: args.service_name or name,
            env.POWERTOOLS_LOG_LEVEL: args.log_level,
            env.POWERTOOLS_METRICS_NAMESPACE: args.metrics_namespace,
            env.POWERTOOLS_TRACE_DISABLED: "false" if args.tracing else "true",
        }
        if business_name is not None:
            environment[env.BUSINESS_TABLE] = business_name
        if args.fingerprint_fields is not None:
            environment[env.FINGERPRINT_FIELDS] = json.dumps(list(args.fingerprint_fields))
        if topic_arn is not None:
            environment[env.NOTIFICATION_TOPIC_ARN] = topic_arn

        layer = deployment_layer_arn(
            architecture=args.architecture,
            runtime=args.runtime,
            version=args.powertools_layer_version,
            regional_arn=queue.arn,
            opts=opts,
        )

        fn = create_function(
            f"{name}-consumer",
            FunctionSpec(
                function_name=f"{physical}-consumer",
                handler=args.handler,
                code=code,
                runtime=args.runtime,
                architecture=args.architecture,
                timeout_seconds=args.function_timeout_seconds,
                memory_size_mb=args.memory_size_mb,
                environment=environment,
                layers=[layer],
                tracing=args.tracing,
                reserved_concurrency=args.reserved_concurrency,
                log_retention_days=args.log_retention_days,
                description=f"Idempotent consumer of {physical}",
                tags=tags,
                account_id=account_id,
            ),
            statements=statements,
            alarm_actions=alarm_actions,
            parent=self,
        )

        # --- Event source mapping ------------------------------------------------------------
        aws.lambda_.EventSourceMapping(
            f"{name}-esm",
            event_source_arn=queue.arn,
            function_name=fn.function.arn,
            batch_size=args.batch_size,
            # FIFO sources accept no batching window at all (validated to be 0): omit it.
            maximum_batching_window_in_seconds=(
                None if args.fifo else args.maximum_batching_window_seconds
            ),
            # Always: one failed record must not send its nine successful neighbours back.
            function_response_types=["ReportBatchItemFailures"],
            scaling_config=(
                aws.lambda_.EventSourceMappingScalingConfigArgs(
                    maximum_concurrency=args.maximum_concurrency
                )
                if args.maximum_concurrency is not None
                else None
            ),
            tags=tags,
            # Lambda checks the role can read the queue when the mapping is created.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[fn.role_policy]),
        )

        # --- Queue alarms ----------------------------------------------------------------------
        age_threshold = args.age_alarm_threshold_seconds or limits.age_alarm_threshold(
            args.message_retention_seconds
        )
        queue_alarms = [
            alarms.dlq_visible_alarm(
                f"{name}-alarm-dlq",
                alarm_name=f"{physical}-dlq-not-empty",
                dlq_name=dlq.name,
                actions=alarm_actions,
                tags=tags,
                parent=self,
            ),
            alarms.oldest_message_age_alarm(
                f"{name}-alarm-age",
                alarm_name=f"{physical}-oldest-message-age",
                queue_name=queue.name,
                threshold_seconds=age_threshold,
                actions=alarm_actions,
                tags=tags,
                parent=self,
            ),
            alarms.conflict_alarm(
                f"{name}-alarm-conflicts",
                alarm_name=f"{physical}-conflicting-duplicates",
                metrics_namespace=args.metrics_namespace,
                service_name=args.service_name or name,
                actions=alarm_actions,
                tags=tags,
                parent=self,
            ),
        ]
        all_alarms = [*queue_alarms, *fn.alarms]

        # --- Dashboard -------------------------------------------------------------------------
        dashboard_name: pulumi.Input[str] | None = None
        if args.create_dashboard:
            service_name = args.service_name or name
            dashboard = dashboards.create_dashboard(
                f"{name}-dashboard",
                dashboard_name=f"{physical}-consumer",
                regional_arn=queue.arn,
                names={
                    "queue_name": queue.name,
                    "dlq_name": dlq.name,
                    "function_name": fn.function.name,
                },
                build=lambda **names: dashboards.consumer_widgets(
                    **names,
                    metrics_namespace=args.metrics_namespace,
                    service_name=service_name,
                ),
                parent=self,
            )
            dashboard_name = dashboard.dashboard_name

        # --- Outputs ---------------------------------------------------------------------------
        self.queue_url = queue.url
        self.queue_arn = queue.arn
        self.queue_name = queue.name
        self.dlq_url = dlq.url
        self.dlq_arn = dlq.arn
        self.dlq_name = dlq.name
        self.state_table_name = state_table.name
        self.state_table_arn = state_table.arn
        self.business_table_name = pulumi.Output.from_input(business_name)
        self.topic_arn = pulumi.Output.from_input(topic_arn)
        self.function_name = fn.function.name
        self.function_arn = fn.function.arn
        self.role_arn = fn.role.arn
        self.alarm_names = pulumi.Output.all(*[alarm.name for alarm in all_alarms])
        self.alarm_topic_arn = pulumi.Output.from_input(alarm_topic_arn)
        self.dashboard_name = pulumi.Output.from_input(dashboard_name)
        self.register_outputs({output: getattr(self, output) for output in CONSUMER_OUTPUTS})
