"""The consumers of ANY deployed stack, found from what it declared: one per SQS event source
mapping (a queue -> a function), whoever wrote the program.

A consumer is named by the component instance that created its function (the components tag
every child with ``idempotent-messaging:component``), else by the function's own resource name
(a raw ``aws.lambda_.Function``). Its DLQ is the source queue's redrive target, read back from
the emulator; its business table is the ``BUSINESS_TABLE`` the component gives the function
(none for a raw function); its alarms are the stack's MetricAlarms whose dimensions name its
queue, its DLQ or its function, or its custom metrics (namespace + service).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from idempotent_messaging.components.opening import COMPONENT_TAG_KEY
from idempotent_messaging.local.registry import AlarmConfig, FunctionConfig, MappingConfig, Registry
from idempotent_messaging.local.server import queue_url_from_arn
from idempotent_messaging.runtime import env as runtime_env

QUEUE_TYPE = "aws:sqs/queue:Queue"
RAW = "raw pulumi_aws"


@dataclass
class LocalConsumer:
    """One SQS -> Lambda consumer of the deployed stack."""

    name: str
    kind: str
    """The component type that created it (``IdempotentQueueConsumer``, ``MonthlyFanout``) or
    ``raw pulumi_aws``."""
    function: FunctionConfig
    mapping: MappingConfig
    queue_url: str
    queue_name: str
    queue_logical: str = ""
    fifo: bool = False
    dlq_url: str | None = None
    dlq_name: str | None = None
    max_receive_count: int | None = None
    business_table: str | None = None
    alarms: list[AlarmConfig] = field(default_factory=list)

    @property
    def metrics_namespace(self) -> str | None:
        return self.function.environment.get(runtime_env.POWERTOOLS_METRICS_NAMESPACE)

    @property
    def service(self) -> str | None:
        return self.function.environment.get(runtime_env.POWERTOOLS_SERVICE_NAME)

    def names(self) -> set[str]:
        """Every name a user may give for it (``send --queue``): its own, its queue's."""
        return {
            n for n in (self.name, self.queue_name, self.queue_logical, self.queue_url) if n
        } | {self.queue_name.removesuffix(".fifo")}

    def owns(self, alarm: AlarmConfig) -> bool:
        dims = alarm.dimensions
        if dims.get("QueueName") in {self.queue_name, self.dlq_name} - {None}:
            return True
        if dims.get("FunctionName") == self.function.name:
            return True
        return bool(
            self.metrics_namespace
            and alarm.namespace == self.metrics_namespace
            and dims.get("service") == self.service
        )


def _component_types(registry: Registry) -> dict[str, str]:
    """Component instance name -> its type's last part (``IdempotentQueueConsumer``)."""
    return {
        r.name: r.type.rsplit(":", 1)[-1] for r in registry.resources if r.status == "component"
    }


def _queue_logicals(registry: Registry) -> dict[str, str]:
    """Queue URL -> the logical (resource) name the program gave it."""
    return {
        r.physical_id: r.name
        for r in registry.resources
        if r.type == QUEUE_TYPE and r.status == "created"
    }


def find_consumers(registry: Registry, sqs: Any) -> list[LocalConsumer]:
    """Every enabled SQS mapping of the deploy, as a consumer, in declaration order."""
    types = _component_types(registry)
    logicals = _queue_logicals(registry)
    found: list[LocalConsumer] = []
    taken: set[str] = set()
    for mapping in registry.mappings:
        if mapping.event_source_arn.split(":")[2:3] != ["sqs"]:
            continue
        fn = registry.function(mapping.function_name)
        url = queue_url_from_arn(mapping.event_source_arn, registry.endpoint_url)
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        instance = fn.tags.get(COMPONENT_TAG_KEY)
        name = instance or fn.logical_name or fn.name
        if name in taken:
            name = f"{name}/{mapping.logical_name or mapping.uuid[:8]}"
        taken.add(name)
        consumer = LocalConsumer(
            name=name,
            kind=types.get(instance, RAW) if instance else RAW,
            function=fn,
            mapping=mapping,
            queue_url=url,
            queue_name=mapping.event_source_arn.split(":")[5],
            queue_logical=logicals.get(url, ""),
            fifo=attributes.get("FifoQueue") == "true",
            business_table=fn.environment.get(runtime_env.BUSINESS_TABLE) or None,
        )
        redrive = attributes.get("RedrivePolicy")
        if redrive:
            policy = json.loads(redrive)
            target = str(policy.get("deadLetterTargetArn", ""))
            if target.count(":") == 5:
                consumer.dlq_url = queue_url_from_arn(target, registry.endpoint_url)
                consumer.dlq_name = target.split(":")[5]
            if policy.get("maxReceiveCount") is not None:
                consumer.max_receive_count = int(policy["maxReceiveCount"])
        consumer.alarms = [a for a in registry.alarms if consumer.owns(a)]
        found.append(consumer)
    return found


def resolve(consumers: list[LocalConsumer], name: str) -> LocalConsumer:
    """The consumer a user names: its name, its queue's name (with or without ``.fifo``), the
    queue's resource name or URL. A KeyError lists the names there are."""
    for consumer in consumers:
        if name in consumer.names():
            return consumer
    known = ", ".join(f"{c.name} (queue {c.queue_name})" for c in consumers) or "none"
    raise KeyError(f"no consumer or queue {name!r} in this stack; its consumers: {known}")
