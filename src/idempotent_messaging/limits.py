"""AWS limits, AWS defaults and the derivations the pack enforces.

Pure constants and functions, no imports from the rest of the project. The components import
these too, so the values a component derives can never drift from what the pack checks
(one source of truth per derived value).
"""

from __future__ import annotations

import math

# --- AWS defaults applied when a property is absent -------------------------------------------
AWS_DEFAULT_VISIBILITY_TIMEOUT_S = 30
AWS_DEFAULT_MESSAGE_RETENTION_S = 4 * 24 * 3600  # 4 days
AWS_DEFAULT_LAMBDA_TIMEOUT_S = 3
AWS_DEFAULT_BATCHING_WINDOW_S = 0

# --- AWS limits ---------------------------------------------------------------------------------
SQS_MIN_RETENTION_S = 60
SQS_MAX_RETENTION_S = 14 * 24 * 3600  # 1209600 s
SQS_MAX_MESSAGE_BYTES = 1_048_576  # MaximumMessageSize: 1,024 .. 1,048,576 (1 MiB)
SQS_MAX_VISIBILITY_TIMEOUT_S = 12 * 3600  # 43200 s
SQS_MAX_BATCHING_WINDOW_S = 300
SQS_MAX_BATCH_SIZE_STANDARD = 10_000
SQS_MAX_BATCH_SIZE_FIFO = 10
SQS_BATCH_SIZE_WITHOUT_WINDOW = 10  # batch size > 10 needs a batching window >= 1 s
LAMBDA_MIN_TIMEOUT_S = 1
LAMBDA_MAX_TIMEOUT_S = 900
ESM_MIN_MAXIMUM_CONCURRENCY = 2
ESM_MAX_MAXIMUM_CONCURRENCY = 1000

# --- Thresholds the pack and the components share -------------------------------------------
DEFAULT_VISIBILITY_MULTIPLIER = 6  # AWS's Lambda guidance: >= 6x the function timeout
DEFAULT_MIN_MAX_RECEIVE_COUNT = 3  # 1 would dead-letter on a single transient failure
DEFAULT_MAX_MAX_RECEIVE_COUNT = 20  # beyond this, poison messages burn retries for hours
# EventBridge Scheduler's defaults when a schedule sets no retry policy, which are also the
# ceilings of its API (RetryPolicy: MaximumRetryAttempts 0..185, MaximumEventAgeInSeconds
# 60..86400).
SCHEDULER_MAX_RETRY_ATTEMPTS = 185
SCHEDULER_MAX_EVENT_AGE_S = 86400
# The response type that makes Lambda retry only the failed records of an SQS batch.
REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"

# --- How the pack recognises an idempotency/state table ----------------------------------------
# A DynamoDB table is an idempotency table when a Lambda function's environment names it under
# one of these variables, or when it carries this tag. Business tables carry neither.
IDEMPOTENCY_TABLE_ENV_VARS = (
    "IDEMPOTENCY_STATE_TABLE",  # idempotent-messaging runtime
    "IDEMPOTENCY_TABLE",
    "POWERTOOLS_IDEMPOTENCY_TABLE",
)
IDEMPOTENCY_TABLE_TAG_KEY = "idempotent-messaging:role"
IDEMPOTENCY_TABLE_TAG_VALUE = "idempotency-state"
# A queue or table whose contents are declared disposable (the components tag every stateful
# child so without protect_data); the pack's protection advisory and the plan check skip it.
DISPOSABLE_TAG_KEY = "idempotent-messaging:disposable"
DISPOSABLE_TAG_VALUE = "true"


def recommended_visibility_timeout(
    function_timeout_s: float,
    batching_window_s: float = 0,
    multiplier: float = DEFAULT_VISIBILITY_MULTIPLIER,
) -> int:
    """Visibility timeout that survives Lambda's retries of a batch.

    multiplier x function timeout + maximum batching window (the window is time the batch
    already spends in flight before the function starts), as AWS advises and getlift/lift
    computes. Rounded up to whole seconds.
    """
    if function_timeout_s <= 0:
        raise ValueError(f"function timeout must be positive, got {function_timeout_s}")
    if batching_window_s < 0:
        raise ValueError(f"batching window must be >= 0, got {batching_window_s}")
    return math.ceil(multiplier * function_timeout_s + batching_window_s)


def age_alarm_threshold(retention_s: float, fraction: float = 0.5) -> int:
    """Age-of-oldest-message alarm threshold: a fraction of the retention period.

    Alarming at half the retention leaves the other half for an operator to act before SQS
    deletes the message.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    return int(retention_s * fraction)


def max_receive_count_in_range(
    count: float,
    low: float = DEFAULT_MIN_MAX_RECEIVE_COUNT,
    high: float = DEFAULT_MAX_MAX_RECEIVE_COUNT,
) -> int:
    """The nearest maxReceiveCount within [low, high]: enough receives to outlast a transient
    failure, few enough to isolate a poison message before it burns retries for hours."""
    if low > high:
        raise ValueError(f"maxReceiveCount range is empty: {low} > {high}")
    return int(min(max(count, math.ceil(low)), math.floor(high)))


def tls_only_statement(resource: str) -> dict[str, object]:
    """The queue policy statement that refuses every request not made over TLS (SQS Developer
    Guide, security best practices: aws:SecureTransport)."""
    return {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sqs:*",
        "Resource": resource,
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
