"""Idempotency strategies: peers behind one interface (``BatchRun``), chosen HERE only.

A strategy is a ``idempotent_messaging.runtime.batch.BatchRun`` subclass that supplies the
DynamoDB stages (commit of claims + business writes, status read of duplicates, ``sent``
marking). Strategies never import each other (import-linter contract "Runtime strategies never
import each other").
"""

from __future__ import annotations

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.batch import BatchRun
from idempotent_messaging.runtime.errors import ConfigurationError
from idempotent_messaging.runtime.settings import Settings
from idempotent_messaging.runtime.strategies.transactional import TransactionalBatch

STRATEGIES: dict[str, type[BatchRun]] = {env.STRATEGY_TRANSACTIONAL: TransactionalBatch}


def batch_class(settings: Settings) -> type[BatchRun]:
    """The batch algorithm ``settings.strategy`` names (Settings already refused the rest)."""
    try:
        return STRATEGIES[settings.strategy]
    except KeyError:
        raise ConfigurationError(
            f"{env.IDEMPOTENCY_STRATEGY}={settings.strategy!r} has no implementation; "
            f"use one of {sorted(STRATEGIES)}"
        ) from None
