"""Helpers for the policy tests: write small raw pulumi_aws projects and check them."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.offline import Violation, check

# The fourth line defines the key policy of GOOD's alarm topic (CloudWatch may use the key to
# publish; a default key policy would refuse it); it keeps GOOD's line numbers unchanged.
KEY_POLICY = (
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": '
    '"arn:aws:iam::123456789012:root"}, "Action": "kms:*", "Resource": "*"}, {"Effect": '
    '"Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"}, "Action": ["kms:Decrypt", '
    '"kms:GenerateDataKey*"], "Resource": "*"}]}'
)
HEADER = f"import json\nimport pulumi\nimport pulumi_aws as aws\nKEY_POLICY = {KEY_POLICY!r}\n"

# A well-configured SQS -> Lambda pipeline written with raw pulumi_aws resources: every rule
# passes. Tests derive misconfigured variants from it by replacing one line.
GOOD = """
topic = aws.sns.Topic("alerts", kms_master_key_id=aws.kms.Key("k", policy=KEY_POLICY).arn)
dlq = aws.sqs.Queue(
    "orders-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
queue = aws.sqs.Queue(
    "orders",
    visibility_timeout_seconds=360,
    message_retention_seconds=345600,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
table = aws.dynamodb.Table(
    "processed",
    hash_key="event_id",
    attributes=[{"name": "event_id", "type": "S"}],
    billing_mode="PAY_PER_REQUEST",
    ttl={"attribute_name": "ttl", "enabled": True},
    point_in_time_recovery={"enabled": True},
)
role = aws.iam.Role(
    "consumer-role",
    assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}),
)
fn = aws.lambda_.Function(
    "consumer",
    role=role.arn,
    runtime="python3.12",
    handler="app.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
    environment={"variables": {"IDEMPOTENCY_TABLE": table.name}},
)
esm = aws.lambda_.EventSourceMapping(
    "consumer-esm",
    event_source_arn=queue.arn,
    function_name=fn.arn,
    batch_size=10,
    function_response_types=["ReportBatchItemFailures"],
)
alarm = aws.cloudwatch.MetricAlarm(
    "dlq-alarm",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": dlq.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[topic.arn],
)
"""


def write_project(
    root: Path, body: str, *, name: str = "fixture", stack_yaml: str | None = None
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\n")
    (root / "__main__.py").write_text(HEADER + textwrap.dedent(body))
    # The region the literal ARNs of the tests name: without it the stack's region would come
    # from the environment, and an ARN in another region names another resource.
    stack_yaml = stack_yaml if stack_yaml is not None else "config:\n  aws:region: us-east-1\n"
    (root / "Pulumi.dev.yaml").write_text(textwrap.dedent(stack_yaml))
    return root


Pairs = set[tuple[str, str]]

OPT_IN_RULES = ("stateful-pipeline-resource-protected",)
"""Rules the programs of these tests were not written for, disabled the way a team turns a
policy off (policy config `{"<rule>": {"enforcementLevel": "disabled"}}`) unless a test enables
them: `stateful-pipeline-resource-protected` advises on every unprotected queue and table, which
almost every raw program here is, and would bury the findings the program was written for. The
corpus programs of that rule enable it (`ENABLED_RULES`), as do the tests of tests/policy/
test_state_protection.py."""


def policy_config(
    config: Mapping[str, Any] | None = None, enabled: tuple[str, ...] | list[str] = ()
) -> dict[str, Any]:
    """`config` with the opt-in rules not `enabled` (nor configured by `config`) disabled."""
    out: dict[str, Any] = {
        rule: {"enforcementLevel": "disabled"} for rule in OPT_IN_RULES if rule not in enabled
    }
    out.update(config or {})
    return out


def pairs(violations: list[Violation], level: str | None = None) -> Pairs:
    return {(v.policy, v.name) for v in violations if level is None or v.enforcement == level}


@pytest.fixture
def run_check(tmp_path: Path) -> Callable[..., list[Violation]]:
    """run_check(body, preview=False, config=None) -> violations of that program (the
    opt-in rules disabled unless `config` names them: see `policy_config`)."""
    counter = iter(range(1000))

    def _run(
        body: str, *, preview: bool = False, config: Mapping[str, Any] | None = None
    ) -> list[Violation]:
        project = write_project(tmp_path / f"p{next(counter)}", body)
        _, violations = check(project, "dev", preview=preview, config=policy_config(config))
        return violations

    return _run
