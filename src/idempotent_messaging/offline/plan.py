"""The plan check: a preview that replaces or deletes a resource holding messages or rows.

CrossGuard never sees the planned operation (a policy pack gets the resources, ``protect``, but
not whether the engine creates, updates, replaces or deletes them), so the pack cannot tell a
harmless update from a replacement that empties a queue. A ``pulumi preview --json`` document
does: its steps carry the ``op``. This module turns the steps of such a document
(``statefile.load_documents``) into findings of the pseudo-policy ``plan-no-data-loss``
(mandatory unless a policy config lowers it):

- a ``replace`` (also ``create-replacement`` / ``delete-replaced`` with
  ``--show-replacement-steps``) or a ``delete`` of
- an SQS queue that carries messages: a source queue (an event source mapping reads it, or it
  has a redrive policy), a dead-letter queue (a redrive or another service dead-letters into
  it), or a queue the components tagged with a data role; or
- a DynamoDB table whose rows matter: an idempotency table (as the pack recognises one:
  ``rules.tables.idempotency_tables``), a business or ledger table (the components' data role
  tag, or a table named in the environment of a function that consumes a queue).

A replacement creates a new, empty queue or table and deletes the old one with its contents
(SQS cannot turn a standard queue into a FIFO one, DynamoDB cannot change a key schema, and a
new physical name is a new resource). A ``delete`` of a resource with ``retainOnDelete`` leaves
it in AWS and is not a finding; a resource tagged ``idempotent-messaging:disposable=true``
in its state BEFORE the plan (the step's ``oldState``: what the stack recorded) is declared
disposable and is not a finding either. The tag in the new state alone is not enough: Pulumi
applies a changed ``protect`` before it replaces, so the one ``pulumi up`` that turns the
components' ``protect_data`` off (unprotecting and tagging every stateful child) and also
replaces a queue would empty it unguarded. Declaring data disposable takes two deploys: the
first records the tag (updates only), the second may replace or delete (docs/deploy-safety.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..components.protection import DATA_ROLES, ROLE_TAG_KEY
from ..rules.graph import QUEUE, TABLE, Graph, Node
from ..rules.protection import (
    CLAIMS_DATA,
    DEAD_LETTERS_DATA,
    DISPOSABLE_TAG_KEY,
    DISPOSABLE_TAG_VALUE,
    SOURCE_QUEUE_DATA,
    disposable,
    stateful_resources,
    tags_of,
)
from ..rules.values import is_unknown
from .analyzer import Violation
from .recorder import RecordedResource
from .statefile import PlannedChange, StateDocument

PLAN_POLICY = "plan-no-data-loss"
PLAN_DESCRIPTION = (
    "A plan (pulumi preview --json) neither replaces nor deletes a queue that carries messages "
    "or a table holding idempotency claims, business rows or a ledger."
)
PLAN_REMEDIATION = (
    "Drain the queue (or export the table) first and remove it in a later change; keep the old "
    "resource with an alias when it was renamed or moved; or declare it disposable with the tag "
    f"{DISPOSABLE_TAG_KEY}={DISPOSABLE_TAG_VALUE} (protect_data=False on a component) in a deploy "
    "of its own before the one that replaces or deletes it: the check honours the tag only "
    "from the state before the plan."
)
# What each data role tag of the components says the resource holds (protection.DATA_ROLES
# names every role; these say the consequence in the plan check's words).
_ROLE_DATA = {
    "source-queue": SOURCE_QUEUE_DATA,
    "dead-letter-queue": DEAD_LETTERS_DATA,
    "idempotency-state": CLAIMS_DATA,
    "control-dead-letter-queue": "continuations that failed, awaiting redrive",
    "schedule-dead-letter-queue": "schedule fires that never started a run, awaiting redrive",
}


def _node(r: RecordedResource) -> Node:
    return Node(
        urn=r.urn,
        type=r.type,
        name=r.name,
        props=r.outputs,
        prop_deps={k: list(v) for k, v in r.property_dependencies.items()},
        deps=list(r.dependencies),
        parent=r.parent,
    )


def _data(change: PlannedChange, held: Mapping[str, str]) -> str | None:
    """The data a removal of this resource loses, or None when it holds none we know of."""
    for r in (change.old, change.new):
        role = tags_of(_node(r)).get(ROLE_TAG_KEY) if r is not None else None
        if isinstance(role, str) and role in DATA_ROLES:
            return _ROLE_DATA.get(role) or DATA_ROLES[role]
    return held.get(change.urn)


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _what(r: RecordedResource) -> str:
    kind = {QUEUE: "SQS queue", TABLE: "DynamoDB table"}.get(r.type, r.type)
    physical = r.outputs.get("name")
    named = f" ({physical})" if isinstance(physical, str) and not is_unknown(physical) else ""
    return f"{kind} '{r.name}'{named}"


def _ways_out(change: PlannedChange, creates_same_type: bool) -> str:
    r = change.resource
    drain = (
        "drain it first (stop its producers and let the consumer empty it; redrive or settle "
        "the dead letters of a DLQ) and remove it in a later change"
        if r.type == QUEUE
        else "export or back it up first (on-demand backup, point-in-time recovery) and migrate "
        "its items, then remove it in a later change"
    )
    if change.op == "replace":
        keep = (
            "keep the old resource: revert the change that forces the replacement and declare "
            "the new one beside it under another name, move producers and consumers over, then "
            "drain and delete the old"
        )
    else:
        also = " (the plan creates one of its type: is it this one, renamed?)" * creates_same_type
        keep = (
            f"if it was renamed or moved under a new parent{also}, keep it with an alias "
            f"(`opts=pulumi.ResourceOptions(aliases=[...])` naming its old name or parent), so "
            f"Pulumi keeps it instead of deleting it and creating an empty one"
        )
    if change.new is not None and disposable(_node(change.new)):
        disposable_way = (
            f"or, since this plan tags it `{DISPOSABLE_TAG_KEY}={DISPOSABLE_TAG_VALUE}` (as "
            f"protect_data=False does): deploy the tag on its own first (a change of tags and "
            f"protection only), then this change; the tag counts once the stack has recorded it, "
            f"never in the plan that also replaces or deletes the resource"
        )
    else:
        disposable_way = (
            f"or, if its contents are disposable, tag it `{DISPOSABLE_TAG_KEY}="
            f"{DISPOSABLE_TAG_VALUE}` (protect_data=False on a component) in a deploy of its own, "
            f"before this change"
        )
    return f"Way out: {drain}; {keep}; {disposable_way}."


def _message(change: PlannedChange, data: str, creates_same_type: bool) -> str:
    r = change.resource
    if change.op == "replace":
        because = (
            f" (a change of {_listed(change.replace_reasons)} forces it)"
            if change.replace_reasons
            else ""
        )
        what = (
            f"The plan REPLACES {_what(r)}{because}: the engine creates a new, empty one and "
            f"deletes the old one with its contents"
        )
        if change.retain_on_delete:
            what += (
                " (retainOnDelete keeps the old one in AWS, but the stack and its consumers "
                "move to the empty one)"
            )
    else:
        what = f"The plan DELETES {_what(r)}"
    if change.protect:
        what += " (it is protected: `pulumi up` refuses this until it is unprotected)"
    ops = "" if change.ops == [change.op] else f" [steps: {', '.join(change.ops)}]"
    return f"{what}{ops}. Data at risk: {data}. {_ways_out(change, creates_same_type)}"


def plan_findings(document: StateDocument, level: str = "mandatory") -> list[Violation]:
    """The `plan-no-data-loss` findings of a preview document (none for a stack export)."""
    if not document.changes or level == "disabled":
        return []
    after = Graph(_node(c.new) for c in document.changes if c.new is not None)
    before = Graph(
        _node(c.old or c.resource) for c in document.changes if c.op not in ("create", "import")
    )
    # What each resource holds, before or after the plan (a deleted DLQ is a DLQ only in the
    # stack before it, where its source's redrive still names it).
    held = {**stateful_resources(after), **stateful_resources(before)}
    created_types = {c.resource.type for c in document.changes if c.op == "create"}
    findings: list[Violation] = []
    for change in document.changes:
        if change.op not in ("replace", "delete") or change.resource.type not in (QUEUE, TABLE):
            continue
        if change.op == "delete" and change.retain_on_delete:
            continue  # Pulumi forgets it; the queue or table stays in AWS with its data
        if change.old is not None and disposable(_node(change.old)):
            continue  # declared disposable by the stack before this plan (never by the plan)
        data = _data(change, held)
        if data is None:
            continue
        r = change.resource
        findings.append(
            Violation(
                policy=PLAN_POLICY,
                enforcement=level,
                urn=change.urn,
                type=r.type,
                name=r.name,
                message=_message(change, data, r.type in created_types),
                file=r.source_file,
                line=r.source_line,
            )
        )
    return findings


def plan_level(config: Mapping[str, Any] | None) -> str:
    """The level a policy config gives `plan-no-data-loss` (its own entry, else `all`)."""
    config = config or {}
    entry = config.get(PLAN_POLICY, config.get("all"))
    value = entry.get("enforcementLevel") if isinstance(entry, dict) else entry
    return (
        str(value) if value in ("mandatory", "advisory", "disabled", "remediate") else ("mandatory")
    )
