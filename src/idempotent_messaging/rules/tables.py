"""DynamoDB rules: idempotency/state tables expire their records; tables keep PITR.

TTL deletes items after their expiry epoch (DynamoDB Developer Guide, "Time to Live"): demanded
of a business table it would delete business data. So a table is an idempotency (consumer
state) table only on POSITIVE evidence that states its purpose, and the finding names it:
1. the tag `limits.IDEMPOTENCY_TABLE_TAG_KEY` = `limits.IDEMPOTENCY_TABLE_TAG_VALUE`, or a
   purpose/role/usage/use/kind/type tag whose whole value names idempotency or deduplication
   (`idempotency`, `idempotency-state`, `dedup`, `deduplication`);
2. a Lambda function's environment variable that references the table under a name of the
   idempotency runtimes (`limits.IDEMPOTENCY_TABLE_ENV_VARS`: ours and Powertools'
   conventions) or a name matching `envVarPattern` (default: spelling out IDEMPOTENCY, or the
   whole word IDEM: IDEMPOTENCY_TABLE_NAME, IDEM_TABLE);
3. the table's own name matching `namePatterns` (default: spelling out "idempotency").
"Idempotent" alone is no evidence: it is the adjective of project names
(`idempotent-messaging-orders` is a business table of the project).
Words that business tables use too (dedup, processed-events, seen-messages) are no evidence, and
neither is a shape (a lone string `id` hash key, the Powertools layer on a function that names
the table): a CRM `contact-dedupe` table keyed by `id` is business data. Teams whose naming
says more can add their patterns in the rule's config.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .. import limits
from ._base import (
    ADVISORY,
    MANDATORY,
    Boundary,
    Finding,
    resource_rule,
    stack_rule,
    strings,
)
from .graph import FUNCTION, TABLE, Graph, Node
from .values import is_unknown

# Matched case-insensitively against the whole variable name.
DEFAULT_ENV_VAR_PATTERN = r"^\w*(IDEMPOTENC(Y|E)|(^|_)IDEM(_|$))\w*$"
# Searched case-insensitively in the table's logical and physical names.
DEFAULT_NAME_PATTERNS = (r"idempotenc(y|e)",)

# Tags that state what a table is for. Only these count: a project or component tag whose value
# merely contains a keyword (project=idempotent-messaging) says nothing about the table.
PURPOSE_TAG_KEYS = frozenset({"purpose", "role", "usage", "use", "kind", "type"})
# A purpose tag's WHOLE value (case-insensitive) that names the idempotency purpose.
PURPOSE_TAG_VALUE = re.compile(
    r"^(idempotenc[ye]([-_ ](state|store|table|keys?|records?))?|idem|dedupe?|deduplication)$",
    re.I,
)


def _env_vars(fn: Node) -> dict[str, Any]:
    variables = fn.get("environment", "variables", default={})
    return variables if isinstance(variables, dict) else {}


def _env_references(
    graph: Graph, fn: Node, recognised: Callable[[str], bool]
) -> dict[str, list[Node]]:
    """Env var -> the stack tables its value names. During a preview a table's ARN and id are
    unknown; the environment's dependencies still name the tables no known value names. When
    one value is unknown, they are its tables; when several are and each sits in a recognised
    variable, each of them may name any of those tables; otherwise which is which is unknown."""
    env = _env_vars(fn)
    out: dict[str, list[Node]] = {}
    known: set[str] = set()
    for var, value in env.items():
        if isinstance(value, str) and not is_unknown(value):
            table = graph.table_for_ref(value)
            if table is not None:
                out[var] = [table]
                known.add(table.urn)
    unknown_vars = [v for v, value in env.items() if is_unknown(value)]
    unresolved = [t for t in graph.dep_nodes(fn, "environment", (TABLE,)) if t.urn not in known]
    if not unresolved:
        return out
    if len(unknown_vars) == 1 and len(unresolved) == 1:
        out[unknown_vars[0]] = unresolved
    elif len(unresolved) <= len(unknown_vars) and all(recognised(v) for v in unknown_vars):
        for var in unknown_vars:
            out[var] = unresolved
    return out


def idempotency_tables(graph: Graph, config: Mapping[str, Any]) -> dict[str, str]:
    """Table URN -> the positive evidence that it is an idempotency table."""
    names = set(config.get("envVars", limits.IDEMPOTENCY_TABLE_ENV_VARS))
    pattern = re.compile(str(config.get("envVarPattern", DEFAULT_ENV_VAR_PATTERN)), re.I)
    tag_key = str(config.get("tagKey", limits.IDEMPOTENCY_TABLE_TAG_KEY))
    tag_value = str(config.get("tagValue", limits.IDEMPOTENCY_TABLE_TAG_VALUE))
    name_patterns = [re.compile(p, re.I) for p in config.get("namePatterns", DEFAULT_NAME_PATTERNS)]

    def recognised(var: str) -> bool:
        return var in names or bool(pattern.match(var))

    found: dict[str, str] = {}
    for table in graph.of_type(TABLE):
        for tags_prop in ("tags", "tagsAll"):
            tags = table.get(tags_prop, default={})
            if not isinstance(tags, dict):
                continue
            if tags.get(tag_key) == tag_value:
                found.setdefault(table.urn, f"it is tagged {tag_key}={tag_value}")
            for key, value in tags.items():  # e.g. purpose=idempotency, role=dedup
                if (
                    str(key).lower() in PURPOSE_TAG_KEYS
                    and isinstance(value, str)
                    and PURPOSE_TAG_VALUE.match(value.strip())
                ):
                    found.setdefault(table.urn, f"its tag {key}={value} marks it so")
    for fn in graph.of_type(FUNCTION):
        for var, tables in sorted(_env_references(graph, fn, recognised).items()):
            if recognised(var):
                for table in tables:
                    found.setdefault(table.urn, f"function {fn.label} names it in {var}")
    for table in graph.of_type(TABLE):
        physical = table.get("name")
        for text in (table.name, physical if isinstance(physical, str) else ""):
            if text and not is_unknown(text) and any(p.search(text) for p in name_patterns):
                found.setdefault(table.urn, f"its name '{text}' says idempotency")
    return found


@stack_rule(
    "dynamodb-idempotency-table-has-ttl",
    "Every idempotency/state table has TTL enabled. A table counts as one on positive "
    "evidence only: the idempotency tag, a purpose tag, a function env var of the idempotency "
    "runtimes (or spelling out idempotency), or a table name spelling out idempotency.",
    MANDATORY,
    "Enable ttl {attribute_name: 'ttl', enabled: True} and write expiry epochs.",
    {
        "envVars": strings(limits.IDEMPOTENCY_TABLE_ENV_VARS),
        "envVarPattern": {"type": "string", "default": DEFAULT_ENV_VAR_PATTERN},
        "tagKey": {"type": "string", "default": limits.IDEMPOTENCY_TABLE_TAG_KEY},
        "tagValue": {"type": "string", "default": limits.IDEMPOTENCY_TABLE_TAG_VALUE},
        "namePatterns": strings(DEFAULT_NAME_PATTERNS),
    },
    enforces=(
        "DynamoDB deletes items only when Time to Live is enabled on the table (DynamoDB "
        "Developer Guide, 'Using Time to Live'): an idempotency table without it grows "
        "forever."
    ),
    defaults="No ttl block: TTL disabled, DynamoDB's default.",
    boundaries=(
        Boundary(
            (
                "A table without positive evidence of holding idempotency state (a business "
                "table, a `dedup` name, a lone `id` hash key)."
            ),
            "test_ttl_rule_needs_positive_evidence_of_an_idempotency_table",
        ),
        Boundary(
            "Whether the code writes an expiry epoch into the TTL attribute.",
            "test_ttl_rule_does_not_check_that_the_code_writes_the_ttl_attribute",
        ),
    ),
)
def idempotency_table_has_ttl(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for urn, why in idempotency_tables(graph, config).items():
        table = graph.by_urn[urn]
        enabled = table.get("ttl", "enabled")
        if is_unknown(enabled) or enabled is True:
            continue
        attr = table.get("ttl", "attributeName")
        state = (
            f"TTL on attribute '{attr}' is disabled"
            if isinstance(attr, str) and attr
            else "TTL is not enabled"
        )
        findings.append(
            (
                urn,
                f"table {table.label} is an idempotency/state table ({why}) and {state}: every "
                f"processed event stays forever, so the table (and its cost) only grows. Fix: "
                f"set ttl={{'attribute_name': 'ttl', 'enabled': True}} on {table.label} and write "
                f"an expiry epoch into that attribute (e.g. now + 90 days).",
            )
        )
    return findings


@resource_rule(
    "dynamodb-table-pitr-enabled",
    "DynamoDB tables enable point-in-time recovery.",
    ADVISORY,
    "Set point_in_time_recovery {enabled: True}.",
    enforces=(
        "Point-in-time recovery restores a table to any second of the last 35 days only "
        "when enabled (DynamoDB Developer Guide, 'Point-in-time recovery')."
    ),
    defaults="No point_in_time_recovery block: disabled, DynamoDB's default.",
    boundaries=(
        Boundary(
            (
                "Backups made by AWS Backup plans or on-demand backups: only the table's own "
                "setting is read."
            ),
            "test_pitr_rule_reads_only_the_tables_own_setting",
        ),
    ),
)
def table_pitr_enabled(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    if resource_type != TABLE:
        return []
    pitr = props.get("pointInTimeRecovery")
    enabled = pitr.get("enabled") if isinstance(pitr, dict) else (None if pitr is None else pitr)
    if is_unknown(enabled) or enabled is True:
        return []
    return [
        f"table '{name}' has point-in-time recovery disabled (the AWS default): a bad deploy or "
        f"a mistaken write cannot be rolled back. Fix: set "
        f"point_in_time_recovery={{'enabled': True}}."
    ]
