"""Owed notifications: claims left ``pending`` past a threshold, listed and re-published.

A claim stays ``pending`` when its business write committed but the notification was not
published (SNS refused it for good -> the DLQ holds an ``notification_owed`` copy; or the
message ran out of receives while SNS was down). When SNS refused it for good, the runtime
stores the notification on the claim (``owed_notification``), so it can be re-published here
without the message; otherwise the DLQ copy is the way back
(``python -m idempotent_messaging.ops redrive``: the redelivery meets the pending claim and
publishes only).

Claims live in the state table, or, for a consumer declaring ``SingleItemEffect``, in its
business items (``claim_status``, ``claim_owed_notification``, ...): ``owed_claims`` recognises
both in whichever table it is given.

A fresh claim stays ``pending`` once published: its batch's publication RECEIPT, an item of the
consumer's state table named by the claim (``receipt`` / ``claim_receipt``), lists it
(``runtime.claims.Receipts``). A pending claim its receipt lists is not owed; the receipts are
read from the state table (``receipts_table``: the scanned table itself when it is the state
table; for claims in business items, the consumer's state table, ``--state-table``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from idempotent_messaging.runtime import env as runtime_env
from idempotent_messaging.runtime.claims import published_status
from idempotent_messaging.runtime.notify import dedup_id, notification_group_id


@dataclass(frozen=True)
class OwedClaim:
    key: dict[str, Any]
    event_id: str
    received_at: int | None
    notification: dict[str, Any] | None
    """``{"message", "subject"?, "attributes"?}`` when the runtime stored it, else None."""
    error: str | None
    in_business_item: bool = False
    """The claim's attributes are the runtime's ``claim_*`` ones in a business item."""

    def to_json(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "key": {name: next(iter(value.values())) for name, value in self.key.items()},
            "received_at": self.received_at,
            "notification_stored": self.notification is not None,
            "error": self.error,
            "claim_in_business_item": self.in_business_item,
        }


def _key_of(item: dict[str, Any]) -> dict[str, Any]:
    if runtime_env.TENANT_PARTITION_KEY in item and runtime_env.TENANT_SORT_KEY in item:
        return {
            runtime_env.TENANT_PARTITION_KEY: item[runtime_env.TENANT_PARTITION_KEY],
            runtime_env.TENANT_SORT_KEY: item[runtime_env.TENANT_SORT_KEY],
        }
    return {runtime_env.EVENT_ID_KEY: item[runtime_env.EVENT_ID_KEY]}


def _stored(item: dict[str, Any], attribute: str) -> dict[str, Any] | None:
    raw = item.get(attribute, {}).get("M")
    if not raw or "S" not in raw.get("message", {}):
        return None
    stored: dict[str, Any] = {"message": raw["message"]["S"]}
    if "S" in raw.get("subject", {}):
        stored["subject"] = raw["subject"]["S"]
    attributes = raw.get("attributes", {}).get("M", {})
    if attributes:
        stored["attributes"] = {name: value["S"] for name, value in attributes.items()}
    return stored


def _table_key_names(dynamodb: Any, table: str) -> list[str]:
    schema = dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]
    return [part["AttributeName"] for part in schema]


def _item_claim(item: dict[str, Any], key_names: list[str]) -> OwedClaim:
    received = item.get(runtime_env.ITEM_CLAIM_RECEIVED_AT, {}).get("N")
    owed = item.get(runtime_env.ITEM_CLAIM_OWED, {}).get("M", {})
    return OwedClaim(
        key={name: item[name] for name in key_names},
        event_id=item.get(runtime_env.ITEM_CLAIM_EVENT_ID, {}).get("S", "?"),
        received_at=int(received) if received is not None else None,
        notification=_stored(item, runtime_env.ITEM_CLAIM_OWED),
        error=owed.get("error", {}).get("S"),
        in_business_item=True,
    )


class ReceiptsUnknown(RuntimeError):
    """Claims name receipts but no state table was given to read them from."""


def receipt_of(item: dict[str, Any]) -> str | None:
    """The receipt a stored claim names (either placement), None for a claim without one."""
    for name in (runtime_env.ITEM_CLAIM_RECEIPT, runtime_env.STATE_CLAIM_RECEIPT):
        value = item.get(name, {}).get("S")
        if value:
            return str(value)
    return None


def read_receipts(
    dynamodb: Any, table: str | None, receipt_ids: list[str]
) -> dict[str, frozenset[str]]:
    """{receipt id: entries listed} from the state ``table`` (consistent BatchGetItem, 100
    ids a call, unprocessed keys asked again); an absent receipt lists nothing."""
    ids = list(dict.fromkeys(receipt_ids))
    if not ids:
        return {}
    if table is None:
        raise ReceiptsUnknown(
            "these claims name publication receipts, kept in the consumer's state table: pass "
            "--state-table <the consumer's state table> to read them"
        )
    names = _table_key_names(dynamodb, table)
    tenant = runtime_env.TENANT_SORT_KEY in names
    partition = runtime_env.TENANT_PARTITION_KEY if tenant else runtime_env.EVENT_ID_KEY

    def key(receipt: str) -> dict[str, Any]:
        if tenant:
            return {partition: {"S": receipt}, "sk": {"S": runtime_env.RECEIPT_SORT_KEY}}
        return {partition: {"S": receipt}}

    found: dict[str, frozenset[str]] = {r: frozenset() for r in ids}
    for start in range(0, len(ids), 100):
        request: dict[str, Any] = {
            table: {"Keys": [key(r) for r in ids[start : start + 100]], "ConsistentRead": True}
        }
        for _ in range(10):
            response = dynamodb.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(table, []):
                listed = item.get(runtime_env.RECEIPT_PUBLISHED, {}).get("SS", [])
                found[item[partition]["S"]] = frozenset(listed)
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
    return found


def owed_claims(
    dynamodb: Any,
    table: str,
    *,
    older_than_s: int,
    now: int,
    receipts_table: str | None = None,
) -> Iterator[OwedClaim]:
    """Every ``pending`` claim received more than ``older_than_s`` seconds before ``now`` and
    not listed by the receipt it names, whether ``table`` is a state table or a business
    table holding claims in its items (then ``receipts_table``: the consumer's state table)."""
    kwargs: dict[str, Any] = {
        "TableName": table,
        "ConsistentRead": True,
        "FilterExpression": "(#s = :pending AND received_at < :cutoff) OR "
        "(#cs = :pending AND #cr < :cutoff)",
        "ExpressionAttributeNames": {
            "#s": "status",
            "#cs": runtime_env.ITEM_CLAIM_STATUS,
            "#cr": runtime_env.ITEM_CLAIM_RECEIVED_AT,
        },
        "ExpressionAttributeValues": {
            ":pending": {"S": runtime_env.STATUS_PENDING},
            ":cutoff": {"N": str(now - older_than_s)},
        },
    }
    key_names: list[str] | None = None
    while True:
        page = dynamodb.scan(**kwargs)
        items = page.get("Items", [])
        in_items = any(runtime_env.ITEM_CLAIM_STATUS in item for item in items)
        receipts = read_receipts(
            dynamodb,
            receipts_table if in_items else (receipts_table or table),
            [r for item in items if (r := receipt_of(item))],
        )
        for item in items:
            if published_status(item, receipts) == runtime_env.STATUS_SENT:
                continue  # its receipt lists it: published
            if runtime_env.ITEM_CLAIM_STATUS in item:
                # A business item's key is the table's, whatever the consumer named it.
                if key_names is None:
                    key_names = _table_key_names(dynamodb, table)
                yield _item_claim(item, key_names)
                continue
            received = item.get("received_at", {}).get("N")
            yield OwedClaim(
                key=_key_of(item),
                event_id=item.get(runtime_env.EVENT_ID_KEY, {}).get("S", "?"),
                received_at=int(received) if received is not None else None,
                notification=_stored(item, "owed_notification"),
                error=item.get("owed_error", {}).get("S"),
            )
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def republish(
    dynamodb: Any, sns: Any, table: str, topic_arn: str, claim: OwedClaim, now: int
) -> str:
    """Publish a stored owed notification, then mark the claim ``sent`` (only if still
    pending). Returns the SNS message id. At-least-once, like the runtime: a crash between
    the two steps re-publishes on the next run."""
    if claim.notification is None:
        raise ValueError(
            f"claim {claim.event_id!r} holds no notification: redrive its DLQ message instead "
            "(python -m idempotent_messaging.ops redrive); the redelivery publishes it"
        )
    request: dict[str, Any] = {"TopicArn": topic_arn, "Message": claim.notification["message"]}
    if claim.notification.get("subject"):
        request["Subject"] = claim.notification["subject"]
    if claim.notification.get("attributes"):
        request["MessageAttributes"] = {
            name: {"DataType": "String", "StringValue": value}
            for name, value in claim.notification["attributes"].items()
        }
    if topic_arn.endswith(".fifo"):
        # The runtime's dedup id for this event (runtime/notify.py), so a publish the
        # runtime already made within SNS's 5-minute window is not delivered twice. The claim
        # keeps no source group: the group is the event's (its id, or its hash when SNS would
        # refuse the id), as from a standard source.
        request["MessageGroupId"] = notification_group_id(claim.event_id, None)
        request["MessageDeduplicationId"] = dedup_id(claim.event_id)
    message_id = str(sns.publish(**request)["MessageId"])
    # A redrive may have published and marked it meanwhile: then nothing is left to do.
    with contextlib.suppress(dynamodb.exceptions.ConditionalCheckFailedException):
        if claim.in_business_item:
            # Only this event's claim: the item may never be re-claimed, but the condition
            # keeps the marking from touching anything but the claim it listed.
            dynamodb.update_item(
                TableName=table,
                Key=claim.key,
                UpdateExpression="SET #cs = :sent, #at = :now, #nid = :nid REMOVE #owed",
                ConditionExpression="#cs = :pending AND #ce = :event",
                ExpressionAttributeNames={
                    "#cs": runtime_env.ITEM_CLAIM_STATUS,
                    "#ce": runtime_env.ITEM_CLAIM_EVENT_ID,
                    "#at": runtime_env.ITEM_CLAIM_SENT_AT,
                    "#nid": runtime_env.ITEM_CLAIM_NOTIFICATION_ID,
                    "#owed": runtime_env.ITEM_CLAIM_OWED,
                },
                ExpressionAttributeValues={
                    ":sent": {"S": runtime_env.STATUS_SENT},
                    ":pending": {"S": runtime_env.STATUS_PENDING},
                    ":event": {"S": claim.event_id},
                    ":now": {"N": str(now)},
                    ":nid": {"S": message_id},
                },
            )
        else:
            dynamodb.update_item(
                TableName=table,
                Key=claim.key,
                UpdateExpression="SET #s = :sent, sent_at = :now, notification_id = :nid "
                "REMOVE owed_notification, owed_since, owed_error",
                ConditionExpression="#s = :pending",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":sent": {"S": runtime_env.STATUS_SENT},
                    ":pending": {"S": runtime_env.STATUS_PENDING},
                    ":now": {"N": str(now)},
                    ":nid": {"S": message_id},
                },
            )
    return message_id
