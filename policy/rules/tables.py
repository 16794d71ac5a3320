"""DynamoDB rules: idempotency/state tables expire their records; tables keep PITR.

How the pack recognises an idempotency (consumer state) table, so business tables never
trigger the TTL rule -- any one of:
1. a Lambda function's environment variable named in `limits.IDEMPOTENCY_TABLE_ENV_VARS`
   (or matching `DEFAULT_ENV_VAR_PATTERN` case-insensitively, e.g. IDEMPOTENCY_TABLE_NAME,
   DEDUPE_TABLE, PROCESSED_MESSAGES_TABLE, STATE_TABLE) references the table: its value is
   the table's name or ARN (literal or an Output), or, when values are unknown during a
   preview, the environment depends on the table and every unknown value sits in such a
   variable;
2. the table carries the tag `limits.IDEMPOTENCY_TABLE_TAG_KEY` =
   `limits.IDEMPOTENCY_TABLE_TAG_VALUE`, or a purpose/role/usage/use/kind/type tag whose
   value matches the name patterns (e.g. purpose=idempotency);
3. its physical or logical name matches `DEFAULT_NAME_PATTERNS` (idempotency, processed
   events, dedup tables), all configurable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from policy import limits
from policy.graph import FUNCTION, TABLE, Graph, Node
from policy.rules._base import (
    ADVISORY,
    MANDATORY,
    Finding,
    resource_rule,
    stack_rule,
    strings,
)
from policy.values import is_unknown

# Matched case-insensitively against the whole variable name. The variable must also resolve to
# a table of the stack, so a keyword anywhere in the name is enough: IDEMPOTENCY_TABLE_NAME,
# DDB_IDEMPOTENCY_TABLE, IDEMPOTENCY_STORE_TABLE, DEDUPE_TABLE, PROCESSED_MESSAGES_TABLE,
# SEEN_EVENTS_TABLE, CONSUMER_STATE_TABLE, idempotencyTable, STATE_TABLE. A generic TABLE_NAME
# or ORDER_STATE_TABLE is not enough (business tables are named like that too).
DEFAULT_ENV_VAR_PATTERN = (
    r"^(\w*(IDEMPOTEN|DEDUP|PROCESSED_?(EVENT|MESSAGE|RECORD|REQUEST)|SEEN_?(EVENT|MESSAGE)"
    r"|CONSUMER_?STATE)\w*|(POWERTOOLS_?)?STATE_?TABLE(_?NAME|_?ARN)?)$"
)
DEFAULT_NAME_PATTERNS = (
    r"idempoten",
    r"processed[-_]?(events?|messages?|records?)",
    r"seen[-_]?(events?|messages?)",
    r"dedup",
)

# Tags that state what a table is for. Only these count: a project or component tag whose value
# merely contains a keyword (project=idempotent-messaging) says nothing about the table.
PURPOSE_TAG_KEYS = frozenset({"purpose", "role", "usage", "use", "kind", "type"})


def _env_vars(fn: Node) -> dict[str, Any]:
    variables = fn.get("environment", "variables", default={})
    return variables if isinstance(variables, dict) else {}


def idempotency_tables(graph: Graph, config: Mapping[str, Any]) -> dict[str, str]:
    """Table URN -> why it is an idempotency table."""
    names = set(config.get("envVars", limits.IDEMPOTENCY_TABLE_ENV_VARS))
    pattern = re.compile(str(config.get("envVarPattern", DEFAULT_ENV_VAR_PATTERN)), re.I)
    tag_key = str(config.get("tagKey", limits.IDEMPOTENCY_TABLE_TAG_KEY))
    tag_value = str(config.get("tagValue", limits.IDEMPOTENCY_TABLE_TAG_VALUE))
    name_patterns = [re.compile(p, re.I) for p in config.get("namePatterns", DEFAULT_NAME_PATTERNS)]
    found: dict[str, str] = {}
    for fn in graph.of_type(FUNCTION):
        env = _env_vars(fn)
        known_refs = {
            t.urn
            for v in env.values()
            if isinstance(v, str) and not is_unknown(v)
            for t in [graph.table_for_ref(v)]
            if t is not None
        }
        wanted = {var for var in env if var in names or pattern.match(var)}
        unknown_wanted = [v for v in wanted if is_unknown(env[v])]
        unknown_other = [v for v in env if v not in wanted and is_unknown(env[v])]
        # During a preview a table's ARN (and id) is unknown; the environment's dependencies
        # still name the tables. Those not matched by a known value are referenced by the
        # unknown values: when every unknown value sits in a recognised variable, they are all
        # idempotency tables; when some do not, which is which cannot be told -> skip.
        unresolved = [
            t for t in graph.dep_nodes(fn, "environment", (TABLE,)) if t.urn not in known_refs
        ]
        for var in sorted(wanted):
            value = env[var]
            tables: list[Node] = []
            if isinstance(value, str) and not is_unknown(value):
                table = graph.table_for_ref(value)
                tables = [table] if table is not None else []
            elif is_unknown(value) and not unknown_other:
                tables = unresolved if len(unresolved) <= len(unknown_wanted) else []
            for table in tables:
                found.setdefault(table.urn, f"function {fn.label} names it in {var}")
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
                    and any(p.search(value) for p in name_patterns)
                ):
                    found.setdefault(table.urn, f"its tag {key}={value} marks it so")
        physical = table.get("name")
        for text in (table.name, physical if isinstance(physical, str) else ""):
            if text and not is_unknown(text) and any(p.search(text) for p in name_patterns):
                found.setdefault(table.urn, f"its name '{text}' marks an idempotency table")
    return found


@stack_rule(
    "dynamodb-idempotency-table-has-ttl",
    "Every idempotency/state table has TTL enabled. A table counts as one on explicit "
    "evidence: the idempotency tag, a purpose tag, a function env var of the idempotency "
    "runtimes, or an idempotency-like name combined with the key schema of one.",
    MANDATORY,
    "Enable ttl {attribute_name: 'ttl', enabled: True} and write expiry epochs.",
    {
        "envVars": strings(limits.IDEMPOTENCY_TABLE_ENV_VARS),
        "envVarPattern": {"type": "string", "default": DEFAULT_ENV_VAR_PATTERN},
        "tagKey": {"type": "string", "default": limits.IDEMPOTENCY_TABLE_TAG_KEY},
        "tagValue": {"type": "string", "default": limits.IDEMPOTENCY_TABLE_TAG_VALUE},
        "namePatterns": strings(DEFAULT_NAME_PATTERNS),
    },
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
