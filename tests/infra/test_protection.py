"""No `pulumi up` or `destroy` silently deletes queued messages or idempotency memory.

Every child that holds data (queues, tables) follows ONE setting, ``protect_data``: with it,
Pulumi ``protect`` and ``retainOnDelete`` and, on tables, DynamoDB deletion protection;
without it, none of them. The reference stack sets it per stage (``protectData`` in
``Pulumi.<stage>.yaml``: prod keeps the default, dev and the emulator target turn it off) and
an instance's own ``protectData`` wins. Resource options are read from what the engine
received (tests/infra/snapshot.py records them); docs/deploy-safety.md says what each guard
stops and how to tear a stage down on purpose.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

import pulumi
import pytest
import yaml

from idempotent_messaging.components import (
    BusinessTableArgs,
    IdempotentQueueConsumer,
    IdempotentQueueConsumerArgs,
    MonthlyFanout,
    MonthlyFanoutArgs,
)
from idempotent_messaging.components.protection import (
    DATA_ROLES,
    DISPOSABLE_TAG_KEY,
    DISPOSABLE_TAG_VALUE,
    ROLE_TAG_KEY,
    data_tags,
)
from idempotent_messaging.offline import run_program
from idempotent_messaging.rules import protection as pack_protection
from idempotent_messaging.stage import StageConfig
from tests.infra import snapshot
from tests.stages import PROJECT_DIR, stack_files

from .conftest import PulumiHarness, Run, consumer_args, reference_code

pytestmark = pytest.mark.infra

QUEUE = "aws:sqs/queue:Queue"
TABLE = "aws:dynamodb/table:Table"
DATA_TYPES = (QUEUE, TABLE)
CONFIG_KEY = "idempotent-messaging:protectData"
DOC = PROJECT_DIR / "docs" / "deploy-safety.md"

ORDERS_DATA = {
    "orders-queue": "source-queue",
    "orders-queue-dlq": "dead-letter-queue",
    "orders-state": "idempotency-state",
    "orders-order_records": "business-rows",
}
"""The reference consumer's stateful children and their data roles."""
CHARGES_DATA = {
    "monthly-charge-charges-queue": "source-queue",
    "monthly-charge-charges-queue-dlq": "dead-letter-queue",
    "monthly-charge-charges-state": "idempotency-state",
    "monthly-charge-charges-ledger": "business-rows",
}
"""The fan-out's charge consumer (its child): the work queue, its DLQ, the claims, the ledger."""
FANOUT_DATA = {
    **CHARGES_DATA,
    "monthly-charge-billing-accounts": "billing-accounts",
    "monthly-charge-runs": "run-records",
    "monthly-charge-control": "control-queue",
    "monthly-charge-control-dlq": "control-dead-letter-queue",
    "monthly-charge-schedule-dlq": "schedule-dead-letter-queue",
}
"""Every stateful child of the monthly-charge fan-out, its consumer child's included."""
STACK_DATA = {**ORDERS_DATA, **FANOUT_DATA}
ALWAYS_DISPOSABLE = {"alarms-undelivered": "undelivered-alarms"}
"""The stack alarm topic's queue of notifications SNS could not email (a stage with alarm
addresses): copies the alarms' own history keeps, disposable whatever the stage says."""


# --- Reading what the engine received ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Guards:
    """What guards one resource, as registered."""

    protect: bool
    retain_on_delete: bool
    deletion_protection: bool | None
    """A table's ``deletionProtectionEnabled`` input; None for anything else."""

    @classmethod
    def of(cls, typ: str, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Guards:
        return cls(
            protect=options.get("protect") is True,
            retain_on_delete=options.get("retainOnDelete") is True,
            deletion_protection=inputs.get("deletionProtectionEnabled") if typ == TABLE else None,
        )


def guarded(typ: str) -> Guards:
    return Guards(True, True, True if typ == TABLE else None)


def unguarded(typ: str) -> Guards:
    # Deletion protection is set false (not left out): turning protect_data off on a stage
    # that had it must turn AWS's own guard off too, or `pulumi destroy` fails on the table.
    return Guards(False, False, False if typ == TABLE else None)


def recorded(recording: Mapping[str, Any]) -> dict[str, tuple[str, Guards, dict[str, str]]]:
    """Logical name -> (type, guards, tags) of every resource of a snapshot recording."""
    return {
        r["name"]: (
            r["type"],
            Guards.of(r["type"], r["inputs"], r["options"]),
            dict(r["inputs"].get("tags") or {}),
        )
        for r in recording["resources"]
    }


def registered(run: Run, options: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The same for a harness run, whose options come from snapshot.recording_options."""
    return {
        r.name: (r.type, Guards.of(r.type, r.inputs, options.get(r.urn, {})), r.inputs.get("tags"))
        for r in run.registered
    }


def assert_follow(
    resources: Mapping[str, tuple[str, Guards, Any]], data: Mapping[str, str], protect: bool
) -> None:
    """Each child in ``data`` carries its role tag, is guarded exactly as ``protect`` says and,
    without it, is tagged disposable (with it, carries no disposable tag at all)."""
    for name, role in data.items():
        typ, guards, tags = resources[name]
        expected = guarded(typ) if protect else unguarded(typ)
        assert guards == expected, f"{name}: {guards} != {expected} (protect_data={protect})"
        assert_tagged(name, tags, role, protect)


def assert_tagged(name: str, tags: Mapping[str, str], role: str, protect: bool) -> None:
    assert tags[ROLE_TAG_KEY] == role, name
    disposable = None if protect else DISPOSABLE_TAG_VALUE
    assert tags.get(DISPOSABLE_TAG_KEY) == disposable, f"{name}: {tags} (protect_data={protect})"


def assert_nothing_else_guarded(
    resources: Mapping[str, tuple[str, Guards, Any]], data: Mapping[str, str]
) -> None:
    """Functions, roles, topics, alarms, ... hold no data: never protected nor retained."""
    for name, (typ, guards, _) in resources.items():
        if name not in data:
            assert not guards.protect and not guards.retain_on_delete, name
            assert typ not in DATA_TYPES, f"{name} is a {typ} no test names as stateful"


def stage_setting(stack: str) -> bool:
    """The stack file's protectData, else Pulumi.yaml's default."""
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())
    config = yaml.safe_load(stack_files()[stack].read_text())["config"]
    return bool(config.get(CONFIG_KEY, project["config"]["protectData"]["default"]))


def instance_settings(stack: str, key: str, name: str) -> dict[str, Any]:
    """An instance's object in a stack file, else its Pulumi.yaml default."""
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())
    config = yaml.safe_load(stack_files()[stack].read_text())["config"]
    instances = config.get(f"idempotent-messaging:{key}", project["config"][key]["default"])
    return dict(instances[name])


# --- The reference stack, per stage ------------------------------------------------------------

RUNS = snapshot.runs()


@pytest.mark.parametrize(("stack", "mode"), RUNS, ids=[f"{s}-{m}" for s, m in RUNS])
def test_every_stateful_child_follows_its_stages_setting(stack: str, mode: str) -> None:
    resources = recorded(snapshot.record(stack, mode))
    protect = stage_setting(stack)
    assert_follow(resources, STACK_DATA, protect)
    disposable = {name: role for name, role in ALWAYS_DISPOSABLE.items() if name in resources}
    assert_follow(resources, disposable, False)
    assert_nothing_else_guarded(resources, {**STACK_DATA, **disposable})


def test_prod_protects_its_data_and_dev_and_the_emulator_do_not() -> None:
    assert stage_setting("prod") is True
    assert stage_setting("dev") is False
    assert stage_setting("localstack") is False
    prod = recorded(snapshot.record("prod", "up"))
    dev = recorded(snapshot.record("dev", "up"))
    for name in STACK_DATA:
        assert prod[name][1] == guarded(prod[name][0]), name
        assert dev[name][1] == unguarded(dev[name][0]), name


def test_the_stage_setting_is_one_stack_wide_key_and_an_instance_overrides_it() -> None:
    # dev turned protection on for the whole stack with the one key
    everything = recorded(snapshot.record("dev", "up", config_overrides={"protectData": True}))
    assert_follow(everything, STACK_DATA, True)
    # prod, but the orders consumer's own protectData turns it off for that instance only
    orders = {**instance_settings("prod", "consumers", "orders"), "protectData": False}
    prod = recorded(
        snapshot.record("prod", "up", config_overrides={"consumers": {"orders": orders}})
    )
    assert_follow(prod, ORDERS_DATA, False)
    assert_follow(prod, FANOUT_DATA, True)
    # dev, but the fan-out keeps its data protected (its consumer child follows it)
    fanout = {**instance_settings("dev", "fanouts", "monthly-charge"), "protectData": True}
    dev = recorded(
        snapshot.record("dev", "up", config_overrides={"fanouts": {"monthly-charge": fanout}})
    )
    assert_follow(dev, FANOUT_DATA, True)
    assert_follow(dev, ORDERS_DATA, False)


def test_the_stage_config_reads_protect_data_and_refuses_a_non_boolean() -> None:
    assert StageConfig().protect_data is True
    assert StageConfig.config_key("protect_data") == "protectData"
    with pytest.raises(Exception, match="protectData"):
        run_program(PROJECT_DIR, "dev", config_overrides={"protectData": "sometimes"})


# --- The components directly -------------------------------------------------------------------


def run_with_options(
    harness: PulumiHarness, program: Callable[[], Any]
) -> dict[str, tuple[str, Guards, Any]]:
    with snapshot.recording_options() as options:
        run = harness.run(program)
    return registered(run, options())


def consumer_program(
    opts: pulumi.ResourceOptions | None = None, **overrides: Any
) -> Callable[[], Any]:
    args = consumer_args(
        business_table=BusinessTableArgs(name="order_records", hash_key="order_id"), **overrides
    )
    return lambda: IdempotentQueueConsumer("orders", args, opts)


def fanout_program(**overrides: Any) -> Callable[[], Any]:
    args = MonthlyFanoutArgs(
        schedule_expression_timezone="Asia/Tokyo",
        consumer_handler="handlers.charges.handler",
        consumer_code=reference_code(),
        **overrides,
    )
    return lambda: MonthlyFanout("monthly-charge", args)


def test_a_consumer_protects_its_queues_and_tables_by_default(
    pulumi_harness: PulumiHarness,
) -> None:
    assert IdempotentQueueConsumerArgs(handler="app.handler").protect_data is True
    resources = run_with_options(pulumi_harness, consumer_program())
    assert_follow(resources, ORDERS_DATA, True)
    assert_nothing_else_guarded(resources, ORDERS_DATA)


def test_a_consumer_with_protect_data_false_guards_nothing(pulumi_harness: PulumiHarness) -> None:
    resources = run_with_options(pulumi_harness, consumer_program(protect_data=False))
    assert_follow(resources, ORDERS_DATA, False)
    assert_nothing_else_guarded(resources, ORDERS_DATA)


def test_protect_data_false_adds_nothing_but_keeps_pulumis_own_inheritance(
    pulumi_harness: PulumiHarness,
) -> None:
    # A user who protects the whole component still gets Pulumi's inherited protect; the
    # component adds no retain or deletion protection of its own.
    opts = pulumi.ResourceOptions(protect=True)
    resources = run_with_options(pulumi_harness, consumer_program(opts, protect_data=False))
    for name, role in ORDERS_DATA.items():
        typ, guards, tags = resources[name]
        assert guards == dataclasses.replace(unguarded(typ), protect=True), name
        assert_tagged(name, tags, role, False)  # protect_data alone decides the tag


def test_a_fanout_protects_every_stateful_child_and_its_consumer_child_follows(
    pulumi_harness: PulumiHarness,
) -> None:
    assert MonthlyFanoutArgs(
        schedule_expression_timezone="UTC", consumer_handler="app.handler"
    ).protect_data
    resources = run_with_options(pulumi_harness, fanout_program())
    assert_follow(resources, FANOUT_DATA, True)
    assert_nothing_else_guarded(resources, FANOUT_DATA)
    off = run_with_options(pulumi_harness, fanout_program(protect_data=False))
    assert_follow(off, FANOUT_DATA, False)
    assert_nothing_else_guarded(off, FANOUT_DATA)


def test_tables_the_caller_passes_in_are_the_callers_to_protect(
    pulumi_harness: PulumiHarness,
) -> None:
    table_arn = "arn:aws:dynamodb:ap-northeast-1:111122223333:table/{}"
    resources = run_with_options(
        pulumi_harness,
        fanout_program(
            existing_runs_table_name="runs",
            existing_runs_table_arn=table_arn.format("runs"),
            existing_billing_accounts_table_name="accounts",
            existing_billing_accounts_table_arn=table_arn.format("accounts"),
        ),
    )
    created = {n for n, (typ, _, _) in resources.items() if typ == TABLE}
    assert created == {"monthly-charge-charges-state", "monthly-charge-charges-ledger"}


# --- Role tags ---------------------------------------------------------------------------------


def test_role_tags_keep_the_state_tables_value_and_the_components_role_wins() -> None:
    assert ROLE_TAG_KEY == "idempotent-messaging:role"
    assert DATA_ROLES["idempotency-state"]  # the value the policy pack already recognises
    # the reference stack uses every role
    assert set(STACK_DATA.values()) | set(ALWAYS_DISPOSABLE.values()) == set(DATA_ROLES)
    tags = data_tags({"team": "billing", ROLE_TAG_KEY: "mine"}, "source-queue", protect_data=True)
    assert tags == {"team": "billing", ROLE_TAG_KEY: "source-queue"}
    with pytest.raises(ValueError, match="not a data role"):
        data_tags({}, "cache", protect_data=True)


def test_without_protect_data_every_stateful_child_is_tagged_disposable() -> None:
    # The key the pack's advisory and the plan check read (they share idempotent_messaging.limits).
    assert (
        DISPOSABLE_TAG_KEY
        == pack_protection.DISPOSABLE_TAG_KEY
        == "idempotent-messaging:disposable"
    )
    assert DISPOSABLE_TAG_VALUE == pack_protection.DISPOSABLE_TAG_VALUE == "true"
    assert data_tags({"team": "billing"}, "dead-letter-queue", protect_data=False) == {
        "team": "billing",
        ROLE_TAG_KEY: "dead-letter-queue",
        DISPOSABLE_TAG_KEY: "true",
    }
    # With protect_data a caller's own disposable tag is dropped: one setting decides.
    assert data_tags({DISPOSABLE_TAG_KEY: "true"}, "idempotency-state", protect_data=True) == {
        ROLE_TAG_KEY: "idempotency-state"
    }
    # dev (and the emulator target, as test_every_stateful_child... checks): every stateful
    # child tagged; prod: none; and no other resource ever.
    dev = recorded(snapshot.record("dev", "up"))
    prod = recorded(snapshot.record("prod", "up"))
    for name in STACK_DATA:
        assert dev[name][2][DISPOSABLE_TAG_KEY] == "true", name
        assert DISPOSABLE_TAG_KEY not in prod[name][2], name
    for stack, resources in (("dev", dev), ("prod", prod)):
        for name, (_, _, tags) in resources.items():
            stateful = name in STACK_DATA or name in ALWAYS_DISPOSABLE
            assert stateful or DISPOSABLE_TAG_KEY not in tags, (stack, name)


# --- The document ------------------------------------------------------------------------------


def test_the_deploy_safety_doc_covers_every_argument_of_both_components() -> None:
    text = DOC.read_text()
    named = set(re.findall(r"`([a-z_][a-z0-9_]*)`", text))
    for args_type in (IdempotentQueueConsumerArgs, MonthlyFanoutArgs, BusinessTableArgs):
        missing = {f.name for f in dataclasses.fields(args_type)} - named
        assert not missing, f"docs/deploy-safety.md names no {sorted(missing)} of {args_type}"
    for command in (
        "pulumi destroy --exclude-protected",
        "pulumi state unprotect",
        "protectData: false",
        "aliases",
    ):
        assert command in text, command


def test_the_pulumi_yaml_declares_protect_data_on_by_default() -> None:
    schema = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["config"]
    assert schema["protectData"]["type"] == "boolean"
    assert schema["protectData"]["default"] is True is StageConfig().protect_data
