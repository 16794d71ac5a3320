"""DynamoDB adapter: claims + business writes in transactions, status reads, status writes.

IAM: TransactWriteItems is authorised per item action (PutItem, UpdateItem,
ConditionCheckItem, DeleteItem); the ``sent`` marking is PartiQL and needs
``dynamodb:PartiQLUpdate`` (``STATE_TABLE_ACTIONS``).

Narrow on purpose: one method per AWS call, the caller decides chunking, retries and classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.keys import StateKey
from idempotent_messaging.runtime.notify import Notification
from idempotent_messaging.runtime.settings import Settings

TransactItem = dict[str, Any]
"""One TransactWriteItems element in the low-level client format: ``{"Put": {...}}``,
``{"Update": {...}}``, ``{"ConditionCheck": {...}}`` (``{"Delete": {...}}`` is accepted too)."""

TRANSACT_MAX_ITEMS = 100  # DynamoDB TransactWriteItems limit
BATCH_GET_MAX_KEYS = 100  # BatchGetItem limit
PARTIQL_BATCH_MAX_STATEMENTS = 25  # BatchExecuteStatement limit
STATE_TABLE_ACTIONS = env.STATE_TABLE_ACTIONS
"""What the runtime does on the state table (the deploying component grants exactly these)."""
ALLOWED_ITEM_KINDS = frozenset({"Put", "Update", "ConditionCheck", "Delete"})


CLAIMED_BY_OTHER_EVENT = "claimed by another event"
"""A claim verdict: the item exists but holds another event's effect (single-item claims)."""


@dataclass(frozen=True)
class StatusWrite:
    key: StateKey
    notification_id: str | None
    event_id: str = ""


@dataclass(frozen=True)
class StatementAnswer:
    """One statement's outcome: ``code`` None when it succeeded; ``item`` the existing item
    when the refusal carried it (``ReturnValuesOnConditionCheckFailure=ALL_OLD``)."""

    code: str | None
    message: str = ""
    item: Mapping[str, Any] | None = None


def statement_answers(response: Mapping[str, Any], count: int) -> list[StatementAnswer]:
    """BatchExecuteStatement's per-statement Responses (a 200 says nothing about each one)."""
    answers: list[Mapping[str, Any]] = response.get("Responses") or []
    out = []
    for index in range(count):
        answer = answers[index] if index < len(answers) else {"Error": {"Code": "NoAnswer"}}
        error: Mapping[str, Any] | None = answer.get("Error")
        if not error:
            out.append(StatementAnswer(None))
            continue
        out.append(
            StatementAnswer(
                str(error.get("Code") or "Unknown"),
                str(error.get("Message") or "")[:200],
                error.get("Item"),
            )
        )
    return out


class ClaimStore(Protocol):
    """Where claims live: ``StateStore`` (a separate claim item, any effect) or
    ``idempotent_messaging.runtime.item_store.ItemClaimStore`` (in the single business item)."""

    absent_claim_is_semantic: bool

    def claim(
        self,
        *,
        key: StateKey,
        event_id: str,
        message_id: str,
        items: list[TransactItem],
        status: str,
        now: int,
    ) -> tuple[StateKey, TransactItem, list[TransactItem]]: ...

    def verdict(self, existing: Mapping[str, Any] | None, event_id: str | None) -> str | None: ...

    def transact(self, items: Sequence[TransactItem]) -> None: ...

    def read_statuses(
        self, keys: Sequence[StateKey], event_ids: Sequence[str]
    ) -> tuple[dict[str, str | None], set[str]]: ...

    def mark_sent(self, writes: Sequence[StatusWrite], now: int) -> list[str | None]: ...

    def record_owed(
        self, key: StateKey, notification: Notification, error: str, now: int, event_id: str
    ) -> None: ...


class StateStore:
    """The state table (and the business tables the items name) behind one DynamoDB client."""

    absent_claim_is_semantic = False
    """A claim condition failed, yet the read finds no claim: it vanished (TTL), a transient
    state; redelivery claims again."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self._settings = settings

    def claim(
        self,
        *,
        key: StateKey,
        event_id: str,
        message_id: str,
        items: list[TransactItem],
        status: str,
        now: int,
    ) -> tuple[StateKey, TransactItem, list[TransactItem]]:
        """(the claim's key, the claim item, the business items) of one record."""
        claim = self.claim_item(
            key=key, event_id=event_id, message_id=message_id, status=status, now=now
        )
        return key, claim, items

    def verdict(self, existing: Mapping[str, Any] | None, event_id: str | None) -> str | None:
        """Status of an existing claim (None: unknown, read it)."""
        return status_of(existing)

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

    def read_statuses(
        self, keys: Sequence[StateKey], event_ids: Sequence[str]
    ) -> tuple[dict[str, str | None], set[str]]:
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

    def mark_sent(self, writes: Sequence[StatusWrite], now: int) -> list[str | None]:
        """ONE PartiQL BatchExecuteStatement of UPDATEs to ``sent`` (caller keeps it <= 25).

        Returns, per write in order, the statement's error code or None. Not a transaction: a
        standard write costs 1 write unit per KB where a transactional one costs 2, and nothing
        here needs atomicity across records: each statement is idempotent (it only sets
        ``sent``, ``sent_at`` and the notification id) and independent of the others' order,
        so a partial failure leaves some claims ``pending`` and their redelivery republishes
        (at-least-once). DynamoDB fails an UPDATE whose WHERE matches no item
        (``ConditionalCheckFailed``), so a vanished claim is never re-created.
        """
        statements = [self._sent_statement(write, now) for write in writes]
        response = self._client.batch_execute_statement(Statements=statements)
        return [answer.code for answer in statement_answers(response, len(statements))]

    def _sent_statement(self, write: StatusWrite, now: int) -> dict[str, Any]:
        # One SET clause per attribute (the documented multi-attribute form); every value is a
        # parameter, so nothing of the event id is ever parsed as PartiQL.
        sets = ['SET "status" = ?', 'SET "sent_at" = ?']
        parameters: list[dict[str, str]] = [{"S": env.STATUS_SENT}, {"N": str(now)}]
        if write.notification_id:
            sets.append('SET "notification_id" = ?')
            parameters.append({"S": write.notification_id})
        names = sorted(write.key.key)
        parameters.extend(write.key.key[name] for name in names)
        where = " AND ".join(f'"{name}" = ?' for name in names)
        return {
            "Statement": f'UPDATE "{self._settings.state_table}" {" ".join(sets)} WHERE {where}',
            "Parameters": parameters,
        }

    def record_owed(
        self, key: StateKey, notification: Notification, error: str, now: int, event_id: str
    ) -> None:
        """Keep an owed notification on its ``pending`` claim, for
        ``python -m idempotent_messaging.ops owed``.

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
