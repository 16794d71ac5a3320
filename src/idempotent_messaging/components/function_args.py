"""The function arguments both components take, defined once with their reasons.

``IdempotentQueueConsumerArgs`` and ``MonthlyFanoutArgs`` inherit ``FunctionArgs``: the same
runtime, architecture, Powertools layer, logging, metrics and tracing settings apply to every
function a component creates. Timeout and memory differ per function (a consumer batch is
seconds, a dispatcher run is up to 15 minutes), so each component names its own fields, with
the defaults and limits below.
"""

from dataclasses import dataclass

from idempotent_messaging import limits

DEFAULT_POWERTOOLS_LAYER_VERSION = 27
DEFAULT_METRICS_NAMESPACE = "IdempotentMessaging"

CONSUMER_TIMEOUT_SECONDS = 30
"""Enough for a batch of 10 short DynamoDB transactions plus an SNS publish; the queue's
visibility timeout is derived from it."""
CONSUMER_MEMORY_MB = 256
"""Powertools + boto3 cold starts stay fast; a batch of 10 needs little memory."""
DISPATCHER_TIMEOUT_SECONDS = limits.LAMBDA_MAX_TIMEOUT_S
"""Lambda's maximum (900 s): a long invocation hands its segments off rarely."""
DISPATCHER_MIN_TIMEOUT_SECONDS = 60
"""A page, a checkpoint and a hand-off need at least a minute."""
DISPATCHER_MEMORY_MB = 1024
"""CPU (proportional to memory) for JSON and TLS of parallel sends."""
MIN_MEMORY_MB = 128
MAX_MEMORY_MB = 10_240


@dataclass(frozen=True, kw_only=True)
class FunctionArgs:
    """Settings of every Lambda function a component creates."""

    architecture: str = "arm64"
    """Default ``arm64`` (Graviton: cheaper per ms). ``x86_64`` is the alternative."""
    runtime: str = "python3.12"
    """Default ``python3.12``; ``python3.13`` also accepted. Older runtimes have no Powertools v3
    layer and are refused."""
    powertools_layer_version: int = DEFAULT_POWERTOOLS_LAYER_VERSION
    """Default 27: the Powertools for AWS Lambda (Python) v3 public layer version listed in the
    Powertools docs at the time of writing (same number for every region/arch/runtime). Bump it
    as Powertools releases."""
    log_retention_days: int = 30
    """Default 30 days: enough to investigate a DLQ alarm; a CloudWatch-allowed value."""
    log_level: str = "INFO"
    """Default ``INFO`` (POWERTOOLS_LOG_LEVEL)."""
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE
    """Default ``IdempotentMessaging`` (POWERTOOLS_METRICS_NAMESPACE): the namespace of the
    runtime's and the dispatcher's metrics, which the dashboards read."""
    tracing: bool = False
    """Default False. True turns on X-Ray active tracing and grants the X-Ray write actions."""
