"""The public stage-config API: what differs between stages, read from a Pulumi stack file.

A config-driven program is one call (the reference ``__main__.py`` is the same call with its own
defaults and code)::

    from idempotent_messaging.stage import deploy_stage

    deploy_stage()

It deploys every ``<project>:consumers.<name>`` and ``<project>:fanouts.<name>`` of the stack
file and refuses a bad configuration with ONE line (``StageConfigError``, a ``pulumi.RunError``)
naming the key path, the value, the rule and the fix (docs/stages.md). The parts it is made of,
for a program that composes its own::

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
from .deploy import DeployedStage, StageConfigError, deploy_stage

__all__ = [
    "CONSUMERS_KEY",
    "FANOUTS_KEY",
    "ArgumentError",
    "DeployedStage",
    "StageConfig",
    "StageConfigError",
    "args_from_mapping",
    "camel",
    "config_path",
    "deploy_stage",
]
