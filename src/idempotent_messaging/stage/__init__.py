"""The public stage-config API: what differs between stages, read from a Pulumi stack file.

A program (the reference ``__main__.py``, or yours) reads the stage once, then builds each
component instance's args from its object in the stack file::

    stage = StageConfig.from_pulumi_config(pulumi.Config())
    for name, settings in stage.consumers.items():
        path = f"{CONSUMERS_KEY}.{name}"
        args = args_from_mapping(IdempotentQueueConsumerArgs, settings, path, defaults={...})
        with config_path(path):
            IdempotentQueueConsumer(name, args)

Every mistake is an ``ArgumentError`` (a ValueError) naming the key path as
``pulumi config set --path`` takes it, the value and the rule:
``consumers.orders.functionTimeoutSeconds=0: must be between 1 and 900 seconds ...``.
"""

from __future__ import annotations

from idempotent_messaging.components.convert import args_from_mapping
from idempotent_messaging.components.errors import ArgumentError, camel

from .config import CONSUMERS_KEY, FANOUTS_KEY, StageConfig, config_path

__all__ = [
    "CONSUMERS_KEY",
    "FANOUTS_KEY",
    "ArgumentError",
    "StageConfig",
    "args_from_mapping",
    "camel",
    "config_path",
]
