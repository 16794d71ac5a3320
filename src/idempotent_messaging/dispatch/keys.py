"""The charge message contract shared by the dispatcher and the charge consumer (pure).

idempotency key  ``<tenant>:<employee>:<YYYY-MM>``  (the event id of the charge)
MessageGroupId   ``<tenant>#<YYYY-MM>``              (FIFO order per tenant and month)
MessageDeduplicationId  sha256 hex of the key        (64 chars, valid for SQS, deterministic)
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

# SQS MessageGroupId / MessageDeduplicationId: up to 128 characters of alphanumerics and
# punctuation !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ . Ids also must not contain the separators
# ':' and '#' or two (tenant, employee) pairs could share one key.
_ID_RE = re.compile(r"^[A-Za-z0-9!\"$%&'()*+,\-./;<=>?@\[\\\]^_`{|}~]{1,100}$")
_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")
_CURRENCY_RE = re.compile(r"^[A-Z]{3}$")
MAX_AMOUNT_MINOR = 10**15  # far above any salary charge; catches unit mistakes (cents vs yen)

BODY_EVENT_ID = "event_id"
BODY_IDEMPOTENCY_KEY = "idempotency_key"
BODY_TENANT = "tenant_id"
BODY_EMPLOYEE = "employee_id"
BODY_MONTH = "month"
BODY_AMOUNT = "amount"
BODY_CURRENCY = "currency"


class InvalidItem(ValueError):
    """A billable item that cannot become a charge. ``str()`` names the field, the value and
    the rule (for the caller that has the item in hand); ``reason`` is what may be logged or
    stored: the field and the rule, never the value (amounts and ids are business data)."""

    def __init__(self, field: str, value: object, rule: str) -> None:
        super().__init__(f"{field}={value!r}: {rule}")
        self.field = field
        self.rule = rule

    @property
    def reason(self) -> str:
        return f"{self.field}: {self.rule}"


def validate_month(month: object) -> str:
    """``YYYY-MM`` with a real month; ValueError naming the value otherwise."""
    if not isinstance(month, str):
        raise ValueError(f"month={month!r}: must be a string YYYY-MM, e.g. '2026-06'")
    match = _MONTH_RE.match(month)
    if match is None or not 1 <= int(match.group(2)) <= 12 or int(match.group(1)) < 2000:
        raise ValueError(f"month={month!r}: must be YYYY-MM with month 01..12, e.g. '2026-06'")
    return month


def validate_id(field: str, value: object) -> str:
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise InvalidItem(
            field,
            value,
            "must be 1..100 characters, letters, digits or punctuation other than ':' and '#' "
            "(they separate the parts of the idempotency key)",
        )
    return value


def idempotency_key(tenant_id: str, employee_id: str, month: str) -> str:
    return f"{tenant_id}:{employee_id}:{month}"


def group_id(tenant_id: str, month: str) -> str:
    return f"{tenant_id}#{month}"


def deduplication_id(key: str) -> str:
    """sha256 hex of the idempotency key: 64 valid characters however long the ids are."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class BillableItem:
    """One active billing account: charge ``amount`` (minor units) in ``currency``."""

    tenant_id: str
    employee_id: str
    amount: int
    currency: str

    @classmethod
    def parse(
        cls, tenant_id: object, employee_id: object, amount: object, currency: object
    ) -> BillableItem:
        """Validated item; InvalidItem naming the field otherwise."""
        tenant = validate_id(BODY_TENANT, tenant_id)
        employee = validate_id(BODY_EMPLOYEE, employee_id)
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise InvalidItem(BODY_AMOUNT, amount, "must be an integer number of minor units")
        if not 0 <= amount <= MAX_AMOUNT_MINOR:
            raise InvalidItem(BODY_AMOUNT, amount, f"must be between 0 and {MAX_AMOUNT_MINOR}")
        if not isinstance(currency, str) or not _CURRENCY_RE.match(currency):
            raise InvalidItem(BODY_CURRENCY, currency, "must be an ISO 4217 code such as 'JPY'")
        return cls(tenant, employee, amount, currency)


@dataclass(frozen=True, slots=True)
class ChargeMessage:
    """The body + FIFO attributes of one charge on the work queue."""

    key: str
    group_id: str
    deduplication_id: str
    body: str


def charge_body(item: BillableItem, month: str) -> dict[str, object]:
    """Deterministic body (no timestamps, no run ids): a re-send is byte-identical."""
    key = idempotency_key(item.tenant_id, item.employee_id, month)
    return {
        BODY_EVENT_ID: key,
        BODY_IDEMPOTENCY_KEY: key,
        BODY_TENANT: item.tenant_id,
        BODY_EMPLOYEE: item.employee_id,
        BODY_MONTH: month,
        BODY_AMOUNT: item.amount,
        BODY_CURRENCY: item.currency,
    }


def charge_message(item: BillableItem, month: str) -> ChargeMessage:
    key = idempotency_key(item.tenant_id, item.employee_id, month)
    body = json.dumps(charge_body(item, month), separators=(",", ":"), sort_keys=True)
    return ChargeMessage(
        key=key,
        group_id=group_id(item.tenant_id, month),
        deduplication_id=deduplication_id(key),
        body=body,
    )
