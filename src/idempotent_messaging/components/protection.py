"""What guards the children that hold data. One argument of each component decides it:
``protect_data`` (docs/deploy-safety.md).

A stateful child is one whose deletion loses what the program cannot recreate: messages (the
source queue, the dead-letter queues, the fan-out's control queue) or rows (idempotency claims,
business rows and the ledger, run records, billing accounts). With ``protect_data`` (the
default) each one gets:

- Pulumi ``protect=True``: the engine refuses any update or destroy that would delete or
  replace it, so a changed ``fifo`` or key layout fails the preview instead of emptying it;
- ``retain_on_delete=True``: should a delete still happen (protection lifted with
  ``pulumi state unprotect``, or a replacement under a new physical name), Pulumi drops the
  child from the stack and leaves the queue or table in AWS with its data;
- on tables, DynamoDB ``deletion_protection_enabled=True``: AWS itself refuses DeleteTable,
  from Pulumi or anyone else (console, CLI, another stack).

Without it the component adds none of them (deletion protection is turned off explicitly, so
turning ``protect_data`` off on a stage that had it is what makes ``pulumi destroy`` possible);
``protect`` then comes from the component's own options, as Pulumi inherits it. Each stateful
child is then tagged ``idempotent-messaging:disposable=true`` (``DISPOSABLE_TAG_KEY``): its
contents are declared disposable, so the policy pack's protection advisory skips it and the
plan check (``plan-no-data-loss``) lets a later plan replace or delete it. The plan check
honours the tag only from the state before the plan: the ``pulumi up`` that turns
``protect_data`` off is still checked as a protected stage, the next one is not (two steps;
docs/deploy-safety.md). With ``protect_data`` a caller's disposable tag is dropped: one setting
decides.

Every stateful child is also tagged with its data role (``ROLE_TAG_KEY``, the tag the
idempotency state table already carried), so a check of a plan can name the data a
replacement or deletion would destroy.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi

from idempotent_messaging import limits

ROLE_TAG_KEY = limits.IDEMPOTENCY_TABLE_TAG_KEY
"""``idempotent-messaging:role``: what a stateful child holds."""

DISPOSABLE_TAG_KEY = limits.DISPOSABLE_TAG_KEY
"""``idempotent-messaging:disposable``: tagged ``DISPOSABLE_TAG_VALUE`` (``true``) on every
stateful child of a component without ``protect_data`` (the pack reads the same key)."""
DISPOSABLE_TAG_VALUE = limits.DISPOSABLE_TAG_VALUE

ROLE_SOURCE_QUEUE = "source-queue"
ROLE_DEAD_LETTER_QUEUE = "dead-letter-queue"
ROLE_IDEMPOTENCY_STATE = limits.IDEMPOTENCY_TABLE_TAG_VALUE
ROLE_BUSINESS_ROWS = "business-rows"
ROLE_RUN_RECORDS = "run-records"
ROLE_BILLING_ACCOUNTS = "billing-accounts"
ROLE_CONTROL_QUEUE = "control-queue"
ROLE_CONTROL_DEAD_LETTER_QUEUE = "control-dead-letter-queue"
ROLE_SCHEDULE_DEAD_LETTER_QUEUE = "schedule-dead-letter-queue"
ROLE_UNDELIVERED_ALARMS = "undelivered-alarms"

DATA_ROLES: Mapping[str, str] = {
    ROLE_SOURCE_QUEUE: "messages not yet consumed",
    ROLE_DEAD_LETTER_QUEUE: "quarantined messages awaiting an operator's redrive",
    ROLE_IDEMPOTENCY_STATE: "idempotency claims: without them a redelivered message runs again",
    ROLE_BUSINESS_ROWS: "business rows (e.g. order records, the ledger of charges)",
    ROLE_RUN_RECORDS: "one record per billing month: status, counts, checkpoints",
    ROLE_BILLING_ACCOUNTS: "the items each monthly run charges",
    ROLE_CONTROL_QUEUE: "continuations of a monthly run in progress",
    ROLE_CONTROL_DEAD_LETTER_QUEUE: "continuations that failed, awaiting an operator",
    ROLE_SCHEDULE_DEAD_LETTER_QUEUE: "schedule fires that never started a run",
    ROLE_UNDELIVERED_ALARMS: "alarm notifications SNS could not email (always disposable)",
}
"""Every data role a component tags, with the data it names."""


def data_options(parent: pulumi.Resource, protect_data: bool) -> pulumi.ResourceOptions:
    """The options of a stateful child: protected and retained on delete with
    ``protect_data``, otherwise just its parent (which it then inherits ``protect`` from)."""
    if protect_data:
        return pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True)
    return pulumi.ResourceOptions(parent=parent)


def data_tags(tags: Mapping[str, str] | None, role: str, *, protect_data: bool) -> dict[str, str]:
    """``tags`` with the child's data role (the component's value wins, as the state table's
    always has: the role is a fact about the child, not a setting) and, without
    ``protect_data``, ``DISPOSABLE_TAG_KEY=DISPOSABLE_TAG_VALUE``; with it, no disposable tag
    (a caller's is dropped: ``protect_data`` alone says whether the contents matter)."""
    if role not in DATA_ROLES:
        raise ValueError(f"role={role!r}: not a data role; one of {sorted(DATA_ROLES)}")
    out = {k: v for k, v in dict(tags or {}).items() if k != DISPOSABLE_TAG_KEY}
    out[ROLE_TAG_KEY] = role
    if not protect_data:
        out[DISPOSABLE_TAG_KEY] = DISPOSABLE_TAG_VALUE
    return out
