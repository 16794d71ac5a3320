"""Pulumi components for correct-by-default SQS -> Lambda pipelines."""

from __future__ import annotations

from .consumer import IdempotentQueueConsumer
from .consumer_args import BusinessTableArgs, IdempotentQueueConsumerArgs

__all__ = ["BusinessTableArgs", "IdempotentQueueConsumer", "IdempotentQueueConsumerArgs"]
