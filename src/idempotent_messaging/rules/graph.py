"""The resource graph the stack policies reason over, and how resources are linked.

Links (mapping -> queue -> function, queue -> DLQ, alarm -> queue, function env -> table) are
resolved the way the engine lets us: first through `property_dependencies` (during a preview
the ARN of a resource that does not exist yet is unknown, but the dependency is known), then by
value: a literal or known ARN, URL or name, which also covers resources that already exist
outside the stack. A reference that names nothing in the stack becomes an `ExternalRef`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from operator import itemgetter
from typing import Any

from .values import UNKNOWN, is_unknown, plain

QUEUE = "aws:sqs/queue:Queue"
REDRIVE_POLICY = "aws:sqs/redrivePolicy:RedrivePolicy"
REDRIVE_ALLOW_POLICY = "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
FUNCTION = "aws:lambda/function:Function"
ALIAS = "aws:lambda/alias:Alias"
ESM = "aws:lambda/eventSourceMapping:EventSourceMapping"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
TABLE = "aws:dynamodb/table:Table"
SCHEDULE = "aws:scheduler/schedule:Schedule"
TOPIC = "aws:sns/topic:Topic"
ROLE = "aws:iam/role:Role"
STACK_REFERENCE = "pulumi:pulumi:StackReference"
INVOKE_CONFIG = "aws:lambda/functionEventInvokeConfig:FunctionEventInvokeConfig"
SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
EVENT_TARGET = "aws:cloudwatch/eventTarget:EventTarget"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
BUCKET_NOTIFICATION = "aws:s3/bucketNotification:BucketNotification"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
_QUEUE_URL = re.compile(r"^https?://sqs[.-]([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/(\d+)/")


@dataclass
class Node:
    urn: str
    type: str
    name: str  # logical name
    props: dict[str, Any]
    prop_deps: dict[str, list[str]] = field(default_factory=dict)
    deps: list[str] = field(default_factory=list)
    parent: str | None = None
    # The resource's `protect` option as the engine hands it to a policy (None: not passed).
    protect: bool | None = None

    def get(self, *path: str | int, default: Any = None) -> Any:
        """props[path...] or `default` when absent (None counts as absent); may be UNKNOWN."""
        value: Any = self.props
        for key in path:
            if is_unknown(value):
                return UNKNOWN
            if isinstance(key, int):
                if not isinstance(value, list) or key >= len(value):
                    return default
                value = value[key]
            else:
                if not isinstance(value, dict) or value.get(key) is None:
                    return default
                value = value[key]
        return value

    @property
    def label(self) -> str:
        return f"'{self.name}'"


@dataclass(frozen=True)
class ExternalRef:
    """A resource referenced by literal ARN/URL/name that the stack does not declare."""

    ref: str

    @property
    def name(self) -> str:
        return resource_name_from_ref(self.ref)

    @property
    def label(self) -> str:
        return f"'{self.ref}' (not declared in this stack)"


def protect_of(resource: Any) -> bool | None:
    """The `protect` option pulumi-policy hands a policy (`PolicyResource.opts.protect` for a
    stack policy, `ResourceValidationArgs.opts.protect` for a resource policy); None when the
    engine passes no resource options."""
    protect = getattr(getattr(resource, "opts", None), "protect", None)
    return protect if isinstance(protect, bool) else None


def node_from_policy_resource(resource: Any) -> Node:
    """A Node from pulumi-policy's PolicyResource (outputs, dependencies and `protect`)."""
    return Node(
        urn=resource.urn,
        type=resource.resource_type,
        name=resource.name,
        props=plain(resource.props),
        prop_deps={k: [d.urn for d in v] for k, v in resource.property_dependencies.items()},
        deps=[d.urn for d in resource.dependencies],
        parent=resource.parent.urn if resource.parent is not None else None,
        protect=protect_of(resource),
    )


def resource_name_from_ref(ref: str) -> str:
    """The resource name inside an ARN or URL (queue, function, table, topic) or the ref itself."""
    if ref.startswith("https://") or ref.startswith("http://"):
        return ref.rstrip("/").rsplit("/", 1)[-1]
    if ref.startswith("arn:"):
        parts = ref.split(":", 6)
        if len(parts) >= 7 and parts[2] == "lambda" and parts[5] == "function":
            return parts[6].split(":")[0]
        resource = parts[5] if len(parts) >= 6 else ref
        if len(parts) == 7 and "/" not in resource:
            resource = f"{resource}:{parts[6]}"
        if parts[2] == "dynamodb" and resource.startswith("table/"):
            return resource.split("/")[1]
        return resource.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    if ":function:" in ref:  # partial Lambda ARN: 123456789012:function:name[:qualifier]
        return ref.split(":function:", 1)[1].split(":")[0]
    return ref


Location = tuple[str | None, str | None]  # (region, account); None: not known


def location_of_ref(ref: Any) -> Location:
    """The region and account an ARN or SQS URL names ((None, None) for a bare name)."""
    if not isinstance(ref, str) or is_unknown(ref):
        return None, None
    if ref.startswith("arn:"):
        parts = ref.split(":", 5)
        if len(parts) >= 5:
            return parts[3] or None, parts[4] or None
    m = _QUEUE_URL.match(ref)
    if m:
        return m.group(1), m.group(2)
    return None, None


def location_of(node: Node | ExternalRef) -> Location:
    """Where a resource lives: its own `region` argument (pulumi-aws v7) wins over the region
    of its ARN or URL, which the provider derives from it."""
    if isinstance(node, ExternalRef):
        return location_of_ref(node.ref)
    region: str | None = None
    account: str | None = None
    for key in ("arn", "url"):
        r, a = location_of_ref(node.get(key))
        region, account = region or r, account or a
    own = node.get("region")
    if isinstance(own, str) and own and not is_unknown(own):
        region = own
    return region, account


def located_at(node: Node | ExternalRef, where: Location) -> bool:
    """False only when a known region or account of `node` differs from `where`'s."""
    here = location_of(node)
    return all(a is None or b is None or a == b for a, b in zip(here, where, strict=True))


def same_location(a: Node | ExternalRef, b: Node | ExternalRef) -> bool:
    return located_at(a, location_of(b))


def function_name_from_ref(ref: str) -> str:
    """Lambda accepts a name, `name:qualifier`, a full or a partial ARN."""
    if ref.startswith("arn:") or ":function:" in ref:
        return resource_name_from_ref(ref)
    return ref.split(":")[0]


def parse_json(value: Any) -> Any:
    """A JSON document property (policy, redrive policy) as data; UNKNOWN stays UNKNOWN."""
    if is_unknown(value):
        return UNKNOWN
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return plain(json.loads(value))
        except ValueError:
            return None
    if isinstance(value, dict):
        return value
    return None


def as_number(value: Any) -> float | Any | None:
    """A number from a number or numeric string; UNKNOWN stays UNKNOWN; else None."""
    if is_unknown(value):
        return UNKNOWN
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def fmt(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else f"{n:g}"


@dataclass
class Redrive:
    """A queue's redrive policy, inline or held by a separate RedrivePolicy resource."""

    source: Node
    holder: Node  # the queue itself or the aws:sqs/redrivePolicy:RedrivePolicy resource
    dlq: Node | ExternalRef | None  # None: unknown during preview and no dependency to go by
    max_receive_count: Any  # float, UNKNOWN or None (absent/invalid)
    document: Any  # parsed JSON, UNKNOWN or None


@dataclass
class Mapping_:
    node: Node
    is_sqs: bool | None  # None: cannot tell (unknown source, no dependency)
    queue: Node | ExternalRef | None
    function: Node | ExternalRef | None


class Graph:
    """The stack's resources with lookups by URN, type and value.

    The lookup indexes are built lazily, once per graph, so that linking N consumers costs
    O(N) rather than a scan of every resource of a type per reference. The graph is treated
    as immutable after construction (the indexes are never invalidated).
    """

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes: list[Node] = list(nodes)
        self.by_urn: dict[str, Node] = {n.urn: n for n in self.nodes}
        # (type, prop) -> string value -> (position, node) of the nodes of that type holding it.
        self._value_indexes: dict[tuple[str, str], dict[str, list[tuple[int, Node]]]] = {}

    @classmethod
    def from_policy_resources(cls, resources: Iterable[Any]) -> Graph:
        return cls(node_from_policy_resource(r) for r in resources)

    @cached_property
    def _by_type(self) -> dict[str, list[tuple[int, Node]]]:
        """Type -> (position in `nodes`, node), in graph order: positions keep a multi-type
        lookup in the order a scan of `nodes` would see."""
        out: dict[str, list[tuple[int, Node]]] = {}
        for pos, n in enumerate(self.nodes):
            out.setdefault(n.type, []).append((pos, n))
        return out

    def _positioned(self, types: tuple[str, ...]) -> list[tuple[int, Node]]:
        unique = tuple(dict.fromkeys(types))
        if len(unique) == 1:
            return self._by_type.get(unique[0], [])
        return sorted(
            chain.from_iterable(self._by_type.get(t, []) for t in unique), key=itemgetter(0)
        )

    def of_type(self, *types: str) -> list[Node]:
        return [n for _, n in self._positioned(types)]

    def dep_nodes(self, node: Node, prop: str, types: tuple[str, ...]) -> list[Node]:
        out: list[Node] = []
        for urn in node.prop_deps.get(prop, []):
            dep = self.by_urn.get(urn)
            if dep is not None and dep.type in types and dep is not node and dep not in out:
                out.append(dep)
        return out

    # --- matching by value -------------------------------------------------------------------

    def _value_index(self, type_: str, prop: str) -> dict[str, list[tuple[int, Node]]]:
        index = self._value_indexes.get((type_, prop))
        if index is None:
            index = {}
            for pos, n in self._by_type.get(type_, []):
                value = n.get(prop)
                # Only strings can equal a reference (a str); holders stay in graph order.
                if isinstance(value, str):
                    index.setdefault(value, []).append((pos, n))
            self._value_indexes[(type_, prop)] = index
        return index

    def _hits(
        self, types: tuple[str, ...], props: tuple[str, ...], value: str, ref: str | None = None
    ) -> list[tuple[int, Node]]:
        """(position, node) of the first node of each type whose any of `props` is `value`
        and that can live where `ref` (an ARN or URL) points: same region and account."""
        where = location_of_ref(ref if ref is not None else value)
        out = []
        for t in dict.fromkeys(types):
            for prop in props:
                for hit in self._value_index(t, prop).get(value, []):
                    if located_at(hit[1], where):
                        out.append(hit)
                        break
        return out

    def _match(self, types: tuple[str, ...], ref: str, name_prop: str = "name") -> Node | None:
        """The first node of `types` (in graph order) holding `ref` as ARN, URL or id, else the
        first one named as `ref` names its resource, in the region and account `ref` names."""
        hits = self._hits(types, ("arn", "url", "id"), ref)
        if not hits:
            hits = self._hits(types, (name_prop,), resource_name_from_ref(ref), ref)
        return min(hits, key=itemgetter(0))[1] if hits else None

    def resolve(
        self,
        node: Node,
        prop: str,
        value: Any,
        types: tuple[str, ...],
        name_of: Callable[[str], str] = resource_name_from_ref,
    ) -> Node | ExternalRef | None:
        """The resource of `types` that `node.prop` (value `value`) refers to.

        Property dependencies first; a known value picks among several candidates and covers
        literal references. None when the value is unknown and nothing links it.
        """
        candidates = self.dep_nodes(node, prop, types)
        if len(candidates) == 1:
            return candidates[0]
        if isinstance(value, str) and value and not is_unknown(value):
            by_value = [c for c in candidates if value in (c.get("arn"), c.get("url"), c.get("id"))]
            if by_value:
                return by_value[0]
            wanted = name_of(value)
            if not candidates:
                # The first resource of `types` that holds the value or bears the name.
                hits = self._hits(types, ("arn", "url", "id"), value)
                hits += self._hits(types, ("name",), wanted, value)
                return min(hits, key=itemgetter(0))[1] if hits else ExternalRef(value)
            for n in candidates:
                if value in (n.get("arn"), n.get("url"), n.get("id")) or n.get("name") == wanted:
                    return n
            return ExternalRef(value)
        return None

    # --- queues and redrive ------------------------------------------------------------------

    def queue_name(self, q: Node | ExternalRef) -> str | None:
        if isinstance(q, ExternalRef):
            return q.name
        name = q.get("name")
        if isinstance(name, str) and not is_unknown(name):
            return name
        for key in ("arn", "url"):
            ref = q.get(key)
            if isinstance(ref, str) and not is_unknown(ref):
                return resource_name_from_ref(ref)
        return None

    def is_fifo(self, q: Node | ExternalRef) -> bool | None:
        """FIFO by `fifoQueue`, or by the `.fifo` name suffix AWS requires; None if unknown."""
        if isinstance(q, Node):
            flag = q.get("fifoQueue")
            if flag is True or (isinstance(flag, str) and flag.lower() == "true"):
                return True
            if is_unknown(flag):
                return None
        name = self.queue_name(q)
        if name is None:
            return None
        return name.endswith(".fifo")

    def _parse_redrive(self, source: Node, holder: Node, value: Any) -> Redrive | None:
        doc = parse_json(value)
        if doc is None:
            return None
        if is_unknown(doc):
            dlqs = [d for d in self.dep_nodes(holder, "redrivePolicy", (QUEUE,)) if d is not source]
            return Redrive(source, holder, dlqs[0] if len(dlqs) == 1 else None, UNKNOWN, UNKNOWN)
        if not isinstance(doc, dict):
            return None
        target = doc.get("deadLetterTargetArn")
        dlq: Node | ExternalRef | None
        if target is None and not doc:
            return None
        dlqs = [d for d in self.dep_nodes(holder, "redrivePolicy", (QUEUE,)) if d is not source]
        if len(dlqs) == 1:
            dlq = dlqs[0]
        elif isinstance(target, str) and target and not is_unknown(target):
            dlq = self._match((QUEUE,), target) or ExternalRef(target)
        else:
            dlq = None
        return Redrive(source, holder, dlq, as_number(doc.get("maxReceiveCount")), doc)

    @cached_property
    def redrives(self) -> dict[str, Redrive]:
        """Source queue URN -> its redrive (a separate RedrivePolicy resource wins)."""
        out: dict[str, Redrive] = {}
        for q in self.of_type(QUEUE):
            r = self._parse_redrive(q, q, q.get("redrivePolicy"))
            if r is not None:
                out[q.urn] = r
        for rp in self.of_type(REDRIVE_POLICY):
            source = self.resolve(rp, "queueUrl", rp.get("queueUrl"), (QUEUE,))
            if isinstance(source, Node):
                r = self._parse_redrive(source, rp, rp.get("redrivePolicy"))
                if r is not None:
                    out[source.urn] = r
        return out

    @cached_property
    def redrive_holders(self) -> list[Redrive]:
        """Every redrive policy, also those on queues that are not in the stack."""
        out = list(self.redrives.values())
        for rp in self.of_type(REDRIVE_POLICY):
            source = self.resolve(rp, "queueUrl", rp.get("queueUrl"), (QUEUE,))
            if not isinstance(source, Node):
                # A queue outside the stack: known by its URL (or ARN) at most, which still
                # tells its name and so whether it is FIFO.
                ref = source.ref if isinstance(source, ExternalRef) else None
                external = Node(
                    rp.urn,
                    QUEUE,
                    resource_name_from_ref(ref) if ref else rp.name,
                    {"arn" if ref and ref.startswith("arn:") else "url": ref} if ref else {},
                )
                r = self._parse_redrive(external, rp, rp.get("redrivePolicy"))
                if r is not None:
                    out.append(r)
        return out

    @cached_property
    def dlq_sources(self) -> dict[str, list[Redrive]]:
        """DLQ URN (queues in the stack) -> the redrives that target it (from any source)."""
        out: dict[str, list[Redrive]] = {}
        for r in self.redrive_holders:
            if isinstance(r.dlq, Node):
                out.setdefault(r.dlq.urn, []).append(r)
        return out

    def _queue_target(
        self,
        node: Node,
        prop: str,
        value: Any,
        sibling: Any = None,
        sibling_elsewhere: bool = False,
    ) -> Node | None:
        """The stack queue a nested ARN under `node.prop` names (None: not a queue of the stack).

        A known value decides (an ARN of another service, e.g. an SNS topic, names no queue).
        An unknown one goes by the property dependencies, which are per top-level property: a
        `sibling` ARN under the same property (a schedule's target, an on-success destination)
        may be the queue instead. A known sibling is dropped from the candidates; an unknown one
        leaves the link undecided unless `sibling_elsewhere` and another resource the sibling
        can name (not a role or stack reference) is among the dependencies.
        """
        candidates = self.dep_nodes(node, prop, (QUEUE,))
        if isinstance(value, str) and not is_unknown(value):
            if value.startswith("arn:") and value.split(":")[2:3] != ["sqs"]:
                return None
            by_value = [c for c in candidates if value in (c.get("arn"), c.get("url"))]
            return by_value[0] if by_value else self._match((QUEUE,), value)
        if not is_unknown(value):
            return None
        if isinstance(sibling, str):
            candidates = [c for c in candidates if sibling not in (c.get("arn"), c.get("url"))]
        elif is_unknown(sibling):
            others = [
                u
                for u in node.prop_deps.get(prop, [])
                if u in self.by_urn and self.by_urn[u].type not in (QUEUE, ROLE, STACK_REFERENCE)
            ]
            if not (sibling_elsewhere and others):
                return None
        return candidates[0] if len(candidates) == 1 else None

    def queue_target(self, node: Node, prop: str, value: Any) -> Node | None:
        """The stack queue a nested ARN under `node.prop` names (see `_queue_target`)."""
        return self._queue_target(node, prop, value)

    @cached_property
    def other_dlq_users(self) -> dict[str, list[str]]:
        """DLQ URN -> who dead-letters into it other than an SQS redrive.

        Scheduler targets, EventBridge rule targets (`dead_letter_config.arn`), asynchronous
        Lambda invocations (function dead-letter config and event-invoke-config on-failure
        destinations), SNS subscriptions' redrive policies and stream event source mappings'
        on-failure destinations. Only the alarm rule and the
        "a DLQ needs no DLQ" exemption use these: retention and type compare with a source queue.
        """
        found: list[tuple[Node | None, str]] = []
        for s in self.of_type(SCHEDULE):
            if s.get("target", "deadLetterConfig") is None:
                continue  # the target itself may be a queue: never take it for the DLQ
            found.append(
                (
                    self._queue_target(
                        s,
                        "target",
                        s.get("target", "deadLetterConfig", "arn"),
                        sibling=s.get("target", "arn"),
                        sibling_elsewhere=True,
                    ),
                    f"schedule {s.label}",
                )
            )
        for t in self.of_type(EVENT_TARGET):
            # EventBridge sends an event it could not deliver after its retries to the target's
            # DLQ (EventBridge User Guide, "Using dead-letter queues to process undelivered
            # events"); the target's own `arn` sits under another property.
            if t.get("deadLetterConfig") is not None:
                found.append(
                    (
                        self._queue_target(t, "deadLetterConfig", t.get("deadLetterConfig", "arn")),
                        f"EventBridge target {t.label}",
                    )
                )
        for f in self.of_type(FUNCTION):
            dlc = f.get("deadLetterConfig")
            if dlc is not None:
                target = f.get("deadLetterConfig", "targetArn")
                found.append(
                    (
                        self._queue_target(f, "deadLetterConfig", target),
                        f"function {f.label} (async invocations)",
                    )
                )
        for c in self.of_type(INVOKE_CONFIG):
            if c.get("destinationConfig", "onFailure") is not None:
                found.append(
                    (
                        self._queue_target(
                            c,
                            "destinationConfig",
                            c.get("destinationConfig", "onFailure", "destination"),
                            sibling=c.get("destinationConfig", "onSuccess", "destination"),
                        ),
                        f"event invoke config {c.label} (on-failure destination)",
                    )
                )
        for sub in self.of_type(SUBSCRIPTION):
            doc = parse_json(sub.get("redrivePolicy"))
            if doc is None:
                continue
            target = doc.get("deadLetterTargetArn") if isinstance(doc, dict) else UNKNOWN
            found.append(
                (
                    self._queue_target(sub, "redrivePolicy", target),
                    f"subscription {sub.label}",
                )
            )
        sqs_mappings = {m.node.urn for m in self.mappings if m.is_sqs is not False}
        for esm in self.of_type(ESM):
            # AWS rejects an on-failure destination on an SQS mapping (the sqs-esm-config-valid
            # rule reports it); the queue it names receives nothing, so it is no DLQ.
            if esm.urn in sqs_mappings:
                continue
            if esm.get("destinationConfig", "onFailure") is not None:
                found.append(
                    (
                        self._queue_target(
                            esm,
                            "destinationConfig",
                            esm.get("destinationConfig", "onFailure", "destinationArn"),
                        ),
                        f"event source mapping {esm.label} (on-failure destination)",
                    )
                )
        out: dict[str, list[str]] = {}
        for queue, who in found:
            if queue is not None:
                out.setdefault(queue.urn, []).append(who)
        return out

    @cached_property
    def declared_dlqs(self) -> set[str]:
        """Queues that are DLQs: targets of a redrive or of another service's dead-lettering,
        or allowing redrive from named sources."""
        out = set(self.dlq_sources) | set(self.other_dlq_users)
        for q in self.of_type(QUEUE):
            if _allows_sources(parse_json(q.get("redriveAllowPolicy"))):
                out.add(q.urn)
        for rap in self.of_type(REDRIVE_ALLOW_POLICY):
            target = self.resolve(rap, "queueUrl", rap.get("queueUrl"), (QUEUE,))
            if isinstance(target, Node) and _allows_sources(
                parse_json(rap.get("redriveAllowPolicy"))
            ):
                out.add(target.urn)
        return out

    # --- functions and mappings --------------------------------------------------------------

    def resolve_function(self, node: Node, prop: str) -> Node | ExternalRef | None:
        value = node.get(prop)
        target = self.resolve(node, prop, value, (FUNCTION, ALIAS), name_of=function_name_from_ref)
        if isinstance(target, Node) and target.type == ALIAS:
            return self.resolve(target, "functionName", target.get("functionName"), (FUNCTION,))
        if isinstance(target, ExternalRef):
            fn = self._match((FUNCTION,), function_name_from_ref(target.ref))
            return fn or target
        return target

    @cached_property
    def mappings(self) -> list[Mapping_]:
        out: list[Mapping_] = []
        for esm in self.of_type(ESM):
            value = esm.get("eventSourceArn")
            deps = [
                self.by_urn[u]
                for u in esm.prop_deps.get("eventSourceArn", [])
                if u in self.by_urn and self.by_urn[u].type != STACK_REFERENCE
            ]
            queues = [d for d in deps if d.type == QUEUE]
            is_sqs: bool | None
            queue: Node | ExternalRef | None = None
            if queues:
                is_sqs, queue = True, queues[0]
                if len(queues) > 1 and isinstance(value, str) and not is_unknown(value):
                    queue = self._match((QUEUE,), value) or queues[0]
            elif isinstance(value, str) and value and not is_unknown(value):
                is_sqs = value.startswith("arn:") and value.split(":")[2:3] == ["sqs"]
                if is_sqs:
                    queue = self._match((QUEUE,), value) or ExternalRef(value)
            elif deps:
                is_sqs = False  # depends on a stream/table/broker, not a queue
            else:
                is_sqs = sqs_by_shape(esm)
            out.append(Mapping_(esm, is_sqs, queue, self.resolve_function(esm, "functionName")))
        return out

    # --- alarms ------------------------------------------------------------------------------

    def alarm_metrics(self, alarm: Node) -> list[dict[str, Any]]:
        """The metrics an alarm watches: its own, or those inside metricQueries."""
        metrics: list[dict[str, Any]] = []
        if alarm.get("metricName") is not None:
            metrics.append(
                {
                    "metricName": alarm.get("metricName"),
                    "namespace": alarm.get("namespace"),
                    "dimensions": alarm.get("dimensions", default={}),
                    "prop": "dimensions",
                }
            )
        queries = alarm.get("metricQueries", default=[])
        if isinstance(queries, list):
            for q in queries:
                m = q.get("metric") if isinstance(q, dict) else None
                if isinstance(m, dict):
                    metrics.append(
                        {
                            "metricName": m.get("metricName"),
                            "namespace": m.get("namespace"),
                            "dimensions": m.get("dimensions") or {},
                            "prop": "metricQueries",
                        }
                    )
        return metrics

    def alarm_watches_queue(self, alarm: Node, metric: Mapping[str, Any], queue: Node) -> bool:
        """Whether the alarm's metric is the queue's: its QueueName dimension names the queue,
        and the alarm lives in the queue's region and account (CloudWatch metrics are
        regional and per account: an alarm elsewhere watches another queue of that name)."""
        if not same_location(alarm, queue):
            return False
        dims = metric.get("dimensions")
        qname = dims.get("QueueName") if isinstance(dims, dict) else None
        if isinstance(qname, str) and not is_unknown(qname):
            name = self.queue_name(queue)
            if name is not None:
                return qname == name
            # The queue's name is unknown (a preview of a computed name): a literal dimension
            # that names no other queue of the stack may well be this one; never guess "no".
            return qname not in self._queue_names
        # The dimension value is unknown (or the whole map is): the dependency decides...
        if queue not in self.dep_nodes(alarm, str(metric.get("prop")), (QUEUE,)):
            return False
        # ...unless the queue's name is known: an apply over a known value runs in a preview,
        # so an unknown value derived from this queue is its ARN or URL, not its name.
        own_name = queue.get("name")
        return not (isinstance(own_name, str) and own_name and not is_unknown(own_name))

    @cached_property
    def _queue_names(self) -> set[str]:
        return {name for q in self.of_type(QUEUE) if (name := self.queue_name(q)) is not None}

    @cached_property
    def _alarm_index(self) -> tuple[list[Node], dict[str, set[int]], dict[str, set[int]]]:
        """Metric alarms; QueueName dimension value -> alarm positions; URN of a resource an
        alarm's unknown dimensions depend on -> alarm positions (see `alarm_watches_queue`)."""
        alarms = self.of_type(ALARM)
        by_queue_name: dict[str, set[int]] = {}
        by_dependency: dict[str, set[int]] = {}
        for i, alarm in enumerate(alarms):
            for metric in self.alarm_metrics(alarm):
                dims = metric.get("dimensions")
                qname = dims.get("QueueName") if isinstance(dims, dict) else None
                if isinstance(qname, str) and not is_unknown(qname):
                    by_queue_name.setdefault(qname, set()).add(i)
                else:
                    for urn in alarm.prop_deps.get(str(metric.get("prop")), []):
                        by_dependency.setdefault(urn, set()).add(i)
        return alarms, by_queue_name, by_dependency

    def alarms_for_queue(self, queue: Node) -> list[Node]:
        """The metric alarms, in graph order, that may watch `queue`: every alarm of which
        `alarm_watches_queue` accepts some metric for it (and possibly a few more), without
        testing every alarm of the stack against every queue."""
        alarms, by_queue_name, by_dependency = self._alarm_index
        name = self.queue_name(queue)
        if name is None:
            return list(alarms)  # a literal QueueName may name it: no index narrows this down
        positions = by_queue_name.get(name, set()) | by_dependency.get(queue.urn, set())
        return [alarms[i] for i in sorted(positions)]

    # --- tables ------------------------------------------------------------------------------

    def table_for_ref(self, ref: str) -> Node | None:
        return self._match((TABLE,), ref)

    def topic(self, ref: str) -> Node | None:
        return self._match((TOPIC,), ref)

    def function_for_ref(self, ref: str) -> Node | None:
        """The stack function a name, `name:qualifier`, full or partial ARN names."""
        if ref.startswith("arn:"):
            return self._match((FUNCTION,), ref)
        return self._match((FUNCTION,), function_name_from_ref(ref))


# Properties only non-SQS event sources take: streams and Kafka need a starting position, MQ
# brokers name their queues and credentials, DocumentDB its change-stream config.
_NON_SQS_PROPS = (
    "startingPosition",
    "startingPositionTimestamp",
    "queues",
    "sourceAccessConfigurations",
    "selfManagedEventSource",
    "selfManagedKafkaEventSourceConfig",
    "amazonManagedKafkaEventSourceConfig",
    "documentDbEventSourceConfig",
    "topics",
    "parallelizationFactor",
    "tumblingWindowInSeconds",
)


def sqs_by_shape(esm: Node) -> bool:
    """Whether a mapping whose source ARN is unknown (a StackReference output, a preview) reads
    SQS, judged by its own properties: `scaling_config` (maximum concurrency) exists for SQS
    sources only; without it, SQS is the one source that takes none of the properties the
    others require (a stream or Kafka mapping cannot be created without a starting position).
    Unknown and empty values are no evidence: providers compute some of these (0, [])."""
    values = [esm.get(p) for p in _NON_SQS_PROPS]
    return not any(v and not is_unknown(v) for v in values)


def _allows_sources(doc: Any) -> bool:
    """A redrive-allow policy that names source queues, or explicitly allows all of them."""
    if not isinstance(doc, dict):
        return False
    permission = doc.get("redrivePermission")
    sources = doc.get("sourceQueueArns")
    return (permission == "byQueue" and bool(sources)) or permission == "allowAll"
