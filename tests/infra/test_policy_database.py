"""Every policy document the stacks create, checked with AWS's IAM database (parliament).

parliament (PyPI, duo-labs) carries AWS's Service Authorization Reference: every action, its
resource types with their ARN formats, and its condition keys. Each document the components
create (execution-role policies, role trust policies, queue policies, key policies) goes
through its analyser: an unknown action or prefix, a Resource ARN that matches none of the
action's resource types, ``"*"`` where the action has a resource type, a condition key the
action does not support, a condition of the wrong type, a malformed statement: each is a
finding, and a finding fails the test. Sources: the reference stacks (``dev``, ``prod``), the
two examples, and the optional paths no reference stack takes (a customer key, FIFO,
an existing topic or table, each claim placement, tracing, the S3 item source).

Documented adaptations (parliament reads identity policies; the rest needs its element):
* A trust policy has no Resource element (IAM User Guide, "Role trust policies"): the resource
  of its ``sts:AssumeRole`` is the role itself, so the role's ARN is supplied.
* In a key policy ``"Resource": "*"`` means "this key" (AWS KMS developer guide, "Key
  policies": "the resource is the KMS key to which the policy is attached"): the key's ARN is
  supplied.
* A Deny that names a whole service (``sqs:*`` in the TLS-only queue policies) is checked as
  written: parliament expands it against the database.

One documented false positive (``FALSE_POSITIVES``): ``kms:CreateAlias`` / ``UpdateAlias`` /
``DeleteAlias`` in a KEY policy. Each needs two grants, one on the alias (an IAM policy of the
caller) and one on the key (the key policy; AWS KMS developer guide, "Controlling access to
aliases"); a key policy can name only its key, so the alias resource type the database lists is
never in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from parliament import analyze_policy_string

from idempotent_messaging.offline import run_program
from tests.stages import PROJECT_DIR

from .conftest import (
    ACCOUNT,
    REGION,
    ConsumerRunner,
    PulumiHarness,
    Run,
    reference_code,
    with_log_group_arn,
)

pytestmark = pytest.mark.infra

KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:shared-notifications"
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/team-orders"
ALARM_TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:shared-alarms"


@dataclass(frozen=True)
class Document:
    where: str
    """The resource that holds it (type and logical name)."""
    text: str
    """The JSON as parliament reads it (with the adaptations above)."""


def _resource(
    typ: str, name: str, inputs: dict[str, Any], outputs: dict[str, Any]
) -> list[Document]:
    where = f"{typ} {name}"
    if typ == "aws:iam/rolePolicy:RolePolicy":
        return [Document(where, inputs["policy"])]
    if typ == "aws:iam/role:Role":
        trust = json.loads(inputs["assumeRolePolicy"])
        for statement in trust["Statement"]:
            statement.setdefault("Resource", outputs["arn"])
        return [Document(f"{where} (trust)", json.dumps(trust))]
    if typ in ("aws:sqs/queuePolicy:QueuePolicy", "aws:sns/topicPolicy:TopicPolicy"):
        return [Document(where, inputs["policy"])]
    if typ == "aws:kms/key:Key" and "policy" in inputs:
        policy = json.loads(inputs["policy"])
        for statement in policy["Statement"]:
            if statement.get("Resource") == "*":
                statement["Resource"] = outputs["arn"]
        return [Document(where, json.dumps(policy))]
    return []


POLICY_TYPES = {
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/role:Role",
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:sqs/queuePolicy:QueuePolicy",
    "aws:sns/topicPolicy:TopicPolicy",
    "aws:kms/key:Key",
    "aws:kms/grant:Grant",
    "aws:lambda/permission:Permission",
    "aws:scheduler/scheduleGroup:ScheduleGroup",
}
"""Resource types whose inputs carry a policy or a grant."""
READ = {
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/role:Role",
    "aws:sqs/queuePolicy:QueuePolicy",
    "aws:sns/topicPolicy:TopicPolicy",
    "aws:kms/key:Key",
}
"""The ones ``_resource`` reads: a component that starts creating another kind fails here
until this test reads it too."""


def documents_of(
    types_inputs_outputs: list[tuple[str, str, dict[str, Any], dict[str, Any]]],
) -> list[Document]:
    types = {typ for typ, _, _, _ in types_inputs_outputs}
    assert types & POLICY_TYPES <= READ, (
        f"unread policy-bearing types {types & POLICY_TYPES - READ}"
    )
    found = []
    for typ, name, inputs, outputs in types_inputs_outputs:
        found += _resource(typ, name, inputs, outputs)
    return found


def documents_of_run(run: Run) -> list[Document]:
    return documents_of([(r.type, r.name, r.inputs, r.outputs) for r in run.registered])


KEY_POLICY_ALIAS_ACTIONS = {"kms:CreateAlias", "kms:UpdateAlias", "kms:DeleteAlias"}


def _false_positive(document: Document, issue: str, detail: Any) -> bool:
    """The key-policy alias half (module docstring); nothing else."""
    if not document.where.startswith("aws:kms/key:Key") or issue != "RESOURCE_MISMATCH":
        return False
    return all(
        entry["action"] in KEY_POLICY_ALIAS_ACTIONS and ":alias/" in entry["required_format"]
        for entry in detail
    )


def findings(documents: list[Document]) -> list[str]:
    out = []
    for document in documents:
        policy = analyze_policy_string(document.text, include_community_auditors=False)
        out += [
            f"{document.where}: {f.issue} {f.detail}"
            for f in policy.findings
            if not _false_positive(document, f.issue, f.detail)
        ]
    return out


def test_the_database_knows_the_newest_actions_the_components_rely_on() -> None:
    """The database is current enough for this project: SQS's native redrive (2023), the
    Scheduler (2022), PartiQL (2020); and it finds what it must find."""
    for action in (
        "sqs:StartMessageMoveTask",
        "scheduler:CreateSchedule",
        "dynamodb:PartiQLInsert",
    ):
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": action, "Resource": "*"}],
        }
        issues = {f.issue for f in analyze_policy_string(json.dumps(policy)).findings}
        assert "UNKNOWN_ACTION" not in issues, action
    wrong = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"},
            {"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": KEY},
            {"Effect": "Allow", "Action": "sqs:ChangeVisibility", "Resource": KEY},
        ],
    }
    issues = {f.issue for f in analyze_policy_string(json.dumps(wrong)).findings}
    assert {"RESOURCE_STAR", "RESOURCE_MISMATCH", "UNKNOWN_ACTION"} <= issues


# --- The reference stacks and the examples ---------------------------------------------------
EXAMPLES = Path(PROJECT_DIR) / "examples"
PROGRAMS = {
    "reference dev": (PROJECT_DIR, "dev"),
    "reference prod": (PROJECT_DIR, "prod"),
    "example inventory": (EXAMPLES / "inventory", "dev"),
    "example billing": (EXAMPLES / "billing", "dev"),
}


def _faithful_log_group_arn(args: Any, outputs: dict[str, Any]) -> None:
    """The offline engine's hook: fix the log group's ARN in place, keep its id."""
    outputs.update(with_log_group_arn(args.typ, outputs))


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_every_policy_document_of_the_stacks_and_examples_has_no_finding(program: str) -> None:
    project, stack = PROGRAMS[program]
    run = run_program(project, stack, new_resource=_faithful_log_group_arn)
    documents = documents_of([(r.type, r.name, r.inputs, r.outputs) for r in run.resources])
    assert len(documents) >= 5  # a trust, a role policy, two queue policies, a key policy
    assert findings(documents) == []


# --- The optional paths no reference stack takes ---------------------------------------------
CONSUMER_PATHS: dict[str, dict[str, Any]] = {
    "key, FIFO, in-item, created topic, tracing": {
        "kms_master_key_id": KEY,
        "fifo": True,
        "claim_placement": "business_item",
        "create_notification_topic": True,
        "tracing": True,
    },
    "key, standard, state table, existing topic and table, given alarm topic": {
        "kms_master_key_id": KEY,
        "claim_placement": "state_table",
        "business_writes": ["Put", "ConditionCheck", "Delete"],
        "notification_topic_arn": TOPIC,
        "existing_business_table_name": "team-orders",
        "existing_business_table_arn": TABLE_ARN,
        "alarm_topic_arn": ALARM_TOPIC,
    },
    "no key, undeclared placement, no topic, tenant layout": {
        "state_key_layout": "tenant",
        "create_notification_topic": False,
    },
}


def _business_table() -> Any:
    from idempotent_messaging.components import BusinessTableArgs

    return BusinessTableArgs(name="order_records", hash_key="order_id")


@pytest.mark.parametrize("path", sorted(CONSUMER_PATHS))
def test_every_policy_document_of_an_optional_consumer_path_has_no_finding(
    run_consumer: ConsumerRunner, path: str
) -> None:
    overrides = dict(CONSUMER_PATHS[path])
    if "existing_business_table_arn" not in overrides:
        overrides["business_table"] = _business_table()
    documents = documents_of_run(run_consumer(**overrides))
    assert findings(documents) == []


FANOUT_PATHS: dict[str, dict[str, Any]] = {
    "key, S3 manifests, tracing": {
        "kms_master_key_id": KEY,
        "item_source": "s3",
        "manifest_bucket_name": "team-billing-manifests",
        "tracing": True,
        "consumer_claim_placement": "business_item",
    },
    "existing tables, given alarm topic": {
        "existing_billing_accounts_table_name": "customers",
        "existing_billing_accounts_table_arn": TABLE_ARN.replace("team-orders", "customers"),
        "existing_runs_table_name": "runs",
        "existing_runs_table_arn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/runs",
        "alarm_topic_arn": ALARM_TOPIC,
    },
}


@pytest.mark.parametrize("path", sorted(FANOUT_PATHS))
def test_every_policy_document_of_an_optional_fanout_path_has_no_finding(
    pulumi_harness: PulumiHarness, path: str
) -> None:
    from idempotent_messaging.components.monthly_fanout import MonthlyFanout, MonthlyFanoutArgs

    args = MonthlyFanoutArgs(
        schedule_expression_timezone="Asia/Tokyo",
        consumer_handler="handlers.charges.handler",
        consumer_code=reference_code(),
        **FANOUT_PATHS[path],
    )
    run = pulumi_harness.run(lambda: MonthlyFanout("monthly-charge", args) and None)
    documents = documents_of_run(run)
    assert findings(documents) == []
