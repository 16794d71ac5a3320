"""Where a consumer's claims live: THE placement seam, chosen by what the consumer declares.

* No ``effect`` declared: ``StateTableClaims``. The claim is its own item in the state table,
  keyed by the event (``state_key``); it commits with the consumer's business writes in one
  TransactWriteItems, for effects of any shape.
* ``effect=SingleItemEffect(key=..., key_of_event=...)``: ``ItemClaims``. The effect is ONE
  business item whose key derives from the event id, and the claim lives in it
  (``claim_event_id``, ``claim_status``, ...): one conditional Put writes both. When that Put
  adds no condition of its own to the declared effect (``SingleItemEffect.creates``), the
  claim needs no transaction: on a standard queue it is a PartiQL INSERT (``Claim.insert``),
  1 write unit, and a duplicate refuses its statement alone (``DuplicateItem``).
* ``effect=DomainKeyedCreate(key=...)``: ``ClaimThenRow``. The effect is ONE create of a row
  keyed by a business key from the message (``order_id``); the claim stays a state-table item
  and, on a standard queue, the row (recording the event id) is an INSERT written after the
  claim is known to be this copy's (``Claim.row``): 1 + 1 write units, no transaction.

``placement`` is the one place that chooses. Both placements answer the same calls, one
method per DynamoDB call (the batch decides chunking, retries and failure classes):
``claim`` (build), ``transact`` / ``insert`` (commit), ``verdict`` / ``read_statuses``
(redelivery), ``mark_sent`` (PartiQL UPDATEs), ``record_owed`` (UpdateItem). IAM: what they
call is ``grants.PLACEMENTS`` (runtime/grants.py), per placement.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from idempotent_messaging.runtime import env
from idempotent_messaging.runtime.errors import PoisonKind, PoisonMessage, SchemaError
from idempotent_messaging.runtime.notify import Notification
from idempotent_messaging.runtime.settings import Settings

TransactItem = dict[str, Any]
"""One TransactWriteItems element in the low-level client format: ``{"Put": {...}}``,
``{"Update": {...}}``, ``{"ConditionCheck": {...}}`` (``{"Delete": {...}}`` is accepted too)."""

TRANSACT_MAX_ITEMS = 100  # DynamoDB TransactWriteItems limit
BATCH_GET_MAX_KEYS = 100  # BatchGetItem limit
PARTIQL_BATCH_MAX_STATEMENTS = 25  # BatchExecuteStatement limit
ALLOWED_ITEM_KINDS = frozenset({"Put", "Update", "ConditionCheck", "Delete"})
MAX_PARTITION_KEY_BYTES = 2048
"""DynamoDB: a partition key value is at most 2,048 bytes (UTF-8)."""
MAX_SORT_KEY_BYTES = 1024
"""DynamoDB: a sort key value is at most 1,024 bytes (UTF-8)."""

CLAIMED_BY_OTHER_EVENT = "claimed by another event"
"""A claim verdict: the item exists but holds another event's effect (single-item claims)."""


class Conflict(str):
    """A claim verdict: the claim is this event's but its content fingerprint differs from this
    copy's (``env.CONFLICTING_DUPLICATE``); ``first_message_id`` is the claiming copy's."""

    first_message_id: str

    def __new__(cls, first_message_id: str) -> Conflict:
        verdict = super().__new__(cls, env.CONFLICTING_DUPLICATE)
        verdict.first_message_id = first_message_id
        return verdict


def conflicts(stored: str | None, fingerprint: str | None) -> bool:
    """True when a stored fingerprint and this copy's differ under the SAME definition (the
    part before ``:``). A claim without one (written before fingerprints), a copy without one
    (content-hash ids) or a changed definition compare as today: a duplicate."""
    if not stored or not fingerprint or stored == fingerprint:
        return False
    return stored.partition(":")[0] == fingerprint.partition(":")[0]


# --- keys ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StateKey:
    """Primary key of an event's claim (low-level attribute values)."""

    key: dict[str, dict[str, str]]
    label: str
    """Stable, unique text form used to spot two records of one event in a batch."""
    fingerprint: str | None = field(default=None, compare=False)
    """The record's content fingerprint (``consumer.Fingerprint``), kept with its claim; None:
    none (content-hash event ids)."""

    @property
    def condition(self) -> str:
        """``attribute_not_exists`` over every key attribute: the claim guard."""
        return " AND ".join(f"attribute_not_exists({name})" for name in sorted(self.key))


def state_key(
    *, tenant_layout: bool, event_id: str, namespace: str, tenant: str | None
) -> StateKey:
    """Event-id layout: ``{event_id}``; tenant layout:
    ``{pk: tenant, sk: "<namespace>#<event id>"}``.

    Raises PoisonMessage (invalid event id) when a key value exceeds DynamoDB's limits in
    UTF-8 bytes, so no request is ever sent that DynamoDB would reject for it.
    """
    if not tenant_layout:
        _check_key_bytes(event_id, "event id (partition key)", MAX_PARTITION_KEY_BYTES)
        return StateKey(key={env.EVENT_ID_KEY: {"S": event_id}}, label=event_id)
    if tenant is None:
        raise ValueError("the tenant layout needs a tenant id")
    sort_key = f"{namespace}#{event_id}"
    _check_key_bytes(tenant, "tenant id (partition key)", MAX_PARTITION_KEY_BYTES)
    _check_key_bytes(sort_key, f"sort key '{namespace}#<event id>'", MAX_SORT_KEY_BYTES)
    return StateKey(
        key={env.TENANT_PARTITION_KEY: {"S": tenant}, env.TENANT_SORT_KEY: {"S": sort_key}},
        label=f"{tenant}\x00{sort_key}",
    )


def _check_key_bytes(value: str, what: str, limit: int) -> None:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise PoisonMessage(
            PoisonKind.INVALID_EVENT_ID, f"{what} is not valid Unicode text"
        ) from None
    if size > limit:
        raise PoisonMessage(
            PoisonKind.INVALID_EVENT_ID,
            f"{what} is {size} bytes in UTF-8; DynamoDB allows at most {limit}",
        )


# --- the declaration ---------------------------------------------------------------------------
KeyOfEvent = Callable[[str], Mapping[str, Any]]
"""``key_of_event(event_id) -> {key attribute: value}``: how a single item's key derives from
the event id (a value is a string, or a low-level AttributeValue such as ``{"N": "7"}``)."""


@dataclass(frozen=True)
class KeyIsEventId:
    """The item's one key attribute holds the event id itself (the orders row, keyed by its
    event): ``SingleItemEffect.keyed_by_event_id(attribute)``."""

    attribute: str = env.EVENT_ID_KEY

    def __call__(self, event_id: str) -> dict[str, str]:
        return {self.attribute: event_id}

    def __str__(self) -> str:
        return f"{self.attribute} = the event id"


@dataclass(frozen=True)
class SingleItemEffect:
    """A consumer's declaration: "my business effect is ONE item whose key derives from the
    event id" (one order row per order event, one ledger row per tenant/employee/month).

    ``key`` names the item's key attributes and ``key_of_event`` says how their values derive
    from the event id; both are required. Then ``writes`` returns exactly one ``Put`` on
    ``BUSINESS_TABLE`` whose key is exactly ``key_of_event(event_id)``, and the runtime keeps
    the claim IN that item (``claim_event_id``, ``claim_status`` ``pending``/``sent``, ...),
    guarded by the item's own condition (``attribute_not_exists`` over ``key``, and the Put's
    own condition if any): one write instead of two. A redelivery finds the item: its
    ``claim_event_id`` is this event (a duplicate: ``sent`` -> skip, ``pending`` -> publish,
    then mark) or another event (a semantic failure: the item already holds another event's
    effect). The claim lives as long as the item: no TTL.

    Why the derivation is required: the claim is the item's existence, so it is a claim of the
    event only if the event id alone decides which item that is. A key taken from the body
    (``order_id``) would let the same event id, re-sent with another ``order_id``, claim a
    second item and apply its effect twice. A Put whose key is not the derived one is refused
    per record (``schema`` poison naming the rule, nothing written); a declaration without a
    derivation is refused here, at construction. Never guessed: a consumer without this
    declaration keeps the separate claim item (``StateTableClaims``), for keys of its own.
    """

    key: tuple[str, ...]
    """The business table's key attribute names (partition key, then sort key if any)."""
    key_of_event: KeyOfEvent | None = None
    """How the key's values derive from the event id (``KeyIsEventId``, or a function)."""

    @classmethod
    def keyed_by_event_id(cls, attribute: str = env.EVENT_ID_KEY) -> SingleItemEffect:
        """The item's partition key ``attribute`` IS the event id (no sort key)."""
        return cls(key=(attribute,), key_of_event=KeyIsEventId(attribute))

    def __post_init__(self) -> None:
        if not 1 <= len(self.key) <= 2 or not all(isinstance(k, str) and k for k in self.key):
            raise ValueError(
                f"SingleItemEffect(key={self.key!r}): name the table's partition key and, if it "
                "has one, its sort key"
            )
        reserved = set(self.key) & set(env.ITEM_CLAIM_ATTRIBUTES)
        if reserved:
            raise ValueError(f"SingleItemEffect(key={self.key!r}): {sorted(reserved)} reserved")
        if self.key_of_event is None or not callable(self.key_of_event):
            raise ValueError(
                f"SingleItemEffect(key={self.key!r}) declares no key_of_event: a claim kept in "
                "the business item is accepted only where the item's key derives from the "
                "event id (else the same event id with another key in its body would claim a "
                "second item). Key the item by the event "
                "(SingleItemEffect.keyed_by_event_id(...)), declare "
                "key_of_event=<event id -> key>, or drop effect= to keep the claim in the "
                "state table"
            )
        if isinstance(self.key_of_event, KeyIsEventId) and self.key != (
            self.key_of_event.attribute,
        ):
            raise ValueError(
                f"SingleItemEffect(key={self.key!r}): key_of_event={self.key_of_event} derives "
                f"only ({self.key_of_event.attribute!r},)"
            )

    @property
    def rule(self) -> str:
        """The derivation, as reasons name it."""
        fn = self.key_of_event
        if isinstance(fn, KeyIsEventId):
            return str(fn)
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        return f"{', '.join(self.key)} = {name}(event id)"

    def derived_key(self, derived: Any) -> dict[str, dict[str, Any]]:
        """The low-level key from what ``key_of_event`` returned; SchemaError when it does not
        name exactly the declared key attributes, PoisonMessage (invalid event id) when a value
        exceeds DynamoDB's key limits (partition key 2,048 bytes, sort key 1,024)."""
        if not isinstance(derived, Mapping) or set(derived) != set(self.key):
            raise SchemaError(
                f"key_of_event ({self.rule}) must return exactly the key attributes "
                f"{list(self.key)}"
            )
        key: dict[str, dict[str, Any]] = {}
        for position, name in enumerate(self.key):
            value = derived[name]
            attribute = {"S": value} if isinstance(value, str) else value
            if not isinstance(attribute, Mapping) or len(attribute) != 1:
                raise SchemaError(f"key_of_event ({self.rule}) gave {name!r} no key value")
            if "S" in attribute:
                limit = MAX_PARTITION_KEY_BYTES if position == 0 else MAX_SORT_KEY_BYTES
                which = "partition" if position == 0 else "sort"
                _check_key_bytes(str(attribute["S"]), f"{which} key {name!r}", limit)
            key[name] = dict(attribute)
        return key

    @property
    def condition(self) -> str:
        """The declared effect's own guard: ``attribute_not_exists`` over the key, in the
        declared order (``attribute_not_exists(order_id)``)."""
        return " AND ".join(f"attribute_not_exists({name})" for name in self.key)

    @property
    def new_item_conditions(self) -> frozenset[str]:
        """The conditions that restate the declared effect ("no item with this key"): the
        guard over the whole key, or over one of its attributes (no item has half a key)."""
        return frozenset({self.condition, *(f"attribute_not_exists({k})" for k in self.key)})

    def creates(self, put: Mapping[str, Any]) -> bool:
        """True when the consumer's Put adds no condition of its own to the declared effect:
        none, or one of ``new_item_conditions`` exactly, and no expression values. Then a
        PartiQL INSERT (which refuses an existing key by itself) writes the same thing.
        Anything else is a condition DynamoDB must evaluate: the claim keeps the transaction.
        """
        if put.get("ExpressionAttributeValues"):
            return False
        condition = put.get("ConditionExpression")
        return not condition or condition in self.new_item_conditions

    def check(
        self,
        items: Sequence[TransactItem],
        business_table: str | None,
        key: Mapping[str, Any] | None = None,
    ) -> None:
        """SchemaError unless ``items`` is exactly one Put on ``business_table`` whose key is
        ``key``, the one the event id derives (``derived_key``)."""
        if len(items) != 1 or "Put" not in items[0]:
            raise SchemaError(
                f"writes() returned {len(items)} items; a single-item consumer returns one Put"
            )
        put = items[0]["Put"]
        if put.get("TableName") != business_table:
            raise SchemaError("writes() Put of a single-item consumer must target BUSINESS_TABLE")
        item = put.get("Item") or {}
        missing = [name for name in self.key if name not in item]
        if missing:
            raise SchemaError(f"writes() Put lacks the key attributes {missing}")
        reserved = sorted(set(item) & set(env.ITEM_CLAIM_ATTRIBUTES))
        if reserved:
            raise SchemaError(f"writes() Put sets the runtime's claim attributes {reserved}")
        if key is not None and any(item[name] != key[name] for name in self.key):
            # Never a silent skip nor a second item: the claim would not be the event's.
            raise SchemaError(
                f"writes() Put key {list(self.key)} is not the one the event id derives "
                f"({self.rule}); a claim kept in the business item is accepted only for that "
                "key; nothing was written"
            )


@dataclass(frozen=True)
class DomainKeyedCreate:
    """A consumer's declaration: "my business effect is ONE conditional create of one item of
    ``BUSINESS_TABLE`` keyed by a business key taken from the message" (the source article's
    ``order_records`` keyed by ``order_id``; the README's shipments keyed by shipment id).

    The claim cannot live in such an item (the event id does not decide which item it is: the
    same event id re-sent with another ``order_id`` would name another item), so it stays a
    state-table item keyed by the event (``ClaimThenRow``), and the two writes need no
    transaction on a standard queue: first the claims (ONE BatchExecuteStatement of PartiQL
    INSERTs into the state table, 1 write unit each), then the rows of the events claimed (ONE
    BatchExecuteStatement of INSERTs into the business table, each row recording the event id
    in ``env.ROW_EVENT_ID``, 1 write unit each). A row is written only for a copy whose claim is
    known to be its own (its INSERT succeeded, or the claim read back holds its content
    fingerprint): a re-sent event id with other content is a ``conflicting_duplicate`` before
    any row is written. A redelivery finds the claim and completes the row (a death between
    the two) or verifies it: the existing row records this event -> done; another event ->
    a business conflict (``semantic``, to the DLQ with its reason). The row's own condition
    (its key absent) keeps one row per business key whatever happens between the writes.

    ``writes`` returns exactly one ``Put`` on ``BUSINESS_TABLE`` holding ``key``, with no
    condition or exactly the create guard (``attribute_not_exists`` over the key, or one of
    its attributes), no expression values, and not setting ``env.ROW_EVENT_ID``; anything else
    is ``schema`` poison naming the rule. On a FIFO queue claim and row commit in one
    transaction (statements succeed one by one, which would break group order).
    """

    key: tuple[str, ...]
    """The business table's key attribute names (partition key, then sort key if any)."""

    def __post_init__(self) -> None:
        if not 1 <= len(self.key) <= 2 or not all(isinstance(k, str) and k for k in self.key):
            raise ValueError(
                f"DomainKeyedCreate(key={self.key!r}): name the business table's partition key "
                "and, if it has one, its sort key"
            )
        if env.ROW_EVENT_ID in self.key:
            raise ValueError(
                f"DomainKeyedCreate(key={self.key!r}): {env.ROW_EVENT_ID!r} is the runtime's "
                "(the event id the row records)"
            )

    @property
    def new_item_conditions(self) -> frozenset[str]:
        """The conditions that say "create": over the whole key, or one of its attributes."""
        whole = " AND ".join(f"attribute_not_exists({name})" for name in self.key)
        return frozenset({whole, *(f"attribute_not_exists({k})" for k in self.key)})

    def check(self, items: Sequence[TransactItem], business_table: str | None) -> None:
        """SchemaError unless ``items`` is exactly one create Put on ``business_table``."""
        if len(items) != 1 or "Put" not in items[0]:
            raise SchemaError(
                f"writes() returned {len(items)} items; a DomainKeyedCreate consumer returns "
                "one Put"
            )
        put = items[0]["Put"]
        if put.get("TableName") != business_table:
            raise SchemaError(
                "writes() Put of a DomainKeyedCreate consumer must target BUSINESS_TABLE"
            )
        item = put.get("Item") or {}
        missing = [name for name in self.key if name not in item]
        if missing:
            raise SchemaError(f"writes() Put lacks the key attributes {missing}")
        if env.ROW_EVENT_ID in item:
            raise SchemaError(f"writes() Put sets the runtime's attribute {env.ROW_EVENT_ID!r}")
        condition = put.get("ConditionExpression")
        if put.get("ExpressionAttributeValues") or (
            condition and condition not in self.new_item_conditions
        ):
            raise SchemaError(
                "writes() Put of a DomainKeyedCreate consumer must be a create (no condition, "
                f"or {' or '.join(sorted(self.new_item_conditions))}); declare no effect for "
                "other conditions (the claim then commits with them in a transaction)"
            )


# --- what a placement builds and answers --------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """One record's claim, as its placement writes it."""

    key: StateKey
    put: TransactItem
    """The claim's transaction item (the claim Put, or the business Put carrying the claim)."""
    items: list[TransactItem]
    """The business writes that commit with it (none when the claim is in the item)."""
    insert: dict[str, Any] | None = None
    """The same write as one PartiQL INSERT statement, when that is equivalent (a single-item
    create); None: the claim needs the transaction."""
    row: dict[str, Any] | None = None
    """``ClaimThenRow``: the business row's PartiQL INSERT, written once the claim is known
    to be this copy's (None for every other placement)."""
    row_key: dict[str, Any] | None = None
    """``ClaimThenRow``: the row's key (low-level values)."""


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


def describe_item(item: Mapping[str, Any]) -> str:
    kind = next(iter(item), "?")
    table = item.get(kind, {}).get("TableName", "?") if isinstance(item.get(kind), Mapping) else "?"
    return f"({kind} on {table})"


_T = TypeVar("_T")


def insert_chunks(inserts: Sequence[tuple[_T, Claim]]) -> list[list[tuple[_T, Claim]]]:
    """<= 25 statements per call, and never two on one item in a call (two events naming one
    item: the later one waits for a later call, where it meets the first one's row)."""
    chunks: list[list[tuple[_T, Claim]]] = []
    keys: list[set[str]] = []
    for owner, claim in inserts:
        item_key = json.dumps(claim.key.key, sort_keys=True)
        for chunk, seen in zip(chunks, keys, strict=True):
            if len(chunk) < PARTIQL_BATCH_MAX_STATEMENTS and item_key not in seen:
                break
        else:
            chunk, seen = [], set()
            chunks.append(chunk)
            keys.append(seen)
        chunk.append((owner, claim))
        seen.add(item_key)
    return chunks


def _owed_notification(notification: Notification) -> dict[str, Any]:
    stored: dict[str, Any] = {"message": {"S": notification.message}}
    if notification.subject:
        stored["subject"] = {"S": notification.subject}
    if notification.attributes:
        stored["attributes"] = {
            "M": {name: {"S": value} for name, value in notification.attributes.items()}
        }
    return stored


def _sent_statement(
    table: str, status: str, sent_at: str, notification_id: str, now: int, write: StatusWrite
) -> tuple[list[str], list[dict[str, str]]]:
    """The SET clauses and their parameters of one ``sent`` marking (one clause per attribute:
    the documented multi-attribute form; every value is a parameter, so nothing of the event
    id is ever parsed as PartiQL)."""
    sets = [f'SET "{status}" = ?', f'SET "{sent_at}" = ?']
    parameters: list[dict[str, str]] = [{"S": env.STATUS_SENT}, {"N": str(now)}]
    if write.notification_id:
        sets.append(f'SET "{notification_id}" = ?')
        parameters.append({"S": write.notification_id})
    return sets, parameters


class Receipts:
    """Publication receipts in the component's STATE table, for every placement.

    A fresh claim is committed ``pending`` naming its batch's receipt id (chosen before the
    commit, ``new_id``). Once the batch's notifications are published, ONE PutItem per
    receipt lists the claims whose notifications went out (``receipt_entry`` of each): 1 write
    unit per KB for the whole batch instead of one UPDATE per message. A redelivery that finds
    a ``pending`` claim naming a receipt reads it (``read``, consistent BatchGetItem): listed ->
    done; not listed, or no receipt (a death after the publish, a refused receipt write, a
    failed entry of the PublishBatch) -> publish again, then mark the CLAIM ``sent`` (where
    every later copy looks first). The receipt keeps the claim TTL, counted from its write: it
    outlives the claims it lists (for claims kept in a business item, which never expire, it has
    no TTL either). IAM: PutItem, BatchGetItem on the state table (``grants.PLACEMENTS``).
    """

    def __init__(self, client: Any, settings: Settings, *, expires: bool = True) -> None:
        self._client = client
        self._table = settings.state_table
        self._tenant_layout = settings.tenant_layout
        self._ttl_attribute = settings.ttl_attribute
        # The claims' horizon: a claim kept in a business item has no TTL, nor its receipt
        # (a late copy, however late, must still find it listed).
        self._ttl_seconds = settings.claim_ttl_seconds if expires else None

    @staticmethod
    def new_id() -> str:
        """A receipt id no event id can name by accident (122 random bits)."""
        return f"{env.RECEIPT_KEY_PREFIX}{uuid.uuid4().hex}"

    def key(self, receipt_id: str) -> dict[str, dict[str, str]]:
        if self._tenant_layout:
            return {
                env.TENANT_PARTITION_KEY: {"S": receipt_id},
                env.TENANT_SORT_KEY: {"S": env.RECEIPT_SORT_KEY},
            }
        return {env.EVENT_ID_KEY: {"S": receipt_id}}

    def write(self, receipt_id: str, entries: Sequence[str], now: int) -> None:
        """ONE PutItem: the receipt listing ``entries`` (unconditional: the id is new)."""
        item: dict[str, Any] = self.key(receipt_id)
        item.update(
            {
                env.RECEIPT_PUBLISHED: {"SS": sorted(set(entries))},
                env.RECEIPT_WRITTEN_AT: {"N": str(now)},
            }
        )
        if self._ttl_seconds is not None:
            item[self._ttl_attribute] = {"N": str(now + self._ttl_seconds)}
        self._client.put_item(TableName=self._table, Item=item)

    def read(self, receipt_ids: Sequence[str]) -> tuple[dict[str, frozenset[str]], set[str]]:
        """ONE consistent BatchGetItem (caller keeps it <= 100 ids): ``({receipt id: entries
        listed}, unprocessed ids)``; an absent receipt lists nothing."""
        unique = list(dict.fromkeys(receipt_ids))
        response = self._client.batch_get_item(
            RequestItems={
                self._table: {
                    "Keys": [self.key(r) for r in unique],
                    "ConsistentRead": True,
                }
            }
        )
        partition = env.TENANT_PARTITION_KEY if self._tenant_layout else env.EVENT_ID_KEY
        found = {
            str(item[partition]["S"]): frozenset(item.get(env.RECEIPT_PUBLISHED, {}).get("SS", []))
            for item in response.get("Responses", {}).get(self._table, [])
        }
        unprocessed = {
            str(k[partition]["S"])
            for k in response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
        }
        return {r: found.get(r, frozenset()) for r in unique if r not in unprocessed}, unprocessed


def is_receipt(item: Mapping[str, Any]) -> bool:
    """True for a receipt item of the state table (its partition key is a receipt id)."""
    for name in (env.EVENT_ID_KEY, env.TENANT_PARTITION_KEY):
        value = item.get(name)
        if isinstance(value, Mapping) and str(value.get("S", "")).startswith(
            env.RECEIPT_KEY_PREFIX
        ):
            return env.RECEIPT_PUBLISHED in item
    return False


def receipt_entry_of(claim: Mapping[str, Any]) -> str:
    """How a receipt lists a stored claim (``receipt_entry``): its event id; a state-table
    claim of the tenant layout: ``[pk, sk]`` as JSON."""
    if env.ITEM_CLAIM_EVENT_ID in claim:
        return str(claim[env.ITEM_CLAIM_EVENT_ID]["S"])
    if env.TENANT_SORT_KEY in claim and env.TENANT_PARTITION_KEY in claim:
        return json.dumps([claim[env.TENANT_PARTITION_KEY]["S"], claim[env.TENANT_SORT_KEY]["S"]])
    return str(claim[env.EVENT_ID_KEY]["S"])


def published_status(
    claim: Mapping[str, Any], receipts: Mapping[str, frozenset[str]] | None = None
) -> str | None:
    """A stored claim's status as the runtime reads it (either placement): ``sent`` when its
    stored status is ``sent`` (claims written before receipts, republished ones) or when the
    receipt it names lists it; else its stored status (``pending``: the notification is owed,
    or its receipt was not read). ``receipts``: {receipt id: entries} (``Receipts.read``)."""
    in_item = env.ITEM_CLAIM_EVENT_ID in claim
    status_value = claim.get(env.ITEM_CLAIM_STATUS if in_item else "status", {}).get("S")
    receipt_value = claim.get(env.ITEM_CLAIM_RECEIPT if in_item else env.STATE_CLAIM_RECEIPT, {})
    receipt = receipt_value.get("S")
    if (
        status_value == env.STATUS_PENDING
        and receipt
        and receipt_entry_of(claim) in (receipts or {}).get(receipt, frozenset())
    ):
        return env.STATUS_SENT
    return str(status_value) if status_value is not None else None


def receipt_size(entry: str) -> int:
    """Bytes an entry adds to a receipt's string set (UTF-8)."""
    return len(entry.encode("utf-8", "surrogatepass"))


class _Placement:
    """What both placements share: the client and the calls whose shape does not differ."""

    absent_claim_is_semantic: bool
    dedup_horizon_seconds: int | None
    """How long a claim is known to live (its TTL); None: as long as the item (no TTL). A copy
    of a message first seen longer ago than this may meet no claim although its effect was
    applied: the batch refuses it (``beyond_dedup_horizon``)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def transact(self, items: Sequence[TransactItem]) -> None:
        """One TransactWriteItems; raises botocore ``ClientError`` on cancellation/failure."""
        self._client.transact_write_items(TransactItems=list(items))

    def insert(self, statements: Sequence[Mapping[str, Any]]) -> list[StatementAnswer]:
        """ONE BatchExecuteStatement of claims' INSERTs (``Claim.insert``, <= 25)."""
        return self._execute([dict(s) for s in statements])

    def _execute(self, statements: list[dict[str, Any]]) -> list[StatementAnswer]:
        """ONE BatchExecuteStatement (caller keeps it <= 25); one answer per statement."""
        response = self._client.batch_execute_statement(Statements=statements)
        return statement_answers(response, len(statements))


class StateTableClaims(_Placement):
    """The claim is its own item of the state table; any business effect commits with it."""

    absent_claim_is_semantic = False
    """A claim condition failed, yet the read finds no claim: it vanished (TTL), a transient
    state; redelivery claims again."""

    def __init__(self, client: Any, settings: Settings) -> None:
        super().__init__(client)
        self._settings = settings
        self._table = settings.state_table
        self.dedup_horizon_seconds = settings.claim_ttl_seconds
        self.receipts = Receipts(client, settings)

    def receipt_entry(self, key: StateKey, event_id: str) -> str:
        """How a receipt lists this claim: its event id (the tenant layout: tenant and key)."""
        if self._settings.tenant_layout:
            return json.dumps(
                [key.key[env.TENANT_PARTITION_KEY]["S"], key.key[env.TENANT_SORT_KEY]["S"]]
            )
        return event_id

    def receipt_of(self, existing: Mapping[str, Any] | None) -> str | None:
        """The receipt an existing claim names (None: written before receipts, or none)."""
        value = (existing or {}).get(env.STATE_CLAIM_RECEIPT, {}).get("S")
        return str(value) if value else None

    def claim(
        self,
        *,
        key: StateKey,
        event_id: str,
        message_id: str,
        items: list[TransactItem],
        status: str,
        now: int,
        receipt: str | None = None,
    ) -> Claim:
        """The claim Put, guarded so that an existing claim cancels the whole transaction.

        ``ALL_OLD`` returns the existing claim inside the cancellation reason, so a duplicate
        costs no extra read in the common case. Never an INSERT: the business writes must
        commit with it.
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
        if key.fingerprint:  # in the same Put: no extra call, ~40 bytes
            item[env.STATE_CLAIM_FINGERPRINT] = {"S": key.fingerprint}
        if receipt:  # the batch's receipt that will list it once published (Receipts)
            item[env.STATE_CLAIM_RECEIPT] = {"S": receipt}
        put = {
            "Put": {
                "TableName": self._table,
                "Item": item,
                "ConditionExpression": key.condition,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        return Claim(key=key, put=put, items=items)

    def verdict(
        self,
        existing: Mapping[str, Any] | None,
        event_id: str | None,
        fingerprint: str | None = None,
    ) -> str | None:
        """Status of an existing claim, ``Conflict`` when its fingerprint differs from
        ``fingerprint`` (None: unknown, read it)."""
        if not existing:
            return None
        stored = existing.get(env.STATE_CLAIM_FINGERPRINT, {}).get("S")
        if conflicts(stored, fingerprint):
            return Conflict(str(existing.get("message_id", {}).get("S") or "unknown"))
        status = existing.get("status", {}).get("S")
        return str(status) if status is not None else None

    def read_statuses(
        self, keys: Sequence[StateKey], event_ids: Sequence[str]
    ) -> tuple[dict[str, str | None], set[str], dict[str, str]]:
        """One consistent BatchGetItem: ``({label: status or None if absent}, unprocessed,
        {label: the receipt its claim names})``."""
        names = self._projection_names()
        fingerprints = {k.label: k.fingerprint for k in keys}  # the verdict compares them
        response = self._client.batch_get_item(
            RequestItems={
                self._table: {
                    "Keys": [k.key for k in keys],
                    "ConsistentRead": True,
                    "ProjectionExpression": ", ".join(names),
                    "ExpressionAttributeNames": names,
                }
            }
        )
        found = {
            self._label(item): self.verdict(item, None, fingerprints.get(self._label(item)))
            for item in response.get("Responses", {}).get(self._table, [])
        }
        unprocessed = {
            self._label(k)
            for k in response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
        }
        statuses: dict[str, str | None] = {
            k.label: found.get(k.label) for k in keys if k.label not in unprocessed
        }
        receipts = {
            self._label(item): receipt
            for item in response.get("Responses", {}).get(self._table, [])
            if (receipt := self.receipt_of(item))
        }
        return statuses, unprocessed, receipts

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
        statements = []
        for write in writes:
            sets, parameters = _sent_statement(
                self._table, "status", "sent_at", "notification_id", now, write
            )
            names = sorted(write.key.key)
            parameters.extend(write.key.key[name] for name in names)
            where = " AND ".join(f'"{name}" = ?' for name in names)
            statements.append(
                {
                    "Statement": f'UPDATE "{self._table}" {" ".join(sets)} WHERE {where}',
                    "Parameters": parameters,
                }
            )
        return [answer.code for answer in self._execute(statements)]

    def record_owed(
        self, key: StateKey, notification: Notification, error: str, now: int, event_id: str
    ) -> None:
        """Keep an owed notification on its ``pending`` claim, for
        ``python -m idempotent_messaging.ops owed``.

        Only on the rare path where SNS refused it for good (one extra UpdateItem); the claim
        must still exist and be pending (a ``sent`` claim owes nothing).
        """
        names = sorted(key.key)
        self._client.update_item(
            TableName=self._table,
            Key=key.key,
            UpdateExpression="SET owed_notification = :n, owed_since = :now, owed_error = :e",
            ConditionExpression=f"attribute_exists({names[0]}) AND #s = :pending",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":n": {"M": _owed_notification(notification)},
                ":now": {"N": str(now)},
                ":e": {"S": error[:1000] or "unknown"},
                ":pending": {"S": env.STATUS_PENDING},
            },
        )

    def _projection_names(self) -> dict[str, str]:
        """Each key attribute once, plus status: DynamoDB rejects a projection naming one path
        twice (moto accepts it), and rejects unused ExpressionAttributeNames."""
        # The fingerprint and the first message id: the verdict's conflict test and reason.
        more = {"#f": env.STATE_CLAIM_FINGERPRINT, "#m": "message_id"}
        more["#r"] = env.STATE_CLAIM_RECEIPT  # a pending claim's receipt (Receipts)
        if self._settings.tenant_layout:
            keys = {"#k1": env.TENANT_PARTITION_KEY, "#k2": env.TENANT_SORT_KEY, "#s": "status"}
            return keys | more
        return {"#k1": env.EVENT_ID_KEY, "#s": "status"} | more

    def _label(self, item: Mapping[str, Any]) -> str:
        if self._settings.tenant_layout:
            pk = item[env.TENANT_PARTITION_KEY]["S"]
            sk = item[env.TENANT_SORT_KEY]["S"]
            return f"{pk}\x00{sk}"
        return str(item[env.EVENT_ID_KEY]["S"])


def _partiql_name(name: str) -> str:
    # A PartiQL tuple's attribute names are single-quoted strings; a quote doubles.
    return "'" + name.replace("'", "''") + "'"


class ItemClaims(_Placement):
    """The business table, whose single item per event also holds the event's claim.

    2 write units in the transaction instead of 4 for a separate claim item plus the row; the
    item's own condition (``attribute_not_exists`` over its key) is the claim guard; with
    ``ALL_OLD`` the refusal returns the existing item, whose ``claim_event_id`` tells a
    duplicate (this event) from a semantic failure (another event's effect).
    """

    absent_claim_is_semantic = True
    """The item's condition failed, yet no item exists: the Put's own condition failed on a
    new item, a property of the message (semantic), not a vanished claim."""
    dedup_horizon_seconds = None
    """The claim lives as long as the item: no horizon."""

    def __init__(self, client: Any, settings: Settings, effect: SingleItemEffect) -> None:
        assert settings.business_table  # Consumer.check requires it
        super().__init__(client)
        self._table = settings.business_table
        self._effect = effect
        self._key_names = effect.key
        # Receipts live in the component's state table, never in the business table; like
        # the claim in the item, they do not expire.
        self.receipts = Receipts(client, settings, expires=False)

    def receipt_entry(self, key: StateKey, event_id: str) -> str:
        """How a receipt lists this claim: its event id (which alone derives the item)."""
        return event_id

    def receipt_of(self, existing: Mapping[str, Any] | None) -> str | None:
        """The receipt an existing item's claim names (None: written before receipts)."""
        value = (existing or {}).get(env.ITEM_CLAIM_RECEIPT, {}).get("S")
        return str(value) if value else None

    def claim(
        self,
        *,
        key: StateKey,
        event_id: str,
        message_id: str,
        items: list[TransactItem],
        status: str,
        now: int,
        receipt: str | None = None,
    ) -> Claim:
        """The business Put (checked by ``SingleItemEffect.check``) carrying the claim, and,
        when the Put only creates the declared item, the same write as a PartiQL INSERT."""
        own = items[0]["Put"]
        put = dict(own)
        item = dict(put["Item"])
        item.update(
            {
                env.ITEM_CLAIM_EVENT_ID: {"S": event_id},
                env.ITEM_CLAIM_STATUS: {"S": status},
                env.ITEM_CLAIM_MESSAGE_ID: {"S": message_id},
                env.ITEM_CLAIM_RECEIVED_AT: {"N": str(now)},
            }
        )
        if key.fingerprint:  # in the same write: no extra call, ~45 bytes
            item[env.ITEM_CLAIM_FINGERPRINT] = {"S": key.fingerprint}
        if receipt:  # the batch's receipt that will list it once published (Receipts)
            item[env.ITEM_CLAIM_RECEIPT] = {"S": receipt}
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
        insert = None
        if own.get("TableName") == self._table and self._effect.creates(own):
            fields = ", ".join(f"{_partiql_name(name)}: ?" for name in item)
            insert = {
                "Statement": f'INSERT INTO "{self._table}" VALUE {{{fields}}}',
                "Parameters": list(item.values()),
                # Used when DynamoDB carries the existing item with the refusal; else one read.
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        return Claim(
            StateKey(key=item_key, label=label, fingerprint=key.fingerprint),
            {"Put": put},
            [],
            insert,
        )

    def verdict(
        self,
        existing: Mapping[str, Any] | None,
        event_id: str | None,
        fingerprint: str | None = None,
    ) -> str | None:
        """This event's claim status, ``CLAIMED_BY_OTHER_EVENT``, ``Conflict`` (this event's
        claim, another content fingerprint), or None (unknown: read)."""
        if not existing:
            return None
        claimed_by = existing.get(env.ITEM_CLAIM_EVENT_ID, {}).get("S")
        if claimed_by != event_id:
            return CLAIMED_BY_OTHER_EVENT
        stored = existing.get(env.ITEM_CLAIM_FINGERPRINT, {}).get("S")
        if conflicts(stored, fingerprint):
            first = existing.get(env.ITEM_CLAIM_MESSAGE_ID, {}).get("S")
            return Conflict(str(first or "unknown"))
        status = existing.get(env.ITEM_CLAIM_STATUS, {}).get("S")
        return str(status) if status is not None else None

    def read_statuses(
        self, keys: Sequence[StateKey], event_ids: Sequence[str]
    ) -> tuple[dict[str, str | None], set[str], dict[str, str]]:
        """One consistent BatchGetItem of the items: ``({label: verdict}, unprocessed,
        {label: the receipt its claim names})``.

        Two events may name one item (a duplicate and a clash with it): BatchGetItem refuses
        a request that lists a key twice (ValidationException), so each key is read once."""
        unique = {self._key_text(k.key): k.key for k in keys}
        names = {f"#k{i}": name for i, name in enumerate(self._key_names)}
        names.update({"#ce": env.ITEM_CLAIM_EVENT_ID, "#cs": env.ITEM_CLAIM_STATUS})
        names.update({"#cf": env.ITEM_CLAIM_FINGERPRINT, "#cm": env.ITEM_CLAIM_MESSAGE_ID})
        names["#cr"] = env.ITEM_CLAIM_RECEIPT  # a pending claim's receipt (Receipts)
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
        receipts: dict[str, str] = {}
        for key, event_id in zip(keys, event_ids, strict=True):
            text = self._key_text(key.key)
            if text in unprocessed_keys:
                unprocessed.add(key.label)
            else:
                statuses[key.label] = self.verdict(found.get(text), event_id, key.fingerprint)
                if receipt := self.receipt_of(found.get(text)):
                    receipts[key.label] = receipt
        return statuses, unprocessed, receipts

    def mark_sent(self, writes: Sequence[StatusWrite], now: int) -> list[str | None]:
        """ONE PartiQL BatchExecuteStatement (<= 25), as ``StateTableClaims.mark_sent``; the
        WHERE clause also requires the item's claim to be this event's."""
        statements = []
        for write in writes:
            sets, parameters = _sent_statement(
                self._table,
                env.ITEM_CLAIM_STATUS,
                env.ITEM_CLAIM_SENT_AT,
                env.ITEM_CLAIM_NOTIFICATION_ID,
                now,
                write,
            )
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
        return [answer.code for answer in self._execute(statements)]

    def record_owed(
        self, key: StateKey, notification: Notification, error: str, now: int, event_id: str
    ) -> None:
        """Keep an owed notification on the item while its claim is this event's, pending."""
        stored = _owed_notification(notification)
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


class ClaimThenRow(StateTableClaims):
    """``DomainKeyedCreate``: the claim is a state-table item (as ``StateTableClaims``: TTL,
    dedup horizon, receipts, ``sent`` marking, owed notifications), the effect ONE business row
    keyed by a business key, recording the event id (``env.ROW_EVENT_ID``).

    Standard queue: the claim is a PartiQL INSERT into the state table (``Claim.insert``), the
    row a PartiQL INSERT into the business table (``Claim.row``) written only after the claim
    is known to be this copy's; 1 + 1 write units. FIFO: claim Put + row Put in the batch's
    transaction (``Claim.items``). IAM: ``grants.PLACEMENTS[grants.PLACEMENT_DOMAIN_KEYED]``.
    """

    def __init__(self, client: Any, settings: Settings, effect: DomainKeyedCreate) -> None:
        assert settings.business_table  # Consumer.check requires it
        super().__init__(client, settings)
        self._business_table = settings.business_table
        self._effect = effect

    def claim(
        self,
        *,
        key: StateKey,
        event_id: str,
        message_id: str,
        items: list[TransactItem],
        status: str,
        now: int,
        receipt: str | None = None,
    ) -> Claim:
        """The state-table claim (a Put, and the same write as a PartiQL INSERT) and the
        business row recording the event id (a Put for the FIFO transaction, and an INSERT)."""
        state = super().claim(
            key=key,
            event_id=event_id,
            message_id=message_id,
            items=[],
            status=status,
            now=now,
            receipt=receipt,
        )
        claim_item = state.put["Put"]["Item"]
        own = items[0]["Put"]
        row = dict(own["Item"])
        row[env.ROW_EVENT_ID] = {"S": event_id}
        names = {f"#row_key{n}": name for n, name in enumerate(self._effect.key)}
        row_put = {
            "Put": {
                "TableName": self._business_table,
                "Item": row,
                "ConditionExpression": " AND ".join(
                    f"attribute_not_exists({alias})" for alias in names
                ),
                "ExpressionAttributeNames": names,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        return Claim(
            key=state.key,
            put=state.put,
            items=[row_put],
            insert={
                **_insert_statement(self._table, claim_item),
                # Used when DynamoDB carries the existing claim with the refusal; else one read.
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            },
            row=_insert_statement(self._business_table, row),
            row_key={name: row[name] for name in self._effect.key},
        )

    def release(self, key: StateKey) -> None:
        """Delete a claim whose row could not be written (another event's row holds its key, or
        DynamoDB refused the row): nothing of this event was applied, so nothing may claim it
        (``ops explain`` would say its write was applied and a notification owed). Only while
        it is ``pending`` with this copy's content fingerprint: a claim another copy of other
        content made, or one published since, is left alone (ConditionalCheckFailed). Rare
        path, one DeleteItem per record (``dynamodb:DeleteItem`` on the state table)."""
        names = {"#s": "status"}
        values: dict[str, Any] = {":pending": {"S": env.STATUS_PENDING}}
        condition = "#s = :pending"
        if key.fingerprint:
            names["#f"] = env.STATE_CLAIM_FINGERPRINT
            values[":f"] = {"S": key.fingerprint}
            condition += " AND #f = :f"
        self._client.delete_item(
            TableName=self._table,
            Key=key.key,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def insert_rows(self, statements: Sequence[Mapping[str, Any]]) -> list[StatementAnswer]:
        """ONE BatchExecuteStatement of rows' INSERTs (``Claim.row``, <= 25, one per row key)."""
        return self._execute([dict(s) for s in statements])

    def read_rows(
        self, keys: Sequence[Mapping[str, Any]]
    ) -> tuple[dict[str, str | None], set[str]]:
        """One consistent BatchGetItem of rows whose INSERT was refused: ``({row key text:
        the event id the row records, "" for a row recording none}, unprocessed key texts)``;
        an absent row is absent from the answer. Each key once (BatchGetItem refuses a key
        listed twice)."""
        unique = {row_key_text(k): dict(k) for k in keys}
        names = {f"#k{n}": name for n, name in enumerate(self._effect.key)}
        names["#e"] = env.ROW_EVENT_ID
        response = self._client.batch_get_item(
            RequestItems={
                self._business_table: {
                    "Keys": list(unique.values()),
                    "ConsistentRead": True,
                    "ProjectionExpression": ", ".join(names),
                    "ExpressionAttributeNames": names,
                }
            }
        )
        found: dict[str, str | None] = {}
        for item in response.get("Responses", {}).get(self._business_table, []):
            key = {name: item[name] for name in self._effect.key if name in item}
            found[row_key_text(key)] = str(item.get(env.ROW_EVENT_ID, {}).get("S", ""))
        unprocessed = {
            row_key_text(k)
            for k in response.get("UnprocessedKeys", {})
            .get(self._business_table, {})
            .get("Keys", [])
        }
        return found, unprocessed


def row_key_text(key: Mapping[str, Any]) -> str:
    """A row key as comparable text (the same key in any attribute order)."""
    return json.dumps(key, sort_keys=True)


def _insert_statement(table: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """``INSERT INTO "<table>" VALUE {'<attribute>': ?, ...}``, every value a parameter;
    DynamoDB refuses it with DuplicateItem when the key exists ("PartiQL insert statements")."""
    fields = ", ".join(f"{_partiql_name(name)}: ?" for name in item)
    return {
        "Statement": f'INSERT INTO "{table}" VALUE {{{fields}}}',
        "Parameters": list(item.values()),
    }


ClaimPlacement = StateTableClaims | ItemClaims | ClaimThenRow


def placement(
    effect: SingleItemEffect | DomainKeyedCreate | None, client: Any, settings: Settings
) -> ClaimPlacement:
    """THE seam: the consumer's declared effect chooses where its claims live."""
    if effect is None:
        return StateTableClaims(client, settings)
    if isinstance(effect, DomainKeyedCreate):
        return ClaimThenRow(client, settings, effect)
    return ItemClaims(client, settings, effect)
