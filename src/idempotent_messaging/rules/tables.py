"""DynamoDB rules: idempotency/state tables expire their records; tables keep PITR.

How the pack recognises an idempotency (consumer state) table, so that business tables (order
lifecycle state, CRM duplicate matches) never trigger the TTL rule. One strong signal suffices:
1. the tag `limits.IDEMPOTENCY_TABLE_TAG_KEY` = `limits.IDEMPOTENCY_TABLE_TAG_VALUE`, or a
   purpose/role/usage/use/kind/type tag whose value says idempotency/dedup;
2. a Lambda function's environment variable named exactly as the idempotency runtimes name it
   (`limits.IDEMPOTENCY_TABLE_ENV_VARS`: ours and Powertools' conventions), or spelling out
   "idempotency" (IDEMPOTENCY_TABLE_NAME, DDB_IDEMPOTENCY_TABLE), references the table.
Otherwise a name signal must be corroborated by a structure signal:
- name signals: a referencing env var matching `envVarPattern` (IDEM_TABLE, DEDUPE_TABLE, ...)
  or a table name matching `namePatterns` (`...-idem`, `processed-events`, ...);
- structure signals: the key schema of an idempotency store (a lone string hash key named like
  an event/message/idempotency key, Powertools' `id`), or a referencing function that carries
  the Powertools layer.
The finding states the evidence it used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .. import limits
from ._base import (
    ADVISORY,
    MANDATORY,
    Finding,
    resource_rule,
    stack_rule,
    strings,
)
from .graph import FUNCTION, TABLE, Graph, Node
from .values import is_unknown

# Matched case-insensitively against the whole variable name; a name signal only (see above).
DEFAULT_ENV_VAR_PATTERN = (
    r"^\w*(IDEMPOTEN|(^|_)IDEM(_|$)|DEDUP|PROCESSED_?(EVENT|MESSAGE|RECORD|REQUEST)"
    r"|SEEN_?(EVENT|MESSAGE)|CONSUMER_?STATE)\w*$"
)
DEFAULT_NAME_PATTERNS = (
    r"idempoten",
    r"(^|[-_.])idem($|[-_.])",
    r"processed[-_]?(events?|messages?|records?)",
    r"seen[-_]?(events?|messages?)",
    r"dedup",
)

# Tags that state what a table is for. Only these count: a project or component tag whose value
# merely contains a keyword (project=idempotent-messaging) says nothing about the table.
PURPOSE_TAG_KEYS = frozenset({"purpose", "role", "usage", "use", "kind", "type"})

# Hash keys of idempotency stores: Powertools' `id`, our runtime's `event_id`, and the usual
# message/request keys. A composite (hash + range) key is how business records are modelled.
IDEMPOTENCY_HASH_KEYS = frozenset(
    {
        "id",
        "pk",
        "key",
        "event_id",
        "eventid",
        "message_id",
        "messageid",
        "idempotency_key",
        "idempotencykey",
        "request_id",
        "requestid",
        "dedup_key",
        "dedup_id",
        "dedupe_key",
        "deduplication_id",
    }
)
POWERTOOLS_LAYER = re.compile(r"powertools", re.I)
# A variable that spells out "idempotency" names an idempotency store, whatever else it says.
IDEMPOTENCY_WORD = re.compile(r"IDEMPOTEN", re.I)


def _env_vars(fn: Node) -> dict[str, Any]:
    variables = fn.get("environment", "variables", default={})
    return variables if isinstance(variables, dict) else {}


def _key_schema_signal(table: Node) -> str | None:
    hash_key, range_key = table.get("hashKey"), table.get("rangeKey")
    if is_unknown(hash_key) or range_key is not None or not isinstance(hash_key, str):
        return None
    if hash_key.lower() not in IDEMPOTENCY_HASH_KEYS:
        return None
    attributes = table.get("attributes", default=[])
    for attr in attributes if isinstance(attributes, list) else []:
        if isinstance(attr, dict) and attr.get("name") == hash_key and attr.get("type") != "S":
            return None
    return f"its lone string hash key '{hash_key}' is an idempotency key"


def _has_powertools(fn: Node) -> bool:
    layers = fn.get("layers", default=[])
    return isinstance(layers, list) and any(
        isinstance(arn, str) and POWERTOOLS_LAYER.search(arn) for arn in layers
    )


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
    """Table URN -> the evidence that it is an idempotency table."""
    names = set(config.get("envVars", limits.IDEMPOTENCY_TABLE_ENV_VARS))
    pattern = re.compile(str(config.get("envVarPattern", DEFAULT_ENV_VAR_PATTERN)), re.I)
    tag_key = str(config.get("tagKey", limits.IDEMPOTENCY_TABLE_TAG_KEY))
    tag_value = str(config.get("tagValue", limits.IDEMPOTENCY_TABLE_TAG_VALUE))
    name_patterns = [re.compile(p, re.I) for p in config.get("namePatterns", DEFAULT_NAME_PATTERNS)]
    strong: dict[str, str] = {}
    name_signals: dict[str, str] = {}
    structure_signals: dict[str, str] = {}
    for fn in graph.of_type(FUNCTION):
        powertools = _has_powertools(fn)
        refs = _env_references(graph, fn, lambda v: v in names or bool(pattern.match(v)))
        for var, tables in sorted(refs.items()):
            for table in tables:
                if var in names or IDEMPOTENCY_WORD.search(var):
                    strong.setdefault(table.urn, f"function {fn.label} names it in {var}")
                elif pattern.match(var):
                    name_signals.setdefault(table.urn, f"function {fn.label} names it in {var}")
                if powertools:
                    structure_signals.setdefault(
                        table.urn, f"function {fn.label} uses the Powertools layer"
                    )
    for table in graph.of_type(TABLE):
        for tags_prop in ("tags", "tagsAll"):
            tags = table.get(tags_prop, default={})
            if not isinstance(tags, dict):
                continue
            if tags.get(tag_key) == tag_value:
                strong.setdefault(table.urn, f"it is tagged {tag_key}={tag_value}")
            for key, value in tags.items():  # e.g. purpose=idempotency, role=dedup
                if (
                    str(key).lower() in PURPOSE_TAG_KEYS
                    and isinstance(value, str)
                    and any(p.search(value) for p in name_patterns)
                ):
                    strong.setdefault(table.urn, f"its tag {key}={value} marks it so")
        physical = table.get("name")
        for text in (table.name, physical if isinstance(physical, str) else ""):
            if text and not is_unknown(text) and any(p.search(text) for p in name_patterns):
                name_signals.setdefault(table.urn, f"its name '{text}' says idempotency")
        key_signal = _key_schema_signal(table)
        if key_signal is not None:
            structure_signals.setdefault(table.urn, key_signal)
    found = dict(strong)
    for urn, name_why in name_signals.items():
        if urn not in found and urn in structure_signals:
            found[urn] = f"{name_why} and {structure_signals[urn]}"
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
