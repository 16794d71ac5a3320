"""Pulumi components for correct-by-default SQS -> Lambda pipelines."""

from __future__ import annotations

from .consumer import CONSUMER_OUTPUTS, IdempotentQueueConsumer
from .consumer_args import BusinessTableArgs, IdempotentQueueConsumerArgs
from .errors import ArgumentError
from .monthly_fanout import FANOUT_OUTPUTS, MonthlyFanout, MonthlyFanoutArgs

__all__ = [
    "CONSUMER_OUTPUTS",
    "FANOUT_OUTPUTS",
    "ArgumentError",
    "BusinessTableArgs",
    "IdempotentQueueConsumer",
    "IdempotentQueueConsumerArgs",
    "MonthlyFanout",
    "MonthlyFanoutArgs",
]
