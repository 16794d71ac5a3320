"""SQS rules: visibility vs the consumer's timeout, redrive, DLQ retention/type/alarm.

Each rule is a pure function over the resource graph (or over one resource's props) returning
`(urn, message)` pairs; `policy.pack` wraps them into pulumi-policy policies. Absent properties
take the AWS default; unknown values (preview) make a rule skip that one check, never guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .. import limits
from ._base import (
    ADVISORY,
    MANDATORY,
    Boundary,
    Finding,
    GraphFix,
    number,
    resource_rule,
    stack_rule,
    strings,
)
from ._kms import service_may_use_topic_key
from .graph import (
    QUEUE,
    REDRIVE_ALLOW_POLICY,
    REDRIVE_POLICY,
    TOPIC,
    ExternalRef,
    Graph,
    Mapping_,
    Node,
    as_number,
    fmt,
    located_at,
    location_of,
    parse_json,
    resource_name_from_ref,
)
from .values import is_unknown

# What the pack does about these at level `remediate` (catalogue column).
_VISIBILITY_REMEDIES = (
    "Offline only (`idempotent-messaging-check --remediate`): raises the queue's "
    "visibility_timeout_seconds to limits.recommended_visibility_timeout (multiplier x "
    "function timeout + batching window, the largest over the queue's consumers, capped at "
    "SQS's 12 h), reported as the program edit to make. `pulumi up` cannot: the engine "
    "remediates one resource at its registration, before the mapping that links the queue "
    "to its function exists (pulumi-policy reports a stack rule at level `remediate` as "
    "mandatory)."
)
_RETENTION_REMEDIES = (
    "Offline only (`idempotent-messaging-check --remediate`): raises the DLQ's "
    "message_retention_seconds to limits.SQS_MAX_RETENTION_S (14 days) when its source keeps "
    "less, reported as the program edit to make; a source at the maximum needs a decision "
    "(shorten it). `pulumi up` cannot: the DLQ registers before the source queue that names "
    "it (pulumi-policy reports a stack rule at level `remediate` as mandatory)."
)


def _num(node: Node, prop: str, default: float) -> Any:
    value = as_number(node.get(prop))
    return default if value is None else value


def visibility_s(queue: Node) -> Any:
    return _num(queue, "visibilityTimeoutSeconds", limits.AWS_DEFAULT_VISIBILITY_TIMEOUT_S)


def retention_s(queue: Node) -> Any:
    return _num(queue, "messageRetentionSeconds", limits.AWS_DEFAULT_MESSAGE_RETENTION_S)


def function_timeout_s(fn: Node) -> Any:
    return _num(fn, "timeout", limits.AWS_DEFAULT_LAMBDA_TIMEOUT_S)


def batching_window_s(esm: Node) -> Any:
    return _num(esm, "maximumBatchingWindowInSeconds", limits.AWS_DEFAULT_BATCHING_WINDOW_S)


def _consumers(graph: Graph) -> list[tuple[Mapping_, Node, Node]]:
    """(mapping, queue, function) for every SQS mapping whose queue and function are known."""
    out = []
    for m in graph.mappings:
        if m.is_sqs and isinstance(m.queue, Node) and isinstance(m.function, Node):
            out.append((m, m.queue, m.function))
    return out


def _visibility_cases(graph: Graph) -> list[tuple[Mapping_, Node, Node, Any, Any, Any]]:
    """(mapping, queue, function, visibility, function timeout, batching window) of every
    Lambda consumer whose visibility and timeout are known (an unknown value decides nothing;
    the window, which only the recommendation needs, may still be unknown)."""
    out = []
    for m, queue, fn in _consumers(graph):
        vis, timeout = visibility_s(queue), function_timeout_s(fn)
        if not (is_unknown(vis) or is_unknown(timeout)):
            out.append((m, queue, fn, vis, timeout, batching_window_s(m.node)))
    return out


def _multiplier(config: Mapping[str, Any]) -> float:
    return float(config.get("multiplier", limits.DEFAULT_VISIBILITY_MULTIPLIER))


def _raise_visibility(graph: Graph, short: Any, multiplier: float) -> list[GraphFix]:
    """The visibility timeout each queue needs, for the queues `short(vis, timeout, window)`
    finds too short for one of their consumers: the largest recommendation over ALL its
    consumers (a fix for one must not leave another short), capped at SQS's maximum."""
    needed: dict[str, int] = {}
    flagged: set[str] = set()
    guessing: set[str] = set()
    for _, queue, _, vis, timeout, window in _visibility_cases(graph):
        if is_unknown(window):
            guessing.add(queue.urn)  # a fix without this consumer's window would be a guess
            continue
        if timeout <= 0:
            continue
        want = limits.recommended_visibility_timeout(timeout, window, multiplier)
        needed[queue.urn] = max(needed.get(queue.urn, 0), want)
        if short(vis, timeout, window):
            flagged.add(queue.urn)
    fixes = []
    for urn in sorted(flagged - guessing):
        target = min(needed[urn], limits.SQS_MAX_VISIBILITY_TIMEOUT_S)
        if target > visibility_s(graph.by_urn[urn]):  # a fix only ever raises it
            fixes.append(GraphFix(urn, "visibilityTimeoutSeconds", target))
    return fixes


def remedy_visibility_covers(graph: Graph, config: Mapping[str, Any]) -> list[GraphFix]:
    return _raise_visibility(
        graph, lambda vis, timeout, _: vis < timeout, limits.DEFAULT_VISIBILITY_MULTIPLIER
    )


def remedy_visibility_6x(graph: Graph, config: Mapping[str, Any]) -> list[GraphFix]:
    multiplier = _multiplier(config)
    return _raise_visibility(
        graph,
        lambda vis, timeout, window: (
            vis < limits.recommended_visibility_timeout(timeout, window, multiplier)
        ),
        multiplier,
    )


@stack_rule(
    "sqs-visibility-timeout-covers-lambda-timeout",
    "Every queue consumed by a Lambda event source mapping has a visibility timeout >= the "
    "function's timeout.",
    MANDATORY,
    "Raise the queue's visibility_timeout_seconds to at least the function timeout.",
    enforces=(
        "Lambda refuses an SQS event source whose queue's visibility timeout is below the "
        "function's timeout (Lambda API reference, CreateEventSourceMapping; 'Using "
        "Lambda with Amazon SQS')."
    ),
    remedies=_VISIBILITY_REMEDIES,
    graph_remedy=remedy_visibility_covers,
    defaults=(
        "No visibility_timeout_seconds: 30 s, SQS's default; no function timeout: 3 s, "
        "Lambda's default; both compared like any value."
    ),
    boundaries=(
        Boundary(
            "Consumers other than Lambda mappings, and a function or queue outside the stack.",
            "test_visibility_rules_need_a_lambda_mapping_with_queue_and_function_in_the_stack",
        ),
        Boundary(
            (
                "A visibility timeout or function timeout another stack owns (a StackReference "
                "output): unknown unless an answers file pins it."
            ),
            "test_visibility_rules_leave_values_of_other_stacks_unknown",
        ),
    ),
)
def visibility_covers_lambda_timeout(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for m, queue, fn, vis, timeout, window in _visibility_cases(graph):
        if (queue.urn, fn.urn) in seen:
            continue
        seen.add((queue.urn, fn.urn))
        if vis < timeout:
            recommended = (
                ""  # the batching window is unknown (a preview): no recommendation to compute
                if is_unknown(window)
                else f" (recommended {limits.recommended_visibility_timeout(timeout, window)} s)"
            )
            vis_note = " (AWS default)" if queue.get("visibilityTimeoutSeconds") is None else ""
            t_note = " (AWS default)" if fn.get("timeout") is None else ""
            findings.append(
                (
                    queue.urn,
                    f"queue {queue.label} visibility timeout {fmt(vis)} s{vis_note} < timeout "
                    f"{fmt(timeout)} s{t_note} of function {fn.label}, which consumes it through "
                    f"event source mapping {m.node.label}; Lambda rejects such a mapping and a "
                    f"slow invocation would see its messages redelivered while it still runs. "
                    f"Fix: set visibility_timeout_seconds >= {fmt(timeout)} on {queue.label}"
                    f"{recommended} or lower the function timeout.",
                )
            )
    return findings


@stack_rule(
    "sqs-visibility-timeout-6x-lambda-timeout",
    "A consumed queue's visibility timeout is >= multiplier x function timeout + maximum "
    "batching window (AWS advises 6x).",
    ADVISORY,
    "Set visibility_timeout_seconds = limits.recommended_visibility_timeout(timeout, window).",
    {"multiplier": number(limits.DEFAULT_VISIBILITY_MULTIPLIER, 1)},
    enforces=(
        "AWS advises a visibility timeout of at least six times the function timeout "
        "(Lambda Developer Guide, 'Using Lambda with Amazon SQS': queue configuration), "
        "plus the batching window the batch waits before the function starts."
    ),
    remedies=_VISIBILITY_REMEDIES,
    graph_remedy=remedy_visibility_6x,
    defaults=(
        "No visibility_timeout_seconds: 30 s; no function timeout: 3 s; no batching window: 0 s."
    ),
    boundaries=(
        Boundary(
            "Consumers other than Lambda mappings, and a function or queue outside the stack.",
            "test_visibility_rules_need_a_lambda_mapping_with_queue_and_function_in_the_stack",
        ),
    ),
)
def visibility_6x_lambda_timeout(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    multiplier = _multiplier(config)
    findings: list[Finding] = []
    seen: set[tuple[str, str, float]] = set()
    for m, queue, fn, vis, timeout, window in _visibility_cases(graph):
        key = (queue.urn, fn.urn, window)
        if is_unknown(window) or key in seen or timeout <= 0:
            continue
        seen.add(key)
        required = limits.recommended_visibility_timeout(timeout, window, multiplier)
        if vis < required:
            findings.append(
                (
                    queue.urn,
                    f"queue {queue.label} visibility timeout {fmt(vis)} s < {fmt(multiplier)} x "
                    f"timeout {fmt(timeout)} s of function {fn.label} + maximum batching window "
                    f"{fmt(window)} s of mapping {m.node.label} = {required} s; Lambda retries a "
                    f"throttled or failed batch within the visibility timeout, so a shorter one "
                    f"redelivers messages still in work. Fix: raise visibility_timeout_seconds "
                    f"on {queue.label} to >= {required}.",
                )
            )
    return findings


@stack_rule(
    "sqs-lambda-source-has-dlq",
    "Every queue a Lambda function consumes has a redrive policy (a DLQ).",
    MANDATORY,
    "Add a redrive_policy (inline or aws.sqs.RedrivePolicy) pointing at a DLQ.",
    enforces=(
        "Without a redrive policy a message that keeps failing is received again until "
        "its retention period expires and is then deleted (SQS Developer Guide, 'Using "
        "dead-letter queues')."
    ),
    defaults="No redrive_policy: no DLQ, SQS's default.",
    boundaries=(
        Boundary(
            (
                "Queues consumed by something other than a Lambda event source mapping (ECS "
                "workers, EventBridge Pipes)."
            ),
            "test_source_dlq_rule_judges_only_queues_a_lambda_mapping_consumes",
        ),
        Boundary(
            "A queue outside the stack (its redrive policy is set where it is declared).",
            "test_source_dlq_rule_judges_only_queues_of_the_stack",
        ),
    ),
)
def lambda_source_has_dlq(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[str] = set()
    for m in graph.mappings:
        queue = m.queue
        if not (m.is_sqs and isinstance(queue, Node)) or queue.urn in seen:
            continue
        seen.add(queue.urn)
        if queue.urn in graph.redrives or queue.urn in graph.declared_dlqs:
            # Has a redrive policy, or is itself a DLQ (a DLQ needs no DLQ) on evidence: the
            # target of a redrive or of another service's dead-lettering, or a redrive-allow
            # policy. A name ("dlq-alerts-inbox") is no evidence: a consumed queue named so is
            # as much a source as any other.
            continue
        findings.append(
            (
                queue.urn,
                f"queue {queue.label} is consumed by Lambda through event source mapping "
                f"{m.node.label} but has no redrive policy: a poison message is retried until "
                f"its retention expires and is then lost. Fix: give {queue.label} a "
                f"redrive_policy (deadLetterTargetArn = a DLQ of the same type, "
                f"maxReceiveCount {limits.DEFAULT_MIN_MAX_RECEIVE_COUNT}.."
                f"{limits.DEFAULT_MAX_MAX_RECEIVE_COUNT}) inline or as an "
                f"aws.sqs.RedrivePolicy. If {queue.label} is itself the DLQ of a queue in "
                f"another stack, say so with a redrive_allow_policy naming that source "
                f"(redrivePermission byQueue, sourceQueueArns); its name is no evidence.",
            )
        )
    return findings


def _dlq_pairs(graph: Graph) -> list[tuple[Node, Node]]:
    """(source queue, DLQ) for every redrive whose DLQ is declared in the stack."""
    return [
        (r.source, r.dlq)
        for r in graph.redrives.values()
        if isinstance(r.dlq, Node) and r.source.type == QUEUE
    ]


def _short_dlqs(graph: Graph) -> list[tuple[Node, Node, Any, Any]]:
    """(source, DLQ, source retention, DLQ retention) of every standard pair whose known DLQ
    retention is not longer than its source's. Standard pairs only: a standard queue's
    message keeps its original enqueue timestamp when it moves to the DLQ, so the DLQ's
    retention counts from the original send; a FIFO queue's message gets a new enqueue
    timestamp in its DLQ (SQS Developer Guide, "Setting up dead-letter queue retention"), so
    a FIFO pair at 14 d / 14 d is correct."""
    out = []
    for source, dlq in _dlq_pairs(graph):
        if graph.is_fifo(source) is not False or graph.is_fifo(dlq) is not False:
            continue  # FIFO (or undecided): the type rule covers a mixed pair
        src_ret, dlq_ret = retention_s(source), retention_s(dlq)
        if not (is_unknown(src_ret) or is_unknown(dlq_ret) or dlq_ret > src_ret):
            out.append((source, dlq, src_ret, dlq_ret))
    return out


def remedy_dlq_retention(graph: Graph, config: Mapping[str, Any]) -> list[GraphFix]:
    """The maximum retention for each DLQ too short for a source below the maximum; a source
    already at the maximum needs a decision (a shorter source retention), not a remediation."""
    short = {
        dlq.urn for _, dlq, src_ret, _ in _short_dlqs(graph) if src_ret < limits.SQS_MAX_RETENTION_S
    }
    return [
        GraphFix(urn, "messageRetentionSeconds", limits.SQS_MAX_RETENTION_S)
        for urn in sorted(short)
    ]


@stack_rule(
    "sqs-dlq-retention-exceeds-source",
    "A standard dead-letter queue retains messages longer than each of its standard source "
    "queues (FIFO DLQs reset the enqueue time, so FIFO pairs are exempt).",
    MANDATORY,
    "Set the DLQ's message_retention_seconds above the source's, or shorten the source's.",
    enforces=(
        "A standard queue's message keeps its original enqueue timestamp in the DLQ, so "
        "the DLQ's retention counts from the original send (SQS Developer Guide, 'Using "
        "dead-letter queues': set the DLQ's retention longer than the source's)."
    ),
    remedies=_RETENTION_REMEDIES,
    graph_remedy=remedy_dlq_retention,
    defaults=(
        "No message_retention_seconds: 345,600 s (4 days), SQS's default, compared like any value."
    ),
    boundaries=(
        Boundary(
            "FIFO pairs: a FIFO queue's message gets a new enqueue timestamp in its DLQ.",
            "test_retention_rule_exempts_fifo_pairs",
        ),
        Boundary(
            "A DLQ outside the stack (its retention is unknown here).",
            "test_retention_rule_needs_the_dlq_in_the_stack",
        ),
    ),
)
def dlq_retention_exceeds_source(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for source, dlq, src_ret, dlq_ret in _short_dlqs(graph):
        src_note = " (AWS default)" if source.get("messageRetentionSeconds") is None else ""
        dlq_note = " (AWS default)" if dlq.get("messageRetentionSeconds") is None else ""
        if src_ret < limits.SQS_MAX_RETENTION_S:
            fix = (
                f"set message_retention_seconds on {dlq.label} above {fmt(src_ret)} (up to "
                f"{limits.SQS_MAX_RETENTION_S}, the 14-day maximum) or shorten the source's "
                f"below {fmt(dlq_ret)} s"
            )
        else:  # the source already keeps the maximum: only a shorter source retention works
            fix = (
                f"shorten the message_retention_seconds of {source.label} below {fmt(dlq_ret)} "
                f"(the DLQ cannot keep more than {limits.SQS_MAX_RETENTION_S} s, the 14-day "
                f"maximum)"
            )
        findings.append(
            (
                dlq.urn,
                f"DLQ {dlq.label} retention {fmt(dlq_ret)} s{dlq_note} is not longer than the "
                f"retention {fmt(src_ret)} s{src_note} of its source queue {source.label}: a "
                f"standard queue's message keeps its original enqueue time in the DLQ, so it "
                f"expires there before anyone can inspect or redrive it. Fix: {fix}.",
            )
        )
    return findings


@stack_rule(
    "sqs-dlq-type-matches-source",
    "The DLQ of a FIFO queue is FIFO, the DLQ of a standard queue is standard.",
    MANDATORY,
    "Make the DLQ the same queue type as its source.",
    enforces=(
        "The dead-letter queue of a FIFO queue must be FIFO, of a standard queue standard "
        "(SQS API reference, SetQueueAttributes, RedrivePolicy)."
    ),
    defaults="No fifo_queue: a standard queue (SQS's default), unless the name ends in .fifo.",
    boundaries=(
        Boundary(
            (
                "A source or DLQ whose type is unknown (a name computed in a preview, no "
                "fifo_queue flag)."
            ),
            "test_type_rule_leaves_an_unknown_type_undecided",
        ),
    ),
)
def dlq_type_matches_source(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for r in graph.redrive_holders:
        if r.dlq is None:
            continue
        src_fifo = graph.is_fifo(r.source)  # None for a source outside the stack
        dlq_fifo = graph.is_fifo(r.dlq)
        if src_fifo is None or dlq_fifo is None or src_fifo == dlq_fifo:
            continue
        attach = r.dlq.urn if isinstance(r.dlq, Node) else r.holder.urn
        kind = {True: "FIFO", False: "standard"}
        wanted = "a FIFO queue (fifo_queue=True, name ending in .fifo)" if src_fifo else "standard"
        findings.append(
            (
                attach,
                f"DLQ {r.dlq.label} is a {kind[dlq_fifo]} queue but its source queue "
                f"{r.source.label} is {kind[src_fifo]}: SQS requires the dead-letter queue of a "
                f"FIFO queue to be FIFO and of a standard queue to be standard, and rejects the "
                f"redrive policy. Fix: make {r.dlq.label} {wanted}.",
            )
        )
    return findings


def _allow_policy(graph: Graph, dlq: Node) -> Any:
    """The DLQ's redrive-allow policy document: a separate aws.sqs.RedriveAllowPolicy (which
    sets the same queue attribute) wins over the inline `redrive_allow_policy`; None when
    neither is set (SQS's default, allowAll)."""
    doc = parse_json(dlq.get("redriveAllowPolicy"))
    for rap in graph.of_type(REDRIVE_ALLOW_POLICY):
        if graph.resolve(rap, "queueUrl", rap.get("queueUrl"), (QUEUE,)) is dlq:
            doc = parse_json(rap.get("redriveAllowPolicy"))
    return doc


def _allows(doc: Any, source: Node | ExternalRef) -> bool | None:
    """Whether a redrive-allow policy lets `source` name the queue as its DLQ (None: cannot
    tell, e.g. an ARN unknown in a preview)."""
    if doc is None:
        return True  # no policy: allowAll, SQS's default
    if is_unknown(doc) or not isinstance(doc, dict):
        return None
    permission = doc.get("redrivePermission")
    if is_unknown(permission):
        return None
    if permission == "denyAll":
        return False
    if permission != "byQueue":
        return True  # allowAll (or a value SQS refuses on the DLQ itself: not this rule's)
    arns = doc.get("sourceQueueArns")
    if is_unknown(arns) or (isinstance(arns, list) and any(is_unknown(a) for a in arns)):
        return None
    listed = [a for a in arns if isinstance(a, str)] if isinstance(arns, list) else []
    own = source.ref if isinstance(source, ExternalRef) else source.get("arn")
    if isinstance(own, str) and own.startswith("arn:") and not is_unknown(own):
        return own in listed
    name = source.name if isinstance(source, ExternalRef) else source.get("name")
    url = None if isinstance(source, ExternalRef) else source.get("url")
    if name is None and isinstance(url, str) and not is_unknown(url):
        name = resource_name_from_ref(url)  # a queue outside the stack, known by its URL
    if not isinstance(name, str) or not name or is_unknown(name):
        return None  # the source's ARN and name are unknown (a preview): cannot tell
    where = location_of(source)
    return any(
        resource_name_from_ref(a) == name and located_at(ExternalRef(a), where) for a in listed
    )


@stack_rule(
    "sqs-dlq-allows-redrive-from-source",
    "A dead-letter queue's redrive-allow policy admits each source queue that names it: not "
    "denyAll, and byQueue only with the source among sourceQueueArns.",
    MANDATORY,
    "Add the source queue's ARN to the DLQ's redrive_allow_policy sourceQueueArns (byQueue), "
    "or allow all sources of the account (allowAll, the default).",
    enforces="SQS refuses a source queue's RedrivePolicy naming a DLQ whose RedriveAllowPolicy "
    "is denyAll, or byQueue without that source among sourceQueueArns (SQS API reference, "
    "SetQueueAttributes: RedriveAllowPolicy, redrivePermission and sourceQueueArns).",
    defaults="No redrive_allow_policy: allowAll, SQS's default (any source queue of the account "
    "and region may use the DLQ).",
    boundaries=(
        Boundary(
            "A byQueue list or a source ARN unknown in a preview (an ARN computed from a queue "
            "not created yet): `up` decides.",
            "test_redrive_allow_rule_leaves_unknown_arns_to_up",
        ),
        Boundary(
            "A DLQ outside the stack: its redrive-allow policy is set where it is declared.",
            "test_redrive_allow_rule_judges_only_dlqs_of_the_stack",
        ),
    ),
)
def dlq_allows_redrive_from_source(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for r in graph.redrive_holders:
        dlq = r.dlq
        if not isinstance(dlq, Node):
            continue
        doc = _allow_policy(graph, dlq)
        source = r.source  # a stack queue, or the queue a RedrivePolicy's queue_url names
        if _allows(doc, source) is not False:
            continue
        permission = doc.get("redrivePermission") if isinstance(doc, dict) else None
        why = (
            "denies every source queue (redrivePermission denyAll)"
            if permission == "denyAll"
            else "admits only the queues its sourceQueueArns list (redrivePermission byQueue), "
            f"and {source.label} is not among them"
        )
        findings.append(
            (
                r.holder.urn,
                f"queue {source.label} names {dlq.label} as its dead-letter queue, but the "
                f"redrive-allow policy of {dlq.label} {why}: SQS refuses the redrive policy, "
                f"so the deployment fails (or, on an existing queue, the redrive policy is never "
                f"set and poison messages are retried until they expire). Fix: add the ARN of "
                f"{source.label} to sourceQueueArns of the redrive_allow_policy of {dlq.label}, "
                f"or let every source of the account use it (redrivePermission allowAll).",
            )
        )
    return findings


def remedy_max_receive_count(
    resource_type: str, props: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any] | None:
    """maxReceiveCount moved to the nearest value of the configured range
    (`limits.max_receive_count_in_range`), in a redrive policy whose JSON is known; every other
    key of the document stays as it was."""
    if resource_type not in (QUEUE, REDRIVE_POLICY):
        return None
    raw = props.get("redrivePolicy")
    if not isinstance(raw, str) or is_unknown(raw):
        return None  # unknown in a preview, or a secret: never touched
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    count = as_number(doc.get("maxReceiveCount")) if isinstance(doc, dict) else None
    if not isinstance(count, float):
        return None  # absent or not a number: which count is a decision, not a remediation
    lo = float(config.get("min", limits.DEFAULT_MIN_MAX_RECEIVE_COUNT))
    hi = float(config.get("max", limits.DEFAULT_MAX_MAX_RECEIVE_COUNT))
    fixed = limits.max_receive_count_in_range(count, lo, hi)
    if fixed == count:
        return None
    return {**props, "redrivePolicy": json.dumps({**doc, "maxReceiveCount": fixed})}


@resource_rule(
    "sqs-max-receive-count-in-range",
    "A redrive policy's maxReceiveCount lies in a sane range (default 3..20).",
    MANDATORY,
    "Set maxReceiveCount within the configured range (e.g. 5).",
    {
        "min": number(limits.DEFAULT_MIN_MAX_RECEIVE_COUNT, 1),
        "max": number(limits.DEFAULT_MAX_MAX_RECEIVE_COUNT, 1),
    },
    enforces=(
        "SQS moves a message to the DLQ after maxReceiveCount receives, which a redrive "
        "policy must set (SQS API reference, SetQueueAttributes, RedrivePolicy: "
        "maxReceiveCount); 1 dead-letters on a single transient failure."
    ),
    defaults=(
        "No redrive policy: nothing to judge (sqs-lambda-source-has-dlq demands one); a redrive "
        "policy without maxReceiveCount has no default: SQS refuses it."
    ),
    remedy=remedy_max_receive_count,
    remedies="maxReceiveCount of a known redrive policy moved into the configured range (the "
    "nearest bound, limits.max_receive_count_in_range); an absent count is left alone.",
    boundaries=(
        Boundary(
            (
                "A redrive policy whose JSON is unknown in a preview (built over the DLQ's ARN): "
                "`up` decides."
            ),
            "test_max_receive_count_rule_leaves_an_unknown_redrive_policy_to_up",
        ),
    ),
)
def max_receive_count_in_range(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    """Resource rule: the maxReceiveCount of a queue's or RedrivePolicy's redrive policy."""
    if resource_type not in (QUEUE, REDRIVE_POLICY):
        return []
    lo = float(config.get("min", limits.DEFAULT_MIN_MAX_RECEIVE_COUNT))
    hi = float(config.get("max", limits.DEFAULT_MAX_MAX_RECEIVE_COUNT))
    doc = parse_json(props.get("redrivePolicy"))
    if not isinstance(doc, dict) or not doc:
        return []
    count = as_number(doc.get("maxReceiveCount"))
    if is_unknown(count):
        return []
    where = "queue" if resource_type == QUEUE else "redrive policy"
    if count is None:
        return [
            f"{where} '{name}' sets a redrive policy without a numeric maxReceiveCount. Fix: set "
            f"maxReceiveCount between {fmt(lo)} and {fmt(hi)}."
        ]
    if lo <= count <= hi:
        return []
    why = (
        "so a single transient failure (a throttle, a cold start timeout) dead-letters a healthy "
        "message"
        if count < lo
        else "so a poison message burns retries and Lambda concurrency for hours before it is "
        "isolated"
    )
    return [
        f"{where} '{name}' has maxReceiveCount {fmt(count)}, outside {fmt(lo)}..{fmt(hi)}, {why}. "
        f"Fix: set maxReceiveCount between {fmt(lo)} and {fmt(hi)} (e.g. 5)."
    ]


VISIBLE = "ApproximateNumberOfMessagesVisible"
SENT = "NumberOfMessagesSent"
AGE = "ApproximateAgeOfOldestMessage"
ALARM_METRICS = (VISIBLE, SENT, AGE)
CLOUDWATCH = "cloudwatch.amazonaws.com"


def _fires_at_one(alarm: Node) -> bool | None:
    op = alarm.get("comparisonOperator")
    threshold = as_number(alarm.get("threshold"))
    if is_unknown(op) or is_unknown(threshold):
        return None
    if not isinstance(op, str) or threshold is None:
        return False
    if op == "GreaterThanOrEqualToThreshold":
        return bool(threshold <= 1)
    if op == "GreaterThanThreshold":
        return bool(threshold < 1)
    return False


def _fires_before_expiry(alarm: Node, dlq: Node) -> bool | None:
    """An age-of-oldest-message alarm fires while a message sits in the DLQ when its
    threshold (seconds) lies below the DLQ's retention: the message's age passes it first."""
    op = alarm.get("comparisonOperator")
    threshold = as_number(alarm.get("threshold"))
    retention = retention_s(dlq)
    if is_unknown(op) or is_unknown(threshold) or is_unknown(retention):
        return None
    if op not in ("GreaterThanOrEqualToThreshold", "GreaterThanThreshold") or threshold is None:
        return False
    return bool(threshold < retention)


def _undeliverable_topics(graph: Graph, alarm: Node) -> list[Node] | None:
    """The alarm's action topics when CloudWatch can publish to none of them (each encrypted
    with a KMS key that refuses cloudwatch.amazonaws.com, e.g. the AWS-managed
    `alias/aws/sns`); None when some action may deliver."""
    actions = alarm.get("alarmActions")
    if not isinstance(actions, list) or not actions:
        return None
    deps = graph.dep_nodes(alarm, "alarmActions", (TOPIC,))
    refused = [t for t in deps if service_may_use_topic_key(graph, t, CLOUDWATCH) is False]
    topics: list[Node] = []
    for action in actions:
        topic: Node | None = None
        if isinstance(action, str) and not is_unknown(action):
            if action.split(":")[2:3] != ["sns"]:
                return None  # Auto Scaling, SSM, Lambda...: not an SNS delivery
            topic = next((t for t in deps if t.get("arn") == action), None) or graph.topic(action)
        elif len(deps) == 1 or (deps and len(refused) == len(deps)):
            topic = deps[0]
        if topic is None or service_may_use_topic_key(graph, topic, CLOUDWATCH) is not False:
            return None
        topics.append(topic)
    return topics


def _actions_problem(alarm: Node, graph: Graph | None = None) -> str | None:
    """Why the alarm notifies nobody, or None when it has an enabled action (or may have)."""
    enabled = alarm.get("actionsEnabled")
    if enabled is False or (isinstance(enabled, str) and enabled.lower() == "false"):
        return "has its actions disabled (actions_enabled=False)"
    actions = alarm.get("alarmActions")
    if is_unknown(actions):
        return None
    if not (isinstance(actions, list) and len(actions) > 0):
        return "has no alarm action"
    dead = _undeliverable_topics(graph, alarm) if graph is not None else None
    if dead:
        names = ", ".join(t.label for t in dead)
        return (
            f"notifies only topic {names}, whose KMS key does not let cloudwatch.amazonaws.com "
            f"use it (the AWS-managed alias/aws/sns key never does; a customer-managed key "
            f"needs a key policy statement for it), so the notification is never delivered"
        )
    return None


COMPOSITE_ALARM = "aws:cloudwatch/compositeAlarm:CompositeAlarm"


def _composite_notifies(graph: Graph, alarm: Node) -> bool:
    """A composite alarm with an enabled action whose rule names this alarm notifies for it."""
    refs = {r for r in (alarm.get("name"), alarm.get("arn")) if isinstance(r, str) and r}
    for composite in graph.of_type(COMPOSITE_ALARM):
        if _actions_problem(composite, graph) is not None:
            continue
        rule = composite.get("alarmRule")
        if alarm in graph.dep_nodes(composite, "alarmRule", (alarm.type,)):
            return True
        named = [r for r in refs if not is_unknown(r)]
        if (
            isinstance(rule, str)
            and not is_unknown(rule)
            and any(f'"{r}"' in rule or f"({r})" in rule for r in named)
        ):
            return True
    return False


@stack_rule(
    "sqs-dlq-has-alarm",
    "Every DLQ has a deliverable CloudWatch alarm (namespace AWS/SQS, same region) that fires "
    "while a message sits in it: ApproximateNumberOfMessagesVisible >= 1, "
    "ApproximateAgeOfOldestMessage below the DLQ's retention, or NumberOfMessagesSent >= 1 for "
    "DLQs fed by API sends only (redriven messages are not counted as sent).",
    MANDATORY,
    "Add a MetricAlarm on the DLQ: threshold 1, GreaterThanOrEqualToThreshold, "
    "alarm_actions [topic arn].",
    {"metricNames": strings(ALARM_METRICS)},
    enforces=(
        "SQS keeps a dead-lettered message only until its retention expires and notifies "
        "nobody (SQS Developer Guide, 'Using dead-letter queues'; CloudWatch metrics for "
        "SQS: NumberOfMessagesSent counts API sends only)."
    ),
    defaults="No alarm: nothing watches the DLQ.",
    boundaries=(
        Boundary(
            (
                "Alarms declared in another stack: a DLQ alarmed elsewhere is waived with its "
                "reason."
            ),
            "test_dlq_alarm_rule_sees_only_alarms_of_the_stack",
        ),
        Boundary(
            "Whether the alarm's SNS topic has a subscriber.",
            "test_dlq_alarm_rule_does_not_check_the_topics_subscribers",
        ),
    ),
)
def dlq_has_alarm(graph: Graph, config: Mapping[str, Any]) -> list[Finding]:
    metric_names = tuple(config.get("metricNames", ALARM_METRICS))
    findings: list[Finding] = []
    users: dict[str, list[str]] = {
        urn: [r.source.label for r in redrives] for urn, redrives in graph.dlq_sources.items()
    }
    for urn, others in graph.other_dlq_users.items():
        users.setdefault(urn, []).extend(others)
    for dlq_urn, sources_of in sorted(users.items()):
        dlq = graph.by_urn[dlq_urn]
        redriven = dlq_urn in graph.dlq_sources
        watching: list[tuple[Node, str]] = []  # alarms on the DLQ and why they fall short
        if not any(
            _alarm_covers(graph, alarm, metric, dlq, metric_names, redriven, watching)
            for alarm in graph.alarms_for_queue(dlq)
            for metric in graph.alarm_metrics(alarm)
        ):
            findings.append(_missing_alarm(dlq, sources_of, watching, metric_names))
    return findings


def _alarm_covers(
    graph: Graph,
    alarm: Node,
    metric: Mapping[str, Any],
    dlq: Node,
    metric_names: tuple[str, ...],
    redriven: bool,
    watching: list[tuple[Node, str]],
) -> bool:
    """Whether this metric of this alarm watches the DLQ usefully; else why not (in
    `watching`, when the alarm is on the DLQ at all)."""
    if not graph.alarm_watches_queue(alarm, metric, dlq):
        return False
    namespace = metric.get("namespace")
    if isinstance(namespace, str) and not is_unknown(namespace) and namespace != "AWS/SQS":
        watching.append((alarm, f"watches namespace {namespace}, not AWS/SQS"))
        return False
    name = metric.get("metricName")
    if is_unknown(name):
        return True
    if name not in metric_names:
        watching.append((alarm, f"watches {name}"))
        return False
    if name == SENT and redriven:
        # SQS counts NumberOfMessagesSent for SendMessage calls only; a message moved by a
        # redrive policy never increments it (SQS Developer Guide, available CloudWatch
        # metrics), so it stays 0 for a DLQ fed by a redrive.
        watching.append(
            (alarm, f"watches {SENT}, which messages moved there by a redrive never increment")
        )
        return False
    fires = _fires_before_expiry(alarm, dlq) if name == AGE else _fires_at_one(alarm)
    if fires is False:
        what = "before a message expires" if name == AGE else "at 1 message"
        watching.append(
            (
                alarm,
                f"does not fire {what} ({alarm.get('comparisonOperator')} "
                f"{alarm.get('threshold')})",
            )
        )
        return False
    problem = _actions_problem(alarm, graph)
    if problem is not None and not _composite_notifies(graph, alarm):
        watching.append((alarm, problem))
        return False
    return True


def _missing_alarm(
    dlq: Node,
    sources_of: list[str],
    watching: list[tuple[Node, str]],
    metric_names: tuple[str, ...],
) -> Finding:
    sources = ", ".join(sorted(set(sources_of)))
    detail = (
        "; existing alarms fall short: " + "; ".join(f"{a.label} {why}" for a, why in watching)
        if watching
        else ""
    )
    return (
        dlq.urn,
        f"DLQ {dlq.label} (dead-letter queue of {sources}) has no deliverable CloudWatch alarm "
        f"(namespace AWS/SQS, in its region and account) on {' or '.join(metric_names)} that "
        f"fires while a message sits in it{detail}. A message in a DLQ is a failed business "
        f"event; unwatched, it expires silently. Fix: add an aws.cloudwatch.MetricAlarm with "
        f"namespace AWS/SQS, metric_name ApproximateNumberOfMessagesVisible, dimensions "
        f"{{'QueueName': <dlq>.name}}, comparison_operator GreaterThanOrEqualToThreshold, "
        f"threshold 1, and alarm_actions [<sns topic arn>] (a topic CloudWatch can publish to: "
        f"unencrypted or with a customer-managed key that allows cloudwatch.amazonaws.com).",
    )
