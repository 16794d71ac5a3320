"""Claims kept IN the business item (``SingleItemEffect``): same interface as ``StateStore``.

One conditional Put writes the business item and its claim (``claim_event_id``,
``claim_status``, ...): 2 write units in the transaction instead of 4 for a separate claim
item plus the row. The item's own condition (``attribute_not_exists`` over its key) is the
claim guard; with ``ALL_OLD`` the refusal returns the existing item, whose ``claim_event_id``
tells a duplicate (this event) from a semantic failure (another event's effect).

When that Put's only condition is "no item with this key" (``insert_statement``), the claim
needs no transaction at all: one item is written atomically by any single write, so the
batch's claims go as PartiQL ``INSERT`` statements in ONE BatchExecuteStatement (<= 25):
1 write unit each instead of 2, and a duplicate refuses only its own statement
(``DuplicateItem``) instead of cancelling the whole batch's transaction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.contract import SingleItemEffect
from idempotent_messaging.runtime.keys import StateKey
from idempotent_messaging.runtime.notify import Notification
from idempotent_messaging.runtime.settings import Settings
from idempotent_messaging.runtime.store import (
    CLAIMED_BY_OTHER_EVENT,
    StatementAnswer,
    StatusWrite,
    TransactItem,
    statement_answers,
)

_NOT_EXISTS = re.compile(r"attribute_not_exists\s*\(\s*([^()\s]+)\s*\)", re.IGNORECASE)
_CONNECTIVES = re.compile(r"\bAND\b|[()\s]", re.IGNORECASE)


def only_key_absence(put: Mapping[str, Any], key_names: Sequence[str]) -> bool:
    """True when the Put's condition says exactly "no item with this key exists": a
    conjunction of ``attribute_not_exists`` over key attributes (any of them: an item either
    has its whole key or does not exist), which a PartiQL INSERT enforces by itself."""
    condition = str(put.get("ConditionExpression") or "")
    if put.get("ExpressionAttributeValues"):
        return False
    names = put.get("ExpressionAttributeNames") or {}
    paths = _NOT_EXISTS.findall(condition)
    if not paths or _CONNECTIVES.sub("", _NOT_EXISTS.sub("", condition)):
        return False
    return all(names.get(path, path) in key_names for path in paths)


def _partiql_name(name: str) -> str:
    # A PartiQL tuple's attribute names are single-quoted strings; a quote doubles.
    return "'" + name.replace("'", "''") + "'"


class ItemClaimStore:
    """The business table, whose single item per event also holds the event's claim."""

    absent_claim_is_semantic = True
    """The item's condition failed, yet no item exists: the Put's own condition failed on a
    new item, a property of the message (semantic), not a vanished claim."""

    def __init__(self, client: Any, settings: Settings, effect: SingleItemEffect) -> None:
        assert settings.business_table  # ConsumerContract.check requires it
        self._client = client
        self._table = settings.business_table
        self._key_names = effect.key

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
        """The business Put (checked by ``SingleItemEffect.check``) carrying the claim."""
        put = dict(items[0]["Put"])
        item = dict(put["Item"])
        item.update(
            {
                env.ITEM_CLAIM_EVENT_ID: {"S": event_id},
                env.ITEM_CLAIM_STATUS: {"S": status},
                env.ITEM_CLAIM_MESSAGE_ID: {"S": message_id},
                env.ITEM_CLAIM_RECEIVED_AT: {"N": str(now)},
            }
        )
        names = dict(put.get("ExpressionAttributeNames") or {})
        guards = []
        for position, name in enumerate(self._key_names):
            alias = f"#claim_key{position}"
            names[alias] = name
            guards.append(f"attribute_not_exists({alias})")
        condition = " AND ".join(guards)
        if put.get("ConditionExpression"):
            condition = f"({put['ConditionExpression']}) AND {condition}"
        put.update(
            {
                "Item": item,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        item_key = {name: item[name] for name in self._key_names}
        # The event id is part of the label: two events for one item in a batch are not
        # duplicates of each other; they meet as a semantic failure.
        label = "\x00".join([*(str(v) for v in item_key.values()), event_id])
        return StateKey(key=item_key, label=label), {"Put": put}, []

    def verdict(self, existing: Mapping[str, Any] | None, event_id: str | None) -> str | None:
        """This event's claim status, ``CLAIMED_BY_OTHER_EVENT``, or None (unknown: read)."""
        if not existing:
            return None
        claimed_by = existing.get(env.ITEM_CLAIM_EVENT_ID, {}).get("S")
        if claimed_by != event_id:
            return CLAIMED_BY_OTHER_EVENT
        status = existing.get(env.ITEM_CLAIM_STATUS, {}).get("S")
        return str(status) if status is not None else None

    def transact(self, items: Sequence[TransactItem]) -> None:
        self._client.transact_write_items(TransactItems=list(items))

    def insert_statement(self, claim: TransactItem) -> dict[str, Any] | None:
        """The claim-carrying Put as a PartiQL INSERT, or None when its condition says more
        than "no item with this key" (then it keeps the transaction)."""
        put = claim.get("Put")
        if not put or put.get("TableName") != self._table:
            return None
        if not only_key_absence(put, self._key_names):
            return None
        item = put["Item"]
        fields = ", ".join(f"{_partiql_name(name)}: ?" for name in item)
        return {
            "Statement": f'INSERT INTO "{self._table}" VALUE {{{fields}}}',
            "Parameters": list(item.values()),
            # Used when DynamoDB carries the existing item with the refusal; else one read.
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def insert(self, statements: Sequence[Mapping[str, Any]]) -> list[StatementAnswer]:
        """ONE BatchExecuteStatement (<= 25 INSERTs); one answer per statement, in order."""
        response = self._client.batch_execute_statement(Statements=list(statements))
        return statement_answers(response, len(statements))

    def read_statuses(
        self, keys: Sequence[StateKey], event_ids: Sequence[str]
    ) -> tuple[dict[str, str | None], set[str]]:
        """One consistent BatchGetItem of the items: ``({label: verdict}, unprocessed)``.

        Two events may name one item (a duplicate and a clash with it): BatchGetItem refuses
        a request that lists a key twice (ValidationException), so each key is read once."""
        unique = {self._key_text(k.key): k.key for k in keys}
        names = {f"#k{i}": name for i, name in enumerate(self._key_names)}
        names.update({"#ce": env.ITEM_CLAIM_EVENT_ID, "#cs": env.ITEM_CLAIM_STATUS})
        response = self._client.batch_get_item(
            RequestItems={
                self._table: {
                    "Keys": list(unique.values()),
                    "ConsistentRead": True,
                    "ProjectionExpression": ", ".join(names),
                    "ExpressionAttributeNames": names,
                }
            }
        )
        found = {
            self._key_text(item): item
            for item in response.get("Responses", {}).get(self._table, [])
        }
        unprocessed_keys = {
            self._key_text(k)
            for k in response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
        }
        statuses: dict[str, str | None] = {}
        unprocessed: set[str] = set()
        for key, event_id in zip(keys, event_ids, strict=True):
            text = self._key_text(key.key)
            if text in unprocessed_keys:
                unprocessed.add(key.label)
            else:
                statuses[key.label] = self.verdict(found.get(text), event_id)
        return statuses, unprocessed

    def mark_sent(self, writes: Sequence[StatusWrite], now: int) -> list[str | None]:
        """ONE PartiQL BatchExecuteStatement (<= 25), as ``StateStore.mark_sent``; the WHERE
        clause also requires the item's claim to be this event's."""
        statements = []
        for write in writes:
            sets = [f'SET "{env.ITEM_CLAIM_STATUS}" = ?', f'SET "{env.ITEM_CLAIM_SENT_AT}" = ?']
            parameters: list[dict[str, str]] = [{"S": env.STATUS_SENT}, {"N": str(now)}]
            if write.notification_id:
                sets.append(f'SET "{env.ITEM_CLAIM_NOTIFICATION_ID}" = ?')
                parameters.append({"S": write.notification_id})
            where = [f'"{name}" = ?' for name in self._key_names]
            parameters.extend(write.key.key[name] for name in self._key_names)
            where.append(f'"{env.ITEM_CLAIM_EVENT_ID}" = ?')
            parameters.append({"S": write.event_id})
            statements.append(
                {
                    "Statement": f'UPDATE "{self._table}" {" ".join(sets)} '
                    f"WHERE {' AND '.join(where)}",
                    "Parameters": parameters,
                }
            )
        response = self._client.batch_execute_statement(Statements=statements)
        return [answer.code for answer in statement_answers(response, len(statements))]

    def record_owed(
        self, key: StateKey, notification: Notification, error: str, now: int, event_id: str
    ) -> None:
        """Keep an owed notification on the item while its claim is this event's, pending."""
        stored: dict[str, Any] = {"message": {"S": notification.message}}
        if notification.subject:
            stored["subject"] = {"S": notification.subject}
        if notification.attributes:
            stored["attributes"] = {
                "M": {name: {"S": value} for name, value in notification.attributes.items()}
            }
        stored["since"] = {"N": str(now)}
        stored["error"] = {"S": error[:1000] or "unknown"}
        self._client.update_item(
            TableName=self._table,
            Key=key.key,
            UpdateExpression="SET #owed = :n",
            ConditionExpression="#ce = :e AND #cs = :pending",
            ExpressionAttributeNames={
                "#owed": env.ITEM_CLAIM_OWED,
                "#ce": env.ITEM_CLAIM_EVENT_ID,
                "#cs": env.ITEM_CLAIM_STATUS,
            },
            ExpressionAttributeValues={
                ":n": {"M": stored},
                ":e": {"S": event_id},
                ":pending": {"S": env.STATUS_PENDING},
            },
        )

    def _key_text(self, item: Mapping[str, Any]) -> str:
        return "\x00".join(str(item.get(name)) for name in self._key_names)
