"""Protection of the resources that hold a pipeline's data: queues with messages, and tables.

A stateful pipeline resource is one whose deletion loses what the program cannot recreate:
- an SQS queue that carries messages: a source queue (an event source mapping reads it, or it
  has a redrive policy) or a dead-letter queue (the target of a redrive or of another
  service's dead-lettering, or allowing redrive from named sources);
- a DynamoDB table holding idempotency claims (as `tables.idempotency_tables` recognises one),
  business rows or a ledger (named in the environment of a function that consumes a queue);
- any queue or table tagged with a data role (`limits.IDEMPOTENCY_TABLE_TAG_KEY`, i.e.
  `idempotent-messaging:role`, as the components tag every stateful child).
A resource tagged `idempotent-messaging:disposable=true` is declared disposable.

CrossGuard hands a stack policy each resource's `protect` option (pulumi-policy's
`PolicyResource.opts.protect`) but neither `retainOnDelete` nor the operation the engine plans
(create, update, replace, delete): a pack cannot tell a harmless update from a replacement that
empties a queue. So the rule here is advisory and only says that nothing would stop a deletion;
the plan check of the offline engine (`idempotent-messaging-check --state preview.json`,
pseudo-policy `plan-no-data-loss`) reads the planned operations and is what refuses a
replacement or deletion.

The resource graph carries `protect` when the engine passes it (`Node.protect`); a node without
it (an engine that does not pass resource options) is not judged, never guessed unprotected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import limits
from ._base import ADVISORY, Boundary, Finding, stack_rule
from .graph import QUEUE, TABLE, Graph, Node
from .tables import idempotency_tables
from .values import is_unknown

ROLE_TAG_KEY = limits.IDEMPOTENCY_TABLE_TAG_KEY  # idempotent-messaging:role
DISPOSABLE_TAG_KEY = limits.DISPOSABLE_TAG_KEY  # idempotent-messaging:disposable
DISPOSABLE_TAG_VALUE = limits.DISPOSABLE_TAG_VALUE  # true

SOURCE_QUEUE_DATA = "in-flight messages (sent and not yet consumed)"
DEAD_LETTERS_DATA = "dead letters awaiting redrive"
CLAIMS_DATA = (
    "every idempotency claim, so messages redelivered afterwards are not recognised as "
    "processed and apply their effects twice"
)
ROWS_DATA = "its rows (business records or a ledger the consumer writes)"


def tags_of(node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for prop in ("tagsAll", "tags"):
        tags = node.get(prop, default={})
        if isinstance(tags, dict):
            out.update({str(k): v for k, v in tags.items() if not is_unknown(v)})
    return out


def disposable(node: Node) -> bool:
    return str(tags_of(node).get(DISPOSABLE_TAG_KEY, "")).lower() == DISPOSABLE_TAG_VALUE


def _consumer_tables(graph: Graph) -> set[str]:
    """Tables named in the environment of a function that consumes a queue."""
    out: set[str] = set()
    for m in graph.mappings:
        fn = m.function
        if not m.is_sqs or not isinstance(fn, Node):
            continue
        out.update(t.urn for t in graph.dep_nodes(fn, "environment", (TABLE,)))
        variables = fn.get("environment", "variables", default={})
        for value in variables.values() if isinstance(variables, dict) else []:
            if isinstance(value, str) and not is_unknown(value):
                table = graph.table_for_ref(value)
                if table is not None:
                    out.add(table.urn)
    return out


def stateful_resources(graph: Graph, config: Mapping[str, Any] | None = None) -> dict[str, str]:
    """URN -> the data the queue or table holds, for every stateful pipeline resource."""
    found: dict[str, list[str]] = {}

    def add(urn: str, data: str) -> None:
        if data not in found.setdefault(urn, []):
            found[urn].append(data)

    consumed = {m.queue.urn for m in graph.mappings if isinstance(m.queue, Node)}
    for q in graph.of_type(QUEUE):
        if q.urn in consumed or q.urn in graph.redrives:
            add(q.urn, SOURCE_QUEUE_DATA)
        if q.urn in graph.declared_dlqs:
            add(q.urn, DEAD_LETTERS_DATA)
    claims = idempotency_tables(graph, config or {})
    rows = _consumer_tables(graph)
    for t in graph.of_type(TABLE):
        if t.urn in claims:
            add(t.urn, f"{CLAIMS_DATA} (an idempotency table: {claims[t.urn]})")
        elif t.urn in rows:
            add(t.urn, ROWS_DATA)
    for n in graph.of_type(QUEUE, TABLE):
        role = tags_of(n).get(ROLE_TAG_KEY)
        if isinstance(role, str) and role and n.urn not in found:
            add(n.urn, f"the data of its role '{role}' (tag {ROLE_TAG_KEY})")
    return {urn: " and ".join(data) for urn, data in found.items()}


@stack_rule(
    "stateful-pipeline-resource-protected",
    "Queues that carry messages (source queues, DLQs) and tables holding idempotency claims, "
    "business rows or a ledger are protected (`protect`), so no update or destroy deletes "
    "them unnoticed.",
    ADVISORY,
    "Set opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True) on the queue or table "
    "(the components do with protect_data), or tag a disposable one "
    "idempotent-messaging:disposable=true. A policy pack sees `protect` but neither "
    "retainOnDelete nor the planned operation: the plan check (`idempotent-messaging-check "
    "--state preview.json` on `pulumi preview --json --show-sames`, plan-no-data-loss) is what "
    "sees replacements and deletions.",
    enforces=(
        "Pulumi deletes a resource on destroy or replacement unless it is protected "
        "(Pulumi docs, resource options 'protect' and 'retainOnDelete')."
    ),
    defaults="No protect option: unprotected, Pulumi's default.",
    boundaries=(
        Boundary(
            (
                "retainOnDelete and the planned operation: a policy pack does not see them (the "
                "plan check does)."
            ),
            "test_protection_rule_does_not_see_retain_on_delete",
        ),
    ),
)
def stateful_resource_protected(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for urn, data in stateful_resources(graph).items():
        node = graph.by_urn[urn]
        if node.protect is not False or disposable(node):
            continue  # protected, or the engine did not say (never guessed), or disposable
        kind = "queue" if node.type == QUEUE else "table"
        findings.append(
            (
                urn,
                f"{kind} {node.label} holds {data}, and is not protected: an update that "
                f"replaces it (a changed FIFO flag, key schema or name) or a destroy deletes it "
                f"with its contents. Fix: protect=True (with retain_on_delete=True) in its "
                f"resource options, or tag it {DISPOSABLE_TAG_KEY}={DISPOSABLE_TAG_VALUE} if "
                f"its contents are disposable; run the plan check on `pulumi preview --json "
                f"--show-sames` to see replacements.",
            )
        )
    return findings
