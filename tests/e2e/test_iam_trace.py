"""Every AWS call each reference and example function makes, traced on the emulator and checked
against that function's role: a call the role does not grant fails, and so does a grant no
traced call uses unless AWS, not the code, makes that call (``service_calls``, each commented).

One emulator for the module; the reference ``dev`` stack (orders, the monthly fan-out's
dispatcher and charge consumer), the inventory example (stock) and the billing example
(invoicing's dispatcher and charge consumer) are deployed into it by their own programs, so
each role is the one the components derive (runtime/grants.py). Every call goes through
botocore's ``BaseClient._make_api_call``: the recorder attributes it to the function whose
invocation is running (``AWS_LAMBDA_FUNCTION_NAME``, set only inside one), and maps it to the
IAM actions AWS authorises it by (tests/iam_calls.py). The paths driven make "unused" real:
fresh batches, duplicates (the receipt read), a republish (receipts gone: the ``sent``
marking), an owed notification (SNS refuses for good), a poison record (quarantine), the
in-item claim's transaction fallback on a standard queue (a refused PartiQL batch), FIFO
sources, the dispatcher's hand-off and its continuations.
"""

from __future__ import annotations

import fnmatch
import json
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError
from parliament import expand_action

from idempotent_messaging.dispatch.keys import BillableItem, charge_message
from idempotent_messaging.local.deploy import DeployResult, deploy
from idempotent_messaging.local.invoke import LambdaContext, lambda_environment, resolve_handler
from idempotent_messaging.local.isolation import execution_environment
from idempotent_messaging.local.poller import Poller
from idempotent_messaging.local.registry import FunctionConfig, Registry
from idempotent_messaging.local.server import Emulator, emulator_client, start_emulator
from idempotent_messaging.runtime import env
from tests.iam_calls import Call, iam_calls
from tests.stages import PROJECT_DIR

pytestmark = pytest.mark.e2e

REGION = "ap-northeast-1"
EXAMPLES = PROJECT_DIR / "examples"
PROJECTS = {
    "reference": PROJECT_DIR,
    "inventory": EXAMPLES / "inventory",
    "billing": EXAMPLES / "billing",
}
FUNCTIONS = {
    "orders-dev-consumer": "reference",
    "monthly-charge-dev-dispatcher": "reference",
    "monthly-charge-dev-charges-consumer": "reference",
    "stock-dev-consumer": "inventory",
    "invoicing-dev-dispatcher": "billing",
    "invoicing-dev-charges-consumer": "billing",
}
MONTH = "2026-05"
SQS_EVENT_SOURCE_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
"""What Lambda's SQS event source mapping calls with the function's role, as AWS lists it
(Lambda developer guide, "Using Lambda with Amazon SQS", execution role permissions; the
AWS-managed AWSLambdaSQSQueueExecutionRole): written here, not imported from the grants the
components derive, so the two are compared, not the same list twice."""


# --- The recorder ------------------------------------------------------------------------------
Answer = Callable[[dict[str, Any]], dict[str, Any]]
"""The error response a fault answers a call's parameters with."""
Fault = tuple[str, Callable[[dict[str, Any]], bool], Answer]


def error(code: str) -> Answer:
    return lambda _params: {"Error": {"Code": code, "Message": f"{code} (injected)"}}


def cancelled_without_items(params: dict[str, Any]) -> dict[str, Any]:
    """A TransactWriteItems refused because every claim exists, its reasons carrying no item
    (ReturnValuesOnConditionCheckFailure not honoured): the runtime reads the claims."""
    reasons = [{"Code": "ConditionalCheckFailed"} for _ in params["TransactItems"]]
    return {
        "Error": {"Code": "TransactionCanceledException", "Message": "cancelled (injected)"},
        "CancellationReasons": reasons,
    }


@dataclass
class Recorder:
    """Patches ``BaseClient._make_api_call`` while installed: records each call made inside a
    function's invocation as IAM (action, resource) pairs, and raises one-shot faults as
    AWS would answer them (a ClientError with the given code)."""

    account: str
    calls: dict[str, set[Call]] = field(default_factory=lambda: defaultdict(set))
    faults: list[Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail_once(
        self, operation: str, answer: Answer, when: Callable[[dict[str, Any]], bool]
    ) -> None:
        self.faults.append((operation, when, answer))

    def _fault(self, operation: str, params: dict[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            for fault in self.faults:
                if fault[0] == operation and fault[1](params):
                    self.faults.remove(fault)
                    return fault[2](params)
        return None

    @contextmanager
    def installed(self) -> Iterator[Recorder]:
        original = BaseClient._make_api_call
        recorder = self

        def recording(client: Any, operation: str, params: dict[str, Any]) -> Any:
            function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
            if function:  # inside an invocation (local.invoke sets it, for that call only)
                service = client.meta.service_model.endpoint_prefix
                traced = iam_calls(
                    service, operation, params, client.meta.region_name, recorder.account
                )
                with recorder._lock:
                    recorder.calls[function] |= traced
                answer = recorder._fault(operation, params)
                if answer is not None:
                    raise ClientError(answer, operation)
            return original(client, operation, params)

        BaseClient._make_api_call = recording
        try:
            yield self
        finally:
            BaseClient._make_api_call = original


# --- What each function's role allows and what AWS calls for it --------------------------------
@dataclass(frozen=True)
class Grant:
    sid: str
    action: str
    resource: str


def role_grants(emulator: Emulator, fn: FunctionConfig) -> list[Grant]:
    """The function role's inline policies, as the emulator's IAM holds them (the deploy put
    exactly what the components derived)."""
    iam = emulator_client("iam", emulator.endpoint_url, emulator.region)
    role = fn.role_arn.rsplit("/", 1)[-1]
    grants = []
    for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        if isinstance(document, str):
            document = json.loads(document)
        for statement in document["Statement"]:
            assert statement["Effect"] == "Allow"
            actions = statement["Action"]
            resources = statement["Resource"]
            for action in [actions] if isinstance(actions, str) else actions:
                for resource in [resources] if isinstance(resources, str) else resources:
                    grants.append(Grant(statement.get("Sid", ""), action, resource))
    return grants


def service_calls(registry: Registry, fn: FunctionConfig) -> dict[Call, str]:
    """Grants AWS uses on the function's behalf, never its code: (action, resource) -> why."""
    account = fn.arn.split(":")[4]
    why: dict[Call, str] = {}
    for mapping in registry.mappings:
        if mapping.function_name in (fn.name, fn.arn):
            for action in SQS_EVENT_SOURCE_ACTIONS:
                why[(action, mapping.event_source_arn)] = "the SQS event source mapping polls"
    log_streams = f"arn:aws:logs:{registry.region}:{account}:log-group:/aws/lambda/{fn.name}:*"
    for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
        # Lambda writes the function's output to its log group with the execution role.
        why[(action, log_streams)] = "Lambda writes the function's logs"
    if fn.async_on_failure:
        # Lambda developer guide, "Asynchronous invocation", destinations: Lambda sends a
        # failed asynchronous invocation to the on-failure destination with the function's
        # execution role.
        why[("sqs:SendMessage", fn.async_on_failure)] = "Lambda's on-failure destination"
    return why


def allows(grant: Grant, call: Call) -> bool:
    action, resource = call
    return fnmatch.fnmatchcase(action.lower(), grant.action.lower()) and fnmatch.fnmatchcase(
        resource, grant.resource
    )


# --- Driving the paths ------------------------------------------------------------------------
@dataclass
class Stack:
    emulator: Emulator
    deployed: DeployResult
    recorder: Recorder

    @property
    def registry(self) -> Registry:
        return self.deployed.registry

    def client(self, service: str) -> Any:
        return emulator_client(service, self.emulator.endpoint_url, self.emulator.region)

    def drain(self) -> None:
        Poller(
            self.registry, self.emulator.endpoint_url, self.client("sqs"), release_failed=True
        ).drain(timeout_s=60)

    def source_url(self, fn: FunctionConfig) -> str:
        (arn,) = [
            m.event_source_arn
            for m in self.registry.mappings
            if m.function_name in (fn.name, fn.arn)
        ]
        return str(self.client("sqs").get_queue_url(QueueName=arn.rsplit(":", 1)[-1])["QueueUrl"])

    def delete_receipts(self, fn: FunctionConfig) -> int:
        """Receipts gone (a death before they were written): the next copies republish."""
        ddb, table = self.client("dynamodb"), fn.environment[env.STATE_TABLE]
        deleted = 0
        for item in ddb.scan(TableName=table)["Items"]:
            key_name = (
                env.TENANT_PARTITION_KEY if env.TENANT_PARTITION_KEY in item else env.EVENT_ID_KEY
            )
            if item[key_name]["S"].startswith(env.RECEIPT_KEY_PREFIX):
                key = {
                    k: item[k]
                    for k in (env.TENANT_PARTITION_KEY, env.TENANT_SORT_KEY, env.EVENT_ID_KEY)
                    if k in item
                }
                ddb.delete_item(TableName=table, Key=key)
                deleted += 1
        return deleted

    def send(self, fn: FunctionConfig, messages: list[Message]) -> None:
        sqs, url = self.client("sqs"), self.source_url(fn)
        for message in messages:
            extra = (
                {"MessageGroupId": message.group, "MessageDeduplicationId": message.dedup}
                if url.endswith(".fifo")
                else {}
            )
            sqs.send_message(QueueUrl=url, MessageBody=message.body, **extra)
        self.drain()
        self.recorder.faults.clear()  # a fault this step's path never reached fires no later


@dataclass(frozen=True)
class Message:
    body: str
    group: str = "trace"
    dedup: str = "first"

    def again(self, copy: str) -> Message:
        """The same event sent again (a new SQS message: FIFO needs a new deduplication id)."""
        return Message(self.body, self.group, f"{self.dedup}-{copy}")


def drive_consumer(
    stack: Stack,
    fn: FunctionConfig,
    event: Callable[[int], Message],
    poison: Message,
    *,
    insert_fallback: bool = False,
) -> None:
    """Fresh, duplicate, republish, owed, poison: every branch that calls something else
    (four drains)."""
    fresh = [event(i) for i in range(3)]
    stack.send(fn, fresh)  # claims (+ business writes), publish, receipt
    # Duplicates whose refusal carries no claim: the status read (a transaction's reasons
    # carry it with ALL_OLD, a PartiQL INSERT's never), then the receipt read: done.
    stack.recorder.fail_once("TransactWriteItems", cancelled_without_items, lambda _p: True)
    stack.send(fn, [m.again("dup") for m in fresh])
    assert stack.delete_receipts(fn) >= 1
    stack.send(fn, [m.again("re") for m in fresh])  # no receipt: publish again, mark `sent`
    # SNS refuses for good: the claim keeps its owed notification, the copy goes to the DLQ;
    # a record the consumer refuses is quarantined with its reason.
    stack.recorder.fail_once("PublishBatch", error("InvalidParameter"), lambda _params: True)
    if insert_fallback:
        # A standard queue's in-item claims are PartiQL INSERTs; a refusal of the whole call
        # falls back to one transaction per record (the claim as the business Put).
        stack.recorder.fail_once(
            "BatchExecuteStatement",
            error("ValidationException"),
            lambda params: str(params["Statements"][0]["Statement"]).startswith("INSERT"),
        )
    stack.send(fn, [event(10), poison])


def charge(employee: str) -> Message:
    item = BillableItem(tenant_id="t1", employee_id=employee, amount=1200, currency="JPY")
    message = charge_message(item, MONTH)
    return Message(message.body, message.group_id, message.deduplication_id)


def drive_fanout(stack: Stack, prefix: str, billing_table: str) -> None:
    """The dispatcher hands every segment off at once (a budget already low), the control
    queue's mapping runs the continuations (pages, checkpoints, charges enqueued), the charge
    consumer processes them; then the charge consumer's other branches."""
    ddb = stack.client("dynamodb")
    for employee in ("e1", "e2"):
        ddb.put_item(
            TableName=billing_table,
            Item={
                "tenant_id": {"S": "t1"},
                "employee_id": {"S": employee},
                "amount": {"N": "1200"},
                "currency": {"S": "JPY"},
                "active": {"BOOL": True},
            },
        )
    dispatcher = stack.registry.functions[f"{prefix}-dispatcher"]
    readings = iter([600_000])  # the first reading sets the budget; every later one is low
    context = LambdaContext(dispatcher, stack.emulator.region)
    context.get_remaining_time_in_millis = lambda: next(readings, 1_000)  # type: ignore[method-assign]
    environment = lambda_environment(dispatcher, stack.emulator.region, stack.emulator.endpoint_url)
    with execution_environment(environment):
        outcome = resolve_handler(dispatcher.handler, dispatcher.code_root)(
            {"month": MONTH}, context
        )
    assert outcome["handed_off"], outcome
    stack.drain()  # continuations, then the charges they enqueued
    consumer = stack.registry.functions[f"{prefix}-charges-consumer"]
    ledger = consumer.environment[env.BUSINESS_TABLE]
    assert len(ddb.scan(TableName=ledger)["Items"]) == 2
    employees = iter(f"e{n}" for n in range(100, 200))
    drive_consumer(
        stack,
        consumer,
        lambda i: charge("e1" if i == 0 else "e2" if i == 1 else next(employees)),
        Message('{"not": "a charge"}', "poison", "poison"),
    )


def order(i: int) -> Message:
    body = {"event_id": f"trace-order-{i}", "order": {"order_id": f"o-{i}", "amount": 10}}
    return Message(json.dumps(body))


def stock(i: int) -> Message:
    body = {"event_id": f"trace-stock-{i}", "sku": f"s-{i}", "warehouse": "w1", "delta": 1}
    return Message(json.dumps(body))


@dataclass
class Traced:
    stacks: dict[str, Stack]
    recorder: Recorder

    def function(self, name: str) -> tuple[Stack, FunctionConfig]:
        stack = self.stacks[FUNCTIONS[name]]
        return stack, stack.registry.functions[name]


@pytest.fixture(scope="module")
def traced() -> Iterator[Traced]:
    emulator = start_emulator(REGION)
    try:
        deployed = {name: deploy(emulator, "dev", project) for name, project in PROJECTS.items()}
        recorder = Recorder(account="123456789012")
        stacks = {name: Stack(emulator, d, recorder) for name, d in deployed.items()}
        with recorder.installed():
            reference, inventory, billing = (
                stacks["reference"],
                stacks["inventory"],
                stacks["billing"],
            )
            orders = reference.registry.functions["orders-dev-consumer"]
            drive_consumer(
                reference,
                orders,
                order,
                Message('{"event_id": "trace-order-x"}'),
                insert_fallback=True,
            )
            drive_fanout(
                reference,
                "monthly-charge-dev",
                reference.registry.functions["monthly-charge-dev-dispatcher"].environment[
                    "BILLING_ACCOUNTS_TABLE"
                ],
            )
            drive_consumer(
                inventory,
                inventory.registry.functions["stock-dev-consumer"],
                stock,
                Message('{"event_id": "trace-stock-x", "sku": "s"}'),
            )
            drive_fanout(
                billing,
                "invoicing-dev",
                billing.registry.functions["invoicing-dev-dispatcher"].environment[
                    "BILLING_ACCOUNTS_TABLE"
                ],
            )
        yield Traced(stacks, recorder)
    finally:
        emulator.stop()


# --- The checks -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_call_a_function_makes_is_granted_by_its_role(traced: Traced, name: str) -> None:
    stack, fn = traced.function(name)
    calls = traced.recorder.calls[name]
    assert calls, f"{name} made no call: the trace drove nothing"
    grants = role_grants(stack.emulator, fn)
    refused = sorted(call for call in calls if not any(allows(g, call) for g in grants))
    assert refused == [], f"{name}'s role would refuse {refused}"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_grant_of_a_function_role_is_used_by_its_code_or_by_aws_for_it(
    traced: Traced, name: str
) -> None:
    stack, fn = traced.function(name)
    calls = traced.recorder.calls[name]
    by_aws = service_calls(stack.registry, fn)
    unused = sorted(
        (g.sid, g.action, g.resource)
        for g in role_grants(stack.emulator, fn)
        if (g.action, g.resource) not in by_aws and not any(allows(g, call) for call in calls)
    )
    assert unused == [], f"{name}'s role grants what no traced path uses: {unused}"


def test_every_traced_action_is_one_iam_knows(traced: Traced) -> None:
    """The call-to-action mapping (tests/iam_calls.py) checked against AWS's database
    (parliament): an operation mapped to no real action would make both checks meaningless."""
    actions = {action for calls in traced.recorder.calls.values() for action, _ in calls}
    assert actions == {
        "dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PartiQLInsert",
        "dynamodb:PartiQLUpdate", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:UpdateItem",
        "sns:Publish", "sqs:SendMessage",
    }  # fmt: skip
    for action in sorted(actions):
        assert expand_action(action), action  # raises on an unknown action


def test_the_trace_reaches_the_branches_that_call_something_else(traced: Traced) -> None:
    calls = traced.recorder.calls
    orders = {action for action, _ in calls["orders-dev-consumer"]}
    assert {"dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:UpdateItem",
            "dynamodb:PutItem", "sqs:SendMessage", "sns:Publish"} <= orders  # fmt: skip
    charges = {action for action, _ in calls["monthly-charge-dev-charges-consumer"]}
    assert "dynamodb:PartiQLInsert" not in charges  # FIFO keeps the transaction
    dispatcher = {action for action, _ in calls["monthly-charge-dev-dispatcher"]}
    assert {"dynamodb:Scan", "sqs:SendMessage"} <= dispatcher
