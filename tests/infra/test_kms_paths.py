"""A customer managed key on every path the components accept: each role that reads or writes
something the key encrypts may use it, and no role gets it without a key.

What each service needs of the role that calls it (kms:Decrypt + kms:GenerateDataKey, on the
key, in the role's policy; the key's own policy must allow the account's IAM policies, the
default key policy):
* SQS, "Key management" (SQS developer guide): a sender needs GenerateDataKey and Decrypt, a
  receiver (the event source mapping, with the function's role) Decrypt.
* SNS, "Setting up topic permissions" (SNS developer guide): a publisher needs
  GenerateDataKey and Decrypt.
* EventBridge Scheduler, "Encryption at rest": the execution role decrypts the schedule; it
  also sends to the schedule's DLQ (SQS above).
* Lambda, asynchronous invocation destinations: Lambda sends to the on-failure destination
  (the schedule DLQ) with the function's role (SQS above).
* DynamoDB encrypts with the table key through its own grant on the key; the role's key grant
  covers a principal whose key policy requires it.

Every combination runs in ONE program (one engine run, a consumer per combination): about half a
second per consumer, so the key's absence is checked once per queue type, its presence on
every combination of the other arguments.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest

from .conftest import ACCOUNT, REGION, PulumiHarness, Run, reference_code

pytestmark = pytest.mark.infra

KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
KMS_ACTIONS = ["kms:Decrypt", "kms:GenerateDataKey"]
SHARED_TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:shared"
TOPICS: dict[str, dict[str, Any]] = {
    "none": {},
    "created": {"create_notification_topic": True},
    "existing": {"notification_topic_arn": SHARED_TOPIC},
}
PLACEMENTS = (None, "state_table", "business_item", "domain_keyed")
TABLES = ("created", "existing")
FANOUT_COMBINATIONS = [(None, "dynamodb"), (KEY, "s3"), (KEY, "dynamodb"), (None, "s3")]


FULL = os.environ.get("KMS_PATHS") == "full"
"""``make kms-paths``: every combination. ``make test``: a sample in which every value of
every argument appears (each combination costs about half a second of engine time)."""


def _combinations() -> list[tuple[str | None, bool, str, str | None, str]]:
    keyed = list(itertools.product((KEY,), (False, True), TOPICS, PLACEMENTS, TABLES))
    if not FULL:
        # Each FIFO x topic pair once, the placements and tables cycled through them.
        pairs = list(itertools.product((False, True), TOPICS))
        keyed = [
            (KEY, fifo, topic, PLACEMENTS[n % len(PLACEMENTS)], TABLES[n % 2])
            for n, (fifo, topic) in enumerate(pairs)
        ]
    plain = list(itertools.product((None,), (False, True), ("created",), (None,), ("created",)))
    return [*keyed, *plain]


def consumer_combinations() -> dict[str, dict[str, Any]]:
    """With the key: FIFO x notification topic x claim placement x business table (created or
    existing); without it, one consumer per queue type (no role may get the key then)."""
    from idempotent_messaging.components import BusinessTableArgs

    combos: dict[str, dict[str, Any]] = {}
    for key, fifo, topic, placement, table in _combinations():
        args: dict[str, Any] = {"fifo": fifo, **TOPICS[topic], "claim_placement": placement}
        if key:
            args["kms_master_key_id"] = key
        if table == "created":
            args["business_table"] = BusinessTableArgs(name="rows", hash_key="id")
        else:
            args["existing_business_table_name"] = "team-rows"
            args["existing_business_table_arn"] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/t"
        combos[f"c{len(combos)}"] = args
    return combos


@pytest.fixture(scope="module")
def combinations_run() -> tuple[dict[str, dict[str, Any]], Run]:
    from idempotent_messaging.components import IdempotentQueueConsumer
    from idempotent_messaging.components.monthly_fanout import MonthlyFanout, MonthlyFanoutArgs

    from .conftest import consumer_args

    combos = consumer_combinations()
    fanouts: dict[str, dict[str, Any]] = {
        f"f{n}": {"item_source": source, **({"kms_master_key_id": KEY} if key else {})}
        | ({"manifest_bucket_name": "team-manifests"} if source == "s3" else {})
        for n, (key, source) in enumerate(FANOUT_COMBINATIONS[: 4 if FULL else 2])
    }

    def program() -> None:
        for name, args in combos.items():
            IdempotentQueueConsumer(name, consumer_args(**args))
        for name, args in fanouts.items():
            MonthlyFanout(
                name,
                MonthlyFanoutArgs(
                    schedule_expression_timezone="Asia/Tokyo",
                    consumer_handler="handlers.charges.handler",
                    consumer_code=reference_code(),
                    **args,
                ),
            )

    return {**combos, **fanouts}, PulumiHarness().run(program)


def key_grants(run: Run, policy: str) -> list[tuple[list[str], list[str]]]:
    statements = run.one("aws:iam/rolePolicy:RolePolicy", policy).json("policy")["Statement"]
    return [
        (s["Action"], s["Resource"])
        for s in statements
        if any(a.startswith("kms:") for a in s["Action"])
    ]


def test_every_combination_was_built(combinations_run: tuple[dict[str, Any], Run]) -> None:
    combos, run = combinations_run
    consumers = [c for c in combos if c.startswith("c")]
    assert len(consumers) == (2 * 3 * 3 * 2 if FULL else 2 * 3) + 2
    fanouts = len(combos) - len(consumers)
    assert fanouts == (4 if FULL else 2)
    assert len(run.of_type("aws:lambda/function:Function")) == len(consumers) + 2 * fanouts


@pytest.mark.parametrize("name", sorted(consumer_combinations()))
def test_a_consumer_role_may_use_the_key_exactly_when_its_resources_are_encrypted(
    combinations_run: tuple[dict[str, Any], Run], name: str
) -> None:
    combos, run = combinations_run
    encrypted = "kms_master_key_id" in combos[name]
    grants = key_grants(run, f"{name}-consumer-policy")
    assert grants == ([(KMS_ACTIONS, [KEY])] if encrypted else [])
    for queue in (f"{name}-queue", f"{name}-queue-dlq"):
        inputs = run.one("aws:sqs/queue:Queue", queue).inputs
        assert inputs.get("kmsMasterKeyId") == (KEY if encrypted else None)
    if combos[name].get("create_notification_topic"):
        topic = run.one("aws:sns/topic:Topic", f"{name}-notifications").inputs
        assert topic["kmsMasterKeyId"] == (KEY if encrypted else "alias/aws/sns")


@pytest.mark.parametrize("name", [f"f{n}" for n in range(4 if FULL else 2)])
def test_every_fanout_role_may_use_the_key_exactly_when_it_is_given(
    combinations_run: tuple[dict[str, Any], Run], name: str
) -> None:
    """The dispatcher (runs table, work and control queues, the schedule DLQ as Lambda's
    on-failure destination), the charge consumer, and the Scheduler's role (the schedule and
    its DLQ)."""
    combos, run = combinations_run
    expected = [(KMS_ACTIONS, [KEY])] if "kms_master_key_id" in combos[name] else []
    for policy in (
        f"{name}-dispatcher-policy",
        f"{name}-charges-consumer-policy",
        f"{name}-scheduler-policy",
    ):
        assert key_grants(run, policy) == expected, policy
    schedule = run.one("aws:scheduler/schedule:Schedule", f"{name}-schedule").inputs
    assert schedule.get("kmsKeyArn") == (KEY if expected else None)
