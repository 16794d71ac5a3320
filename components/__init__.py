"""Pulumi components for correct-by-default SQS -> Lambda pipelines."""

from __future__ import annotations

from .consumer import IdempotentQueueConsumer
from .consumer_args import BusinessTableArgs, IdempotentQueueConsumerArgs
from .monthly_fanout import MonthlyFanout, MonthlyFanoutArgs

__all__ = [
    "BusinessTableArgs",
    "IdempotentQueueConsumer",
    "IdempotentQueueConsumerArgs",
    "MonthlyFanout",
    "MonthlyFanoutArgs",
]
