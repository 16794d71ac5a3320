"""The reference stack: every consumer and fan-out listed in the stage config.

The same public call a user's config-driven program makes (``deploy_stage()``), with what this
repository's own instances need in every stage: the reference consumer ``orders`` (event-id
claims, an ``order_records`` table, a notification topic) and the ``monthly-charge`` fan-out's
charge consumer. Their sizes come from ``consumers`` / ``fanouts`` in Pulumi.yaml and each
``Pulumi.<stage>.yaml``.

The library (``idempotent_messaging``) ships no consumer code: this program deploys its own
``handlers/`` package the way any user deploys theirs (``code`` + ``handler``), and the
component adds the library's runtime to that archive.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi

from idempotent_messaging.components import BusinessTableArgs
from idempotent_messaging.stage import CONSUMERS_KEY, FANOUTS_KEY, deploy_stage

HANDLERS_DIR = Path(__file__).resolve().parent / "handlers"
HANDLERS_CODE = pulumi.AssetArchive({"handlers": pulumi.FileArchive(str(HANDLERS_DIR))})
"""This program's Lambda code: the ``handlers/`` package under its own name, so handler strings
read ``handlers.<module>.handler``. The default code of every consumer and fan-out of the
stack; an instance's config may name its own ``codePath`` instead."""

REFERENCE_DEFAULTS: Mapping[str, Mapping[str, Mapping[str, Any]]] = {
    CONSUMERS_KEY: {
        "orders": {
            "handler": "handlers.orders.handler",
            # Keyed by the event: the claim kept in the row is the event's (docs/runtime.md).
            "business_table": BusinessTableArgs(name="order_records", hash_key="event_id"),
            # handlers/orders.py declares SingleItemEffect: the claim lives in the row, so the
            # role gets the in-item calls only (docs/components.md, "What each grant is for").
            "claim_placement": "business_item",
            "create_notification_topic": True,
            "service_name": "orders",
        },
    },
    FANOUTS_KEY: {
        # The charge consumer's handler (its ledger is the component's).
        # handlers/charges.py declares SingleItemEffect on the ledger row.
        "monthly-charge": {
            "consumer_handler": "handlers.charges.handler",
            "consumer_claim_placement": "business_item",
        },
    },
}
"""What this repository's instances need in every stage (their code and tables); the stage
config adds the sizes. An instance the config names but this map does not gives its own
``handler`` (and ``businessTable``) in config."""

deploy_stage(defaults=REFERENCE_DEFAULTS, code=HANDLERS_CODE)
