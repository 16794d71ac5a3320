"""The policy pack's contents: every policy with its name, enforcement level and config schema.

`policy/__main__.py` only hands `POLICIES` to `PolicyPack` (which starts a gRPC server and
blocks); everything else, including the offline checker, imports this module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policy import functions, limits, queues, scheduling, security, tables
from policy.graph import Graph
from policy.values import plain

PACK_NAME = "idempotent-messaging"
PACK_DESCRIPTION = (
    "Correct-by-default SQS -> Lambda pipelines: visibility vs function timeout, redrive and "
    "DLQs, partial batch responses, DLQ alarms, idempotency-table TTL, Scheduler retries."
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY

StackRule = Callable[[Graph, Mapping[str, Any]], list[tuple[str, str]]]
ResourceRule = Callable[[str, Mapping[str, Any], str, Mapping[str, Any]], list[str]]


def _rule_failed(what: str, exc: Exception) -> None:
    # stderr: the CLI shows a policy pack's stderr, and stdout carries the gRPC port.
    print(f"policy {what} could not run: {type(exc).__name__}: {exc}", file=sys.stderr)


def _stack(
    name: str,
    description: str,
    rule: StackRule,
    level: EnforcementLevel,
    remediation: str,
    schema: dict[str, dict[str, Any]] | None = None,
) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        try:
            graph = Graph.from_policy_resources(args.resources)
            findings = rule(graph, args.get_config() or {})
        except Exception as exc:  # a rule bug must not abort the other rules
            _rule_failed(name, exc)
            return
        for urn, message in findings:
            report(message, urn)

    return StackValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(schema) if schema else None,
        remediation_steps=remediation,
    )


def _resource(
    name: str,
    description: str,
    rule: ResourceRule,
    level: EnforcementLevel,
    remediation: str,
    schema: dict[str, dict[str, Any]] | None = None,
) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        try:
            props = plain(args.props)
            messages = rule(args.resource_type, props, args.name, args.get_config() or {})
        except Exception as exc:  # a rule bug must not abort the other rules
            _rule_failed(f"{name} on {args.urn}", exc)
            return
        for message in messages:
            report(message, None)

    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(schema) if schema else None,
        remediation_steps=remediation,
    )


def _num(default: float, minimum: float = 0) -> dict[str, Any]:
    return {"type": "number", "default": default, "minimum": minimum}


def build_policies() -> list[Policy]:
    return [
        _stack(
            "sqs-visibility-timeout-covers-lambda-timeout",
            "Every queue consumed by a Lambda event source mapping has a visibility timeout "
            ">= the function's timeout.",
            queues.visibility_covers_lambda_timeout,
            MANDATORY,
            "Raise the queue's visibility_timeout_seconds to at least the function timeout.",
        ),
        _stack(
            "sqs-visibility-timeout-6x-lambda-timeout",
            "A consumed queue's visibility timeout is >= multiplier x function timeout + "
            "maximum batching window (AWS advises 6x).",
            queues.visibility_6x_lambda_timeout,
            ADVISORY,
            "Set visibility_timeout_seconds = limits.recommended_visibility_timeout(timeout, "
            "window).",
            {"multiplier": _num(limits.DEFAULT_VISIBILITY_MULTIPLIER, 1)},
        ),
        _stack(
            "sqs-dlq-retention-exceeds-source",
            "A dead-letter queue retains messages longer than each of its source queues.",
            queues.dlq_retention_exceeds_source,
            MANDATORY,
            "Set the DLQ's message_retention_seconds above the source's (14 days is the max).",
        ),
        _stack(
            "sqs-dlq-type-matches-source",
            "The DLQ of a FIFO queue is FIFO, the DLQ of a standard queue is standard.",
            queues.dlq_type_matches_source,
            MANDATORY,
            "Make the DLQ the same queue type as its source.",
        ),
        _resource(
            "sqs-max-receive-count-in-range",
            "A redrive policy's maxReceiveCount lies in a sane range (default 3..20).",
            queues.max_receive_count_in_range,
            MANDATORY,
            "Set maxReceiveCount within the configured range (e.g. 5).",
            {
                "min": _num(limits.DEFAULT_MIN_MAX_RECEIVE_COUNT, 1),
                "max": _num(limits.DEFAULT_MAX_MAX_RECEIVE_COUNT, 1),
            },
        ),
        _stack(
            "sqs-lambda-source-has-dlq",
            "Every queue a Lambda function consumes has a redrive policy (a DLQ).",
            queues.lambda_source_has_dlq,
            MANDATORY,
            "Add a redrive_policy (inline or aws.sqs.RedrivePolicy) pointing at a DLQ.",
        ),
        _stack(
            "lambda-sqs-esm-reports-batch-item-failures",
            "SQS event source mappings report partial batch failures (ReportBatchItemFailures).",
            functions.esm_reports_batch_item_failures,
            MANDATORY,
            "Set function_response_types=['ReportBatchItemFailures'] and return "
            "batchItemFailures from the handler.",
        ),
        _stack(
            "sqs-dlq-has-alarm",
            "Every DLQ has a CloudWatch alarm on ApproximateNumberOfMessagesVisible (or "
            "NumberOfMessagesSent) that fires at >= 1 message and has an alarm action.",
            queues.dlq_has_alarm,
            MANDATORY,
            "Add a MetricAlarm on the DLQ: threshold 1, GreaterThanOrEqualToThreshold, "
            "alarm_actions [topic arn].",
            {
                "metricNames": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": list(queues.ALARM_METRICS),
                }
            },
        ),
        _stack(
            "dynamodb-idempotency-table-has-ttl",
            "Every idempotency/state table (named by a function's "
            f"{'/'.join(limits.IDEMPOTENCY_TABLE_ENV_VARS)} environment variable, tagged "
            f"{limits.IDEMPOTENCY_TABLE_TAG_KEY}={limits.IDEMPOTENCY_TABLE_TAG_VALUE}, or named "
            "like one) has TTL enabled.",
            tables.idempotency_table_has_ttl,
            MANDATORY,
            "Enable ttl {attribute_name: 'ttl', enabled: True} and write expiry epochs.",
            {
                "envVars": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": list(limits.IDEMPOTENCY_TABLE_ENV_VARS),
                },
                "envVarPattern": {"type": "string", "default": tables.DEFAULT_ENV_VAR_PATTERN},
                "tagKey": {"type": "string", "default": limits.IDEMPOTENCY_TABLE_TAG_KEY},
                "tagValue": {"type": "string", "default": limits.IDEMPOTENCY_TABLE_TAG_VALUE},
                "namePatterns": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": list(tables.DEFAULT_NAME_PATTERNS),
                },
            },
        ),
        _resource(
            "scheduler-schedule-has-retry-and-dlq",
            "EventBridge Scheduler schedules set a bounded retry policy and a dead-letter queue.",
            scheduling.schedule_has_retry_and_dlq,
            MANDATORY,
            "Set target.retry_policy and target.dead_letter_config.",
            {
                "maxRetryAttempts": _num(scheduling.MAX_RETRY_ATTEMPTS),
                "maxEventAgeSeconds": _num(scheduling.MAX_EVENT_AGE_S, 60),
            },
        ),
        _resource(
            "sqs-queue-encrypted",
            "SQS queues declare encryption at rest (SSE-SQS or KMS).",
            security.sqs_queue_encrypted,
            ADVISORY,
            "Set sqs_managed_sse_enabled=True or kms_master_key_id.",
        ),
        _resource(
            "sns-topic-encrypted",
            "SNS topics are encrypted at rest with KMS.",
            security.sns_topic_encrypted,
            ADVISORY,
            "Set kms_master_key_id.",
        ),
        _stack(
            "sqs-queue-tls-only",
            "SQS queue policies deny requests that do not use TLS (aws:SecureTransport).",
            security.sqs_queue_tls_only,
            ADVISORY,
            "Add a Deny statement on aws:SecureTransport=false to the queue policy.",
        ),
        _resource(
            "dynamodb-table-pitr-enabled",
            "DynamoDB tables enable point-in-time recovery.",
            tables.table_pitr_enabled,
            ADVISORY,
            "Set point_in_time_recovery {enabled: True}.",
        ),
        _resource(
            "iam-no-wildcard-actions",
            "IAM and resource policies allow no wildcard actions.",
            security.iam_no_wildcard_actions,
            ADVISORY,
            "List the exact actions instead of service:* or *.",
            {"allowedActions": {"type": "array", "items": {"type": "string"}, "default": []}},
        ),
    ]


POLICIES: list[Policy] = build_policies()
POLICY_NAMES: list[str] = [p.name for p in POLICIES]
