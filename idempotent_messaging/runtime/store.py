"""DynamoDB adapter: claims + business writes in transactions, status reads, status writes.

Narrow on purpose: one method per AWS call, the caller decides chunking, retries and classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.keys import StateKey
from idempotent_messaging.runtime.notify import Notification
from idempotent_messaging.runtime.settings import Settings

TransactItem = dict[str, Any]
"""One TransactWriteItems element in the low-level client format: ``{"Put": {...}}``,
``{"Update": {...}}``, ``{"ConditionCheck": {...}}`` (``{"Delete": {...}}`` is accepted too)."""

TRANSACT_MAX_ITEMS = 100  # DynamoDB TransactWriteItems limit
BATCH_GET_MAX_KEYS = 100  # BatchGetItem limit
ALLOWED_ITEM_KINDS = frozenset({"Put", "Update", "ConditionCheck", "Delete"})


@dataclass(frozen=True)
class StatusWrite:
    key: StateKey
    notification_id: str | None


class StateStore:
    """The state table (and the business tables the items name) behind one DynamoDB client."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self._settings = settings

    def claim_item(
        self, *, key: StateKey, event_id: str, message_id: str, status: str, now: int
    ) -> TransactItem:
        """The claim Put, guarded so that an existing claim cancels the whole transaction.

        ``ALL_OLD`` returns the existing claim inside the cancellation reason, so a duplicate
        costs no extra read in the common case.
        """
        item: dict[str, Any] = dict(key.key)
        item.update(
            {
                env.EVENT_ID_KEY: {"S": event_id},
                "status": {"S": status},
                self._settings.ttl_attribute: {"N": str(now + self._settings.claim_ttl_seconds)},
                "received_at": {"N": str(now)},
                "message_id": {"S": message_id},
            }
        )
        return {
            "Put": {
                "TableName": self._settings.state_table,
                "Item": item,
                "ConditionExpression": key.condition,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def transact(self, items: Sequence[TransactItem]) -> None:
        """One TransactWriteItems; raises botocore ``ClientError`` on cancellation/failure."""
        self._client.transact_write_items(TransactItems=list(items))

    def read_statuses(self, keys: Sequence[StateKey]) -> tuple[dict[str, str | None], set[str]]:
        """One consistent BatchGetItem: ``({label: status or None if absent}, unprocessed)``."""
        table = self._settings.state_table
        names = self._projection_names()
        response = self._client.batch_get_item(
            RequestItems={
                table: {
                    "Keys": [k.key for k in keys],
                    "ConsistentRead": True,
                    "ProjectionExpression": ", ".join(names),
                    "ExpressionAttributeNames": names,
                }
            }
        )
        found = {
            self._label(item): _status(item)
            for item in response.get("Responses", {}).get(table, [])
        }
        unprocessed = {
            self._label(k)
            for k in response.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
        }
        statuses: dict[str, str | None] = {
            k.label: found.get(k.label) for k in keys if k.label not in unprocessed
        }
        return statuses, unprocessed

    def mark_sent(self, writes: Sequence[StatusWrite], now: int) -> None:
        """One TransactWriteItems of Updates to ``sent`` (caller keeps it <= 100 records).

        ``attribute_exists`` makes a vanished claim cancel instead of being re-created. (PartiQL
        BatchExecuteStatement would avoid the transaction's double write cost, but the
        documented multi-attribute form, repeated SET clauses, is not understood by moto.)
        """
        items = []
        for write in writes:
            names = sorted(write.key.key)
            values: dict[str, Any] = {":sent": {"S": env.STATUS_SENT}, ":now": {"N": str(now)}}
            update = "SET #s = :sent, sent_at = :now"
            if write.notification_id:
                values[":nid"] = {"S": write.notification_id}
                update += ", notification_id = :nid"
            items.append(
                {
                    "Update": {
                        "TableName": self._settings.state_table,
                        "Key": write.key.key,
                        "UpdateExpression": update,
                        "ConditionExpression": f"attribute_exists({names[0]})",
                        "ExpressionAttributeNames": {"#s": "status"},
                        "ExpressionAttributeValues": values,
                    }
                }
            )
        self._client.transact_write_items(TransactItems=items)

    def record_owed(self, key: StateKey, notification: Notification, error: str, now: int) -> None:
        """Keep an owed notification on its ``pending`` claim, for ``python -m ops owed``.

        Only on the rare path where SNS refused it for good (one extra UpdateItem); the claim
        must still exist and be pending (a ``sent`` claim owes nothing).
        """
        names = sorted(key.key)
        stored: dict[str, Any] = {"message": {"S": notification.message}}
        if notification.subject:
            stored["subject"] = {"S": notification.subject}
        if notification.attributes:
            stored["attributes"] = {
                "M": {name: {"S": value} for name, value in notification.attributes.items()}
            }
        self._client.update_item(
            TableName=self._settings.state_table,
            Key=key.key,
            UpdateExpression="SET owed_notification = :n, owed_since = :now, owed_error = :e",
            ConditionExpression=f"attribute_exists({names[0]}) AND #s = :pending",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":n": {"M": stored},
                ":now": {"N": str(now)},
                ":e": {"S": error[:1000] or "unknown"},
                ":pending": {"S": env.STATUS_PENDING},
            },
        )

    def _projection_names(self) -> dict[str, str]:
        """Each key attribute once, plus status: DynamoDB rejects a projection naming one path
        twice (moto accepts it), and rejects unused ExpressionAttributeNames."""
        if self._settings.tenant_layout:
            return {"#k1": env.TENANT_PARTITION_KEY, "#k2": env.TENANT_SORT_KEY, "#s": "status"}
        return {"#k1": env.EVENT_ID_KEY, "#s": "status"}

    def _label(self, item: Mapping[str, Any]) -> str:
        if self._settings.tenant_layout:
            pk = item[env.TENANT_PARTITION_KEY]["S"]
            sk = item[env.TENANT_SORT_KEY]["S"]
            return f"{pk}\x00{sk}"
        return str(item[env.EVENT_ID_KEY]["S"])


def _status(item: Mapping[str, Any]) -> str | None:
    value = item.get("status", {}).get("S")
    return str(value) if value is not None else None


def status_of(item: Mapping[str, Any] | None) -> str | None:
    """Status of a claim returned by a cancellation reason (``ALL_OLD``), if any."""
    return None if not item else _status(item)
