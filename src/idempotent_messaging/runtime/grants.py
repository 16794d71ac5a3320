"""What the consumer runtime calls on each resource, derived from what the consumer declares.

Beside the code that makes the calls (``claims``, ``batch``, ``quarantine``, ``notify``): the
components build every consumer role from ``consumer_grants`` and nothing else, and
tests/e2e/test_iam_trace.py traces every call the reference and example functions make on the
emulator against those roles (a call the role lacks, or a grant no path uses, fails it).

IAM facts this relies on (Service Authorization Reference, and each service's guide):
* TransactWriteItems has no IAM action of its own: each item is authorised as its own action
  (Put -> ``dynamodb:PutItem``, Update -> ``UpdateItem``, ConditionCheck ->
  ``ConditionCheckItem``, Delete -> ``DeleteItem``; DynamoDB developer guide, "Using IAM with
  DynamoDB transactions").
* BatchExecuteStatement is authorised per statement verb (``dynamodb:PartiQLInsert``,
  ``PartiQLUpdate``, ...; DynamoDB developer guide, "IAM security policies with PartiQL").
* SendMessageBatch is authorised by ``sqs:SendMessage``, PublishBatch by ``sns:Publish``.
* The SQS event source mapping polls with the function's role: ``sqs:ReceiveMessage``,
  ``sqs:DeleteMessage``, ``sqs:GetQueueAttributes`` (Lambda developer guide, "Using Lambda
  with Amazon SQS", execution role; the AWS-managed ``AWSLambdaSQSQueueExecutionRole``). The
  runtime never changes a message's visibility (a failed record is reported, SQS redelivers
  it after the visibility timeout), so ``sqs:ChangeMessageVisibility`` is not granted.

Names and pure functions only, no boto3: the components import this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# --- Where the consumer's claims live (``claims.placement`` chooses from the same declaration) --
PLACEMENT_STATE_TABLE = "state_table"
"""No ``effect`` declared: ``claims.StateTableClaims``, the claim is its own state-table item."""
PLACEMENT_BUSINESS_ITEM = "business_item"
"""``effect=SingleItemEffect(...)``: ``claims.ItemClaims``, the claim lives in the business row."""
PLACEMENT_DOMAIN_KEYED = "domain_keyed"
"""``effect=DomainKeyedCreate(...)``: ``claims.ClaimThenRow``, a state-table claim, then one
business row keyed by a business key."""

# --- What a consumer's ``writes`` may return: TransactWriteItems items -------------------------
WRITE_PUT = "Put"
WRITE_UPDATE = "Update"
WRITE_CONDITION_CHECK = "ConditionCheck"
WRITE_DELETE = "Delete"
TRANSACT_ITEM_ACTIONS = {
    WRITE_PUT: "dynamodb:PutItem",
    WRITE_UPDATE: "dynamodb:UpdateItem",
    WRITE_CONDITION_CHECK: "dynamodb:ConditionCheckItem",
    WRITE_DELETE: "dynamodb:DeleteItem",
}
"""How DynamoDB authorises each item of a TransactWriteItems."""
BUSINESS_WRITE_KINDS = tuple(TRANSACT_ITEM_ACTIONS)
"""The documented fallback of a state-table consumer that declares no ``business_writes``:
every item kind the runtime accepts in ``writes`` (``claims.ALLOWED_ITEM_KINDS``)."""

# --- The actions, named once --------------------------------------------------------------------
PUT_ITEM = "dynamodb:PutItem"
UPDATE_ITEM = "dynamodb:UpdateItem"
DELETE_ITEM = "dynamodb:DeleteItem"
BATCH_GET_ITEM = "dynamodb:BatchGetItem"
PARTIQL_INSERT = "dynamodb:PartiQLInsert"
PARTIQL_UPDATE = "dynamodb:PartiQLUpdate"
SQS_SEND = "sqs:SendMessage"  # also SendMessageBatch
SNS_PUBLISH = "sns:Publish"  # also PublishBatch
ESM_POLL_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
"""What the SQS event source mapping calls with the function's role (never the code)."""


@dataclass(frozen=True)
class PlacementCalls:
    """What one placement calls on the state and business tables (``claims``, ``batch``).

    ``*_always``: on every consumer of the placement; ``*_standard_only``: not on a FIFO
    source (``batch`` keeps the transaction there); ``*_notifying``: only with a notification
    topic (receipts, the ``sent`` marking and owed notifications exist only for a publish).
    A new placement is one more entry of ``PLACEMENTS``."""

    state_always: tuple[str, ...] = ()
    state_standard_only: tuple[str, ...] = ()
    state_notifying: tuple[str, ...] = ()
    business_always: tuple[str, ...] = ()
    business_standard_only: tuple[str, ...] = ()
    business_notifying: tuple[str, ...] = ()
    business_writes_declared: bool = False
    """True: the consumer's own ``writes`` items go to the business table (their kinds are
    its ``business_writes``); False: the placement writes the one business item itself."""
    needs_business_table: bool = False
    """True: the claim lives in (or beside) a business row, so a business table is required."""


# Receipts (claims.Receipts) live in the STATE table for every placement: one PutItem per
# published batch, read with a consistent BatchGetItem on the redelivery branch only.
_RECEIPTS = (PUT_ITEM, BATCH_GET_ITEM)

PLACEMENTS: dict[str, PlacementCalls] = {
    # claims.StateTableClaims: the claim Put inside the TransactWriteItems with the business
    # items, the redelivery read (BatchGetItem), the `sent` marking (PartiQL UPDATE) and an
    # owed notification (UpdateItem) on the claim item.
    PLACEMENT_STATE_TABLE: PlacementCalls(
        state_always=(PUT_ITEM, BATCH_GET_ITEM),
        state_notifying=(*_RECEIPTS, PARTIQL_UPDATE, UPDATE_ITEM),
        business_writes_declared=True,
    ),
    # claims.ItemClaims: the business Put carrying the claim (a transaction item; on a
    # standard source a PartiQL INSERT when the Put only creates the item, the transaction
    # again as its fallback), the redelivery read, the `sent` marking and an owed
    # notification on the row; receipts in the state table.
    PLACEMENT_BUSINESS_ITEM: PlacementCalls(
        state_notifying=_RECEIPTS,
        business_always=(PUT_ITEM, BATCH_GET_ITEM),
        business_standard_only=(PARTIQL_INSERT,),
        business_notifying=(PARTIQL_UPDATE, UPDATE_ITEM),
        needs_business_table=True,
    ),
    # claims.ClaimThenRow: the claim as StateTableClaims' (its redelivery read, `sent` marking,
    # owed notification, receipts); on a standard source the claim is a PartiQL INSERT, the
    # row another one after it, a refused row read back (BatchGetItem) and, when another
    # event's row holds its key, the claim released (a conditional DeleteItem); on a FIFO
    # source, and as the standard path's fallback when a whole INSERT call is refused, claim
    # and row are two Puts of one TransactWriteItems.
    PLACEMENT_DOMAIN_KEYED: PlacementCalls(
        state_always=(PUT_ITEM, BATCH_GET_ITEM),
        state_standard_only=(PARTIQL_INSERT, DELETE_ITEM),
        state_notifying=(*_RECEIPTS, PARTIQL_UPDATE, UPDATE_ITEM),
        business_always=(PUT_ITEM,),
        business_standard_only=(PARTIQL_INSERT, BATCH_GET_ITEM),
        needs_business_table=True,
    ),
}
"""Every placement the runtime has, by the name a consumer declares."""


@dataclass(frozen=True)
class ConsumerGrants:
    """The actions one consumer function's role needs, per resource (empty: no statement)."""

    source_queue: tuple[str, ...]
    dead_letter_queue: tuple[str, ...]
    state_table: tuple[str, ...]
    business_table: tuple[str, ...]
    topic: tuple[str, ...]


def _sorted(actions: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(actions)))


def business_write_actions(kinds: Sequence[str]) -> tuple[str, ...]:
    """The IAM actions of the transaction item kinds a consumer's ``writes`` returns; a
    ValueError naming an unknown kind."""
    unknown = [k for k in kinds if k not in TRANSACT_ITEM_ACTIONS]
    if unknown:
        raise ValueError(
            f"business_writes={list(kinds)!r}: {unknown} are no TransactWriteItems item kinds "
            f"{list(BUSINESS_WRITE_KINDS)}"
        )
    return _sorted(TRANSACT_ITEM_ACTIONS[k] for k in kinds)


def consumer_grants(
    *,
    placement: str | None,
    fifo: bool,
    notifies: bool,
    has_business_table: bool,
    business_writes: Sequence[str] | None = None,
) -> ConsumerGrants:
    """What the consumer's role must grant, from its declaration.

    ``placement`` None (not declared): the union of every placement's calls, what any consumer
    code may call (the documented fallback; declare it to drop what your placement never
    calls). ``business_writes`` None: every item kind (``BUSINESS_WRITE_KINDS``).
    ``notifies``: a notification topic is configured."""
    chosen = list(PLACEMENTS.values()) if placement is None else [_placement(placement)]
    state: set[str] = set()
    business: set[str] = set()
    for calls in chosen:
        state.update(calls.state_always)
        business.update(calls.business_always)
        if not fifo:
            state.update(calls.state_standard_only)
            business.update(calls.business_standard_only)
        if notifies:
            state.update(calls.state_notifying)
            business.update(calls.business_notifying)
        if calls.business_writes_declared:
            business.update(
                business_write_actions(
                    BUSINESS_WRITE_KINDS if business_writes is None else business_writes
                )
            )
    return ConsumerGrants(
        source_queue=ESM_POLL_ACTIONS,
        dead_letter_queue=(SQS_SEND,),
        state_table=_sorted(state),
        business_table=_sorted(business) if has_business_table else (),
        topic=(SNS_PUBLISH,) if notifies else (),
    )


def placement_calls(name: str) -> PlacementCalls:
    """The calls of one declared placement; a ValueError naming an unknown one."""
    return _placement(name)


def _placement(name: str) -> PlacementCalls:
    try:
        return PLACEMENTS[name]
    except KeyError:
        raise ValueError(f"claim_placement={name!r}: must be one of {sorted(PLACEMENTS)}") from None
