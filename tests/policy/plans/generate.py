"""Writes tests/policy/plans/*.json: preview digests in the Pulumi CLI's JSON format.

    .venv/bin/python tests/policy/plans/generate.py tests/policy/plans

The documents follow `display.PreviewDigest` / `PreviewStep` (pulumi/sdk/go/common/display) and
`apitype.ResourceV3`, as `pulumi preview --json [--show-sames] [--show-replacement-steps]` and
`pulumi destroy --preview-only --json` print them: `same` steps carry oldState and newState,
`create` steps only newState (outputs not yet known), `delete` steps only oldState, a replaced
resource's planned outputs are unknown, an aliased resource's oldState keeps its former URN.
`tests/policy/test_state_plans.py` holds what each document must give (and checks that this
script still writes exactly these files).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

DOCUMENTS: dict[str, str] = {}  # file name -> text, filled by `build`
STACK, PROJECT = "prod", "shop"
ACCOUNT, REGION = "123456789012", "eu-west-1"
PFX = f"urn:pulumi:{STACK}::{PROJECT}::"
STACK_URN = f"{PFX}pulumi:pulumi:Stack::{PROJECT}-{STACK}"
PROVIDER_URN = f"{PFX}pulumi:providers:aws::default_6_60_0"
PROVIDER_ID = "8d5b2c1e-7f3a-4e21-9c0d-5a6b7c8d9e0f"
PROVIDER = f"{PROVIDER_URN}::{PROVIDER_ID}"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
COMPONENT = "shop:index:Pipeline"


def urn(typ, name, parent_type=None):
    qualified = f"{parent_type}${typ}" if parent_type else typ
    return f"{PFX}{qualified}::{name}"


def queue_arn(name):
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


def queue_url(name):
    return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"


def res(
    u,
    typ,
    inputs,
    outputs=None,
    *,
    parent=STACK_URN,
    deps=None,
    pdeps=None,
    line=None,
    id=None,
    custom=True,
    provider=True,
    extra=None,
):
    state = {"urn": u, "custom": custom, "type": typ}
    if id is not None:
        state["id"] = id
    state["inputs"] = inputs
    state["outputs"] = outputs if outputs is not None else {}
    if parent:
        state["parent"] = parent
    state["dependencies"] = deps or []
    state["propertyDependencies"] = pdeps or {}
    if custom and provider:
        state["provider"] = PROVIDER
    if line:
        state["sourcePosition"] = f"project:///__main__.py#{line},1"
    state.update(extra or {})
    return state


def stack_state():
    return {"urn": STACK_URN, "custom": False, "type": "pulumi:pulumi:Stack", "outputs": {}}


def provider_state():
    return {
        "urn": PROVIDER_URN,
        "custom": True,
        "id": PROVIDER_ID,
        "type": "pulumi:providers:aws",
        "inputs": {"region": REGION},
        "outputs": {"region": REGION},
    }


def queue(
    logical,
    physical,
    *,
    fifo=False,
    retention,
    visibility=30,
    dlq=None,
    parent=STACK_URN,
    parent_type=None,
    line=None,
    tags=None,
    extra=None,
):
    inputs = {
        "name": physical,
        "messageRetentionSeconds": retention,
        "visibilityTimeoutSeconds": visibility,
        "sqsManagedSseEnabled": True,
    }
    if fifo:
        inputs["fifoQueue"] = True
    if tags:
        inputs["tags"] = dict(tags)
    deps, pdeps = [], {}
    if dlq is not None:
        dlq_urn, dlq_physical = dlq
        inputs["redrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": queue_arn(dlq_physical), "maxReceiveCount": 5}
        )
        deps, pdeps = [dlq_urn], {"redrivePolicy": [dlq_urn]}
    outputs = {
        **inputs,
        "arn": queue_arn(physical),
        "url": queue_url(physical),
        "id": queue_url(physical),
        "fifoQueue": fifo,
        "tagsAll": dict(tags or {}),
    }
    return res(
        urn("aws:sqs/queue:Queue", logical, parent_type),
        "aws:sqs/queue:Queue",
        inputs,
        outputs,
        parent=parent,
        deps=deps,
        pdeps=pdeps,
        line=line,
        id=queue_url(physical),
        extra=extra,
    )


def table(
    logical,
    physical,
    hash_key,
    *,
    ttl=True,
    parent=STACK_URN,
    parent_type=None,
    line=None,
    tags=None,
):
    inputs = {
        "name": physical,
        "billingMode": "PAY_PER_REQUEST",
        "hashKey": hash_key,
        "attributes": [{"name": hash_key, "type": "S"}],
        "pointInTimeRecovery": {"enabled": True},
    }
    if ttl:
        inputs["ttl"] = {"attributeName": "ttl", "enabled": True}
    if tags:
        inputs["tags"] = dict(tags)
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{physical}"
    outputs = {**inputs, "arn": arn, "id": physical, "tagsAll": dict(tags or {})}
    return res(
        urn("aws:dynamodb/table:Table", logical, parent_type),
        "aws:dynamodb/table:Table",
        inputs,
        outputs,
        parent=parent,
        line=line,
        id=physical,
    )


def role(logical, physical, *, parent=STACK_URN, parent_type=None, line=None):
    doc = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "sts:AssumeRole",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                }
            ],
        }
    )
    inputs = {"name": physical, "assumeRolePolicy": doc}
    arn = f"arn:aws:iam::{ACCOUNT}:role/{physical}"
    return res(
        urn("aws:iam/role:Role", logical, parent_type),
        "aws:iam/role:Role",
        inputs,
        {**inputs, "arn": arn, "id": physical},
        parent=parent,
        line=line,
        id=physical,
    )


def function(
    logical,
    physical,
    role_state,
    env_tables,
    *,
    memory=512,
    parent=STACK_URN,
    parent_type=None,
    line=None,
):
    variables = {var: t["outputs"]["name"] for var, t in env_tables.items()}
    inputs = {
        "name": physical,
        "role": role_state["outputs"]["arn"],
        "runtime": "python3.12",
        "handler": "app.handler",
        "timeout": 60,
        "memorySize": memory,
        "environment": {"variables": variables},
    }
    arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{physical}"
    deps = [role_state["urn"]] + [t["urn"] for t in env_tables.values()]
    pdeps = {"role": [role_state["urn"]], "environment": [t["urn"] for t in env_tables.values()]}
    return res(
        urn("aws:lambda/function:Function", logical, parent_type),
        "aws:lambda/function:Function",
        inputs,
        {**inputs, "arn": arn, "id": physical},
        parent=parent,
        deps=deps,
        pdeps=pdeps,
        line=line,
        id=physical,
    )


def mapping(
    logical,
    queue_state,
    fn_state,
    *,
    parent=STACK_URN,
    parent_type=None,
    line=None,
    uuid="3f1c9a52-0b7e-4d8a-9e21-6c5d4b3a2f10",
):
    inputs = {
        "eventSourceArn": queue_state["outputs"]["arn"],
        "functionName": fn_state["outputs"]["arn"],
        "batchSize": 10,
        "functionResponseTypes": ["ReportBatchItemFailures"],
    }
    if not queue_state["outputs"].get("fifoQueue"):
        inputs["maximumBatchingWindowInSeconds"] = 0
    deps = [queue_state["urn"], fn_state["urn"]]
    pdeps = {"eventSourceArn": [queue_state["urn"]], "functionName": [fn_state["urn"]]}
    return res(
        urn("aws:lambda/eventSourceMapping:EventSourceMapping", logical, parent_type),
        "aws:lambda/eventSourceMapping:EventSourceMapping",
        inputs,
        {**inputs, "uuid": uuid, "id": uuid},
        parent=parent,
        deps=deps,
        pdeps=pdeps,
        line=line,
        id=uuid,
    )


def topic(logical, physical, *, line=None):
    arn = f"arn:aws:sns:{REGION}:{ACCOUNT}:{physical}"
    inputs = {"name": physical}
    return res(
        urn("aws:sns/topic:Topic", logical),
        "aws:sns/topic:Topic",
        inputs,
        {**inputs, "arn": arn, "id": arn},
        line=line,
        id=arn,
    )


def dlq_alarm(logical, dlq_state, topic_state, *, parent=STACK_URN, parent_type=None, line=None):
    inputs = {
        "name": f"{logical}-1a2b3c4",
        "namespace": "AWS/SQS",
        "metricName": "ApproximateNumberOfMessagesVisible",
        "dimensions": {"QueueName": dlq_state["outputs"]["name"]},
        "statistic": "Maximum",
        "period": 60,
        "evaluationPeriods": 1,
        "threshold": 1,
        "comparisonOperator": "GreaterThanOrEqualToThreshold",
        "alarmActions": [topic_state["outputs"]["arn"]],
    }
    deps = [dlq_state["urn"], topic_state["urn"]]
    pdeps = {"dimensions": [dlq_state["urn"]], "alarmActions": [topic_state["urn"]]}
    return res(
        urn("aws:cloudwatch/metricAlarm:MetricAlarm", logical, parent_type),
        "aws:cloudwatch/metricAlarm:MetricAlarm",
        inputs,
        {
            **inputs,
            "arn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{logical}",
            "id": inputs["name"],
        },
        parent=parent,
        deps=deps,
        pdeps=pdeps,
        line=line,
        id=inputs["name"],
    )


def component(name, *, line=None):
    return {
        "urn": urn(COMPONENT, name),
        "custom": False,
        "type": COMPONENT,
        "outputs": {},
        "parent": STACK_URN,
        "sourcePosition": f"project:///__main__.py#{line},1",
    }


def raw_stack(
    *,
    fifo=False,
    memory=512,
    hash_key="event_id",
    tags=None,
    dlq_name="orders-dlq",
    dlq_logical="orders-dlq",
):
    """The raw pulumi_aws pipeline (orders queue -> consumer, claims table, order records)."""
    suffix = ".fifo" if fifo else ""
    d = queue(
        dlq_logical, f"{dlq_name}-5d1c2a9{suffix}", fifo=fifo, retention=1209600, line=4, tags=tags
    )
    q = queue(
        "orders",
        f"orders-8a7b6c5{suffix}",
        fifo=fifo,
        retention=345600,
        visibility=360,
        dlq=(d["urn"], d["outputs"]["name"]),
        line=9,
        tags=tags,
    )
    claims = table("processed", "processed-0c9d8e7", hash_key, line=17)
    records = table("order-records", "order-records-6f5e4d3", "order_id", ttl=False, line=24)
    r = role("consumer-role", "consumer-role-9e8d7c6", line=30)
    fn = function(
        "consumer",
        "consumer-1f2e3d4",
        r,
        {"IDEMPOTENCY_TABLE": claims, "ORDERS_TABLE": records},
        memory=memory,
        line=35,
    )
    esm = mapping("consumer-esm", q, fn, line=46)
    t = topic("alerts", "alerts-2b3c4d5", line=53)
    alarm = dlq_alarm("dlq-alarm", d, t, line=55)
    return [stack_state(), provider_state(), d, q, claims, records, r, fn, esm, t, alarm]


def component_stack(name, *, aliases=False):
    """An IdempotentQueueConsumer-like component: children named `<name>-...`."""
    comp = component(name, line=12)
    p, pt = comp["urn"], COMPONENT

    def role_tags(role):
        return {"idempotent-messaging:component": name, "idempotent-messaging:role": role}

    d = queue(
        f"{name}-dlq",
        f"{name}-dlq-77aa11b",
        retention=1209600,
        parent=p,
        parent_type=pt,
        line=12,
        tags=role_tags("dead-letter-queue"),
    )
    q = queue(
        f"{name}-queue",
        f"{name}-queue-88bb22c",
        retention=345600,
        visibility=360,
        dlq=(d["urn"], d["outputs"]["name"]),
        parent=p,
        parent_type=pt,
        line=12,
        tags=role_tags("source-queue"),
    )
    st = table(
        f"{name}-state",
        f"{name}-idempotency-state",
        "event_id",
        parent=p,
        parent_type=pt,
        line=12,
        tags=role_tags("idempotency-state"),
    )
    r = role(f"{name}-role", f"{name}-role-99cc33d", parent=p, parent_type=pt, line=12)
    fn = function(
        f"{name}-consumer",
        f"{name}-consumer-aa44ee5",
        r,
        {"IDEMPOTENCY_STATE_TABLE": st},
        parent=p,
        parent_type=pt,
        line=12,
    )
    esm = mapping(f"{name}-esm", q, fn, parent=p, parent_type=pt, line=12)
    t = topic("alerts", "alerts-2b3c4d5", line=20)
    alarm = dlq_alarm(f"{name}-alarm-dlq", d, t, parent=p, parent_type=pt, line=12)
    return [stack_state(), provider_state(), t, comp, d, q, st, r, fn, esm, alarm]


def step(op, old=None, new=None, **extra):
    s = {"op": op, "urn": (new or old)["urn"]}
    if (new or old).get("provider"):
        s["provider"] = (new or old)["provider"]
    if old is not None:
        s["oldState"] = old
    if new is not None:
        s["newState"] = new
    s.update(extra)
    return s


def digest(steps, summary=None):
    counts: dict[str, int] = {}
    for s in steps:
        if s["op"] in ("create-replacement", "delete-replaced"):
            continue
        counts[s["op"]] = counts.get(s["op"], 0) + 1
    return {
        "config": {"aws:region": REGION, f"{PROJECT}:stage": STACK},
        "steps": steps,
        "duration": 4210000000,
        "changeSummary": summary or counts,
    }


def planned(new_state):
    """A state as a preview shows it for a resource being created: outputs not known yet."""
    s = copy.deepcopy(new_state)
    s["outputs"] = {}
    s.pop("id", None)
    return s


def diff_reasons(old, new):
    """The inputs an update changes (a step's diffReasons)."""
    keys = set(old["inputs"]) | set(new["inputs"])
    return sorted(k for k in keys if old["inputs"].get(k) != new["inputs"].get(k))


def guarded(states, *, disposable=False):
    """`states` with their queues and tables as a component leaves them: protected and retained
    (protect_data), or unguarded and tagged idempotent-messaging:disposable=true (without)."""
    out = copy.deepcopy(states)
    for s in out:
        if s["type"] not in ("aws:sqs/queue:Queue", "aws:dynamodb/table:Table"):
            continue
        if disposable:  # ResourceV3 omits protect and retainOnDelete when false
            tags = {"idempotent-messaging:disposable": "true"}
            s["inputs"]["tags"] = {**s["inputs"].get("tags", {}), **tags}
            if s["outputs"]:
                s["outputs"]["tags"] = dict(s["inputs"]["tags"])
                s["outputs"]["tagsAll"] = {**s["outputs"].get("tagsAll", {}), **tags}
        else:
            s.update(protect=True, retainOnDelete=True)
    return out


def write(name, doc):
    DOCUMENTS[name] = json.dumps(doc, indent=2) + "\n"


def sames(states):
    return [step("same", s, s) for s in states]


def build() -> dict[str, str]:
    """Every document: file name -> JSON text."""
    DOCUMENTS.clear()
    # --- clean: only the function's memory changes (an in-place update) ------------------------
    before = raw_stack()
    after = raw_stack(memory=1024)
    steps = []
    for old, new in zip(before, after, strict=True):
        if old == new:
            steps.append(step("same", old, new))
        else:
            steps.append(step("update", old, new, diffReasons=["memorySize"]))
    write("clean-update.json", digest(steps))

    # --- no sames: the same plan, as `pulumi preview --json` prints it without --show-sames ----
    write(
        "no-sames.json",
        digest(
            [s for s in steps if s["op"] != "same"], summary={"same": len(steps) - 1, "update": 1}
        ),
    )

    # --- the stack export of the stack before those plans -------------------------------------
    write(
        "stack-export.json",
        {
            "version": 3,
            "deployment": {
                "manifest": {
                    "time": "2026-12-01T09:00:00Z",
                    "magic": "0f1e2d3c",
                    "version": "v3.200.0",
                },
                "resources": before,
            },
        },
    )

    def fifo_flip(tags=None, replacement_steps=False, before=None, after=None):
        before = before if before is not None else raw_stack(tags=tags)
        after = after if after is not None else raw_stack(fifo=True, tags=tags)
        steps = []
        for old, new in zip(before, after, strict=True):
            typ = old["type"]
            if old == new:
                steps.append(step("same", old, new))
            elif typ == "aws:sqs/queue:Queue":
                new_planned = planned(new)
                reasons = ["fifoQueue", "name"]
                if replacement_steps:
                    steps.append(
                        step("create-replacement", old, new_planned, replaceReasons=reasons)
                    )
                steps.append(step("replace", old, new_planned, replaceReasons=reasons))
            elif typ == "aws:lambda/eventSourceMapping:EventSourceMapping":
                new_planned = planned(new)
                new_planned["inputs"]["eventSourceArn"] = UNKNOWN
                if replacement_steps:
                    steps.append(
                        step(
                            "create-replacement",
                            old,
                            new_planned,
                            replaceReasons=["eventSourceArn"],
                        )
                    )
                steps.append(step("replace", old, new_planned, replaceReasons=["eventSourceArn"]))
            else:  # the alarm's QueueName: the new DLQ's name, known (an input of the program)
                steps.append(step("update", old, new, diffReasons=diff_reasons(old, new)))
        if replacement_steps:  # the engine deletes the replaced resources after the creates
            for old in reversed(before):
                if old["type"] in (
                    "aws:sqs/queue:Queue",
                    "aws:lambda/eventSourceMapping:EventSourceMapping",
                ):
                    steps.append(step("delete-replaced", old))
        return digest(steps)

    write("fifo-flip-replace.json", fifo_flip())
    write("fifo-flip-replacement-steps.json", fifo_flip(replacement_steps=True))
    write("fifo-flip-disposable.json", fifo_flip(tags={"idempotent-messaging:disposable": "true"}))

    # --- protect_data turned off: protected queues and tables become tagged disposable -------
    # With protect_data a component's queues and tables carry protect and retainOnDelete; with
    # protect_data=False neither, and the tag idempotent-messaging:disposable=true instead.
    # The tag counts from the state before a plan only, so it takes two deploys.
    protected_before = guarded(raw_stack())
    # One `pulumi up` that turns protect_data off AND flips the queues to FIFO: the tag is only
    # in the newState (Pulumi unprotects before it replaces): still a finding.
    write(
        "disposable-tag-and-replace-at-once.json",
        fifo_flip(before=protected_before, after=guarded(raw_stack(fifo=True), disposable=True)),
    )
    # Step 1: the deploy that turns protect_data off and changes nothing else (tags updated in
    # place, protection lifted): no replacement, no deletion.
    tagged = guarded(raw_stack(), disposable=True)
    steps = []
    for old, new in zip(protected_before, tagged, strict=True):
        if old == new:
            steps.append(step("same", old, new))
        else:
            steps.append(step("update", old, new, diffReasons=diff_reasons(old, new)))
    write("disposable-tag-first.json", digest(steps))
    # Step 2: the next deploy flips the queues to FIFO; the stack recorded the tag (oldState).
    write(
        "disposable-replace-after-tag.json",
        fifo_flip(before=tagged, after=guarded(raw_stack(fifo=True), disposable=True)),
    )

    # --- table key change --------------------------------------------------------------------
    before = raw_stack()
    after = raw_stack(hash_key="message_id")
    steps = []
    for old, new in zip(before, after, strict=True):
        if old == new:
            steps.append(step("same", old, new))
        elif old["type"] == "aws:dynamodb/table:Table":
            steps.append(step("replace", old, planned(new), replaceReasons=["hashKey"]))
        else:  # the function's environment names the table: unknown until it is replaced
            new = copy.deepcopy(new)
            new["inputs"]["environment"]["variables"]["IDEMPOTENCY_TABLE"] = UNKNOWN
            new["outputs"]["environment"]["variables"]["IDEMPOTENCY_TABLE"] = UNKNOWN
            steps.append(step("update", old, new, diffReasons=["environment"]))
    write("table-key-replace.json", digest(steps))

    # --- the DLQ moves to a new queue: the old DLQ is deleted -------------------------------
    before = raw_stack()
    after = raw_stack(dlq_name="orders-dead-letters", dlq_logical="orders-dead-letters")
    steps = []
    old_by, new_by = {s["urn"]: s for s in before}, {s["urn"]: s for s in after}
    for new in after:
        old = old_by.get(new["urn"])
        if old is None:
            steps.append(step("create", None, planned(new)))
        elif old == new:
            steps.append(step("same", old, new))
        else:
            steps.append(
                step(
                    "update",
                    old,
                    new,
                    diffReasons=sorted(
                        k
                        for k in set(old["inputs"]) | set(new["inputs"])
                        if old["inputs"].get(k) != new["inputs"].get(k)
                    ),
                )
            )
    for old in before:
        if old["urn"] not in new_by:
            steps.append(step("delete", old))
    write("dlq-delete.json", digest(steps))

    # --- destroy: `pulumi destroy --preview-only --json` --------------------------------------
    write("destroy.json", digest([step("delete", s) for s in reversed(raw_stack())]))

    # --- a component renamed (orders -> checkout) without and with an alias ------------------
    before = component_stack("orders")
    after = component_stack("checkout")
    steps = [step("same", s, s) for s in after if s["urn"] in {b["urn"] for b in before}]
    steps += [
        step("create", None, planned(s))
        for s in after
        if s["urn"] not in {b["urn"] for b in before}
    ]
    steps += [
        step("delete", s) for s in reversed(before) if s["urn"] not in {a["urn"] for a in after}
    ]
    write("rename-without-alias.json", digest(steps))
    # With `aliases=[pulumi.Alias(name="orders")]` on the component, every child named
    # `orders-...` inherits the alias `orders-...` under the old parent: the engine matches the old
    # state and nothing changes (same steps, the new URNs; oldState keeps the old URN).
    steps = []
    before_by_suffix = {s["urn"].replace("orders", "checkout"): s for s in before}
    for new in after:
        old = before_by_suffix.get(new["urn"], new)
        renamed = copy.deepcopy(old)
        new_state = copy.deepcopy(new)
        # the physical names stay those of the existing resources
        for key in ("inputs", "outputs", "id"):
            if key in old:
                new_state[key] = copy.deepcopy(old[key])
        steps.append(step("same", renamed, new_state))
    write("rename-with-alias.json", digest(steps))
    return dict(DOCUMENTS)


if __name__ == "__main__":
    for file_name, text in build().items():
        (Path(sys.argv[1]) / file_name).write_text(text)
