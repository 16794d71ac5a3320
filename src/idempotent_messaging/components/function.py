"""A Lambda function with its role, least-privilege inline policy, log group and alarms.

Shared by every component's functions (the consumers' and the monthly dispatcher).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from idempotent_messaging import names

from . import alarms, iam
from .bundle import library_code_archive


@dataclass(frozen=True, kw_only=True)
class FunctionSpec:
    """What the function needs; names are physical (the caller derives them)."""

    function_name: str
    """Full function name, before ``names.fit`` (Lambda's 64); the role is
    ``<function_name>-role`` (IAM's 64), both shortened alike when too long; the log group
    ``/aws/lambda/<the function's physical name>`` (Lambda writes there)."""
    handler: str
    runtime: str
    architecture: str
    timeout_seconds: int
    memory_size_mb: int
    environment: Mapping[str, pulumi.Input[str]]
    layers: Sequence[pulumi.Input[str]] = ()
    tracing: bool = False
    reserved_concurrency: int | None = None
    log_retention_days: int = 30
    description: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    code: pulumi.Archive | None = None
    """Default None = the library's own Lambda code alone (bundle.library_code_archive), for a
    handler of ours such as the monthly dispatcher."""
    account_id: pulumi.Input[str] | None = None
    """The deploying account: the role's trust names it (``aws:SourceAccount``), so Lambda
    may assume the role only for this account's functions (IAM User Guide, "The confused deputy
    problem"; AWS's own Lambda trust-policy samples carry this condition, e.g. the
    aws/agent-toolkit-for-aws serverless skills). Default None: no condition (a caller that
    cannot know the account)."""


@dataclass(frozen=True)
class FunctionResources:
    function: aws.lambda_.Function
    role: aws.iam.Role
    role_policy: aws.iam.RolePolicy
    log_group: aws.cloudwatch.LogGroup
    alarms: list[aws.cloudwatch.MetricAlarm]


def log_group_name(function_name: str) -> str:
    return f"/aws/lambda/{function_name}"


def create_function(
    resource_name: str,
    spec: FunctionSpec,
    *,
    statements: Sequence[iam.Statement],
    alarm_actions: Sequence[pulumi.Input[str]] = (),
    parent: pulumi.Resource,
) -> FunctionResources:
    """Role + inline policy (``statements`` + own logs + X-Ray when tracing), log group,
    function, and Errors/Throttles alarms when ``alarm_actions`` are given.

    The function depends on the policy and the log group, so its first invocation can write
    logs and its event source mappings pass Lambda's permission check.
    """
    opts = pulumi.ResourceOptions(parent=parent)
    full_name = spec.function_name
    function_name = names.fit(full_name, names.LAMBDA_FUNCTION)
    tags = names.tagged(spec.tags, full_name, function_name)
    log_group = aws.cloudwatch.LogGroup(
        f"{resource_name}-logs",
        name=log_group_name(function_name),
        retention_in_days=spec.log_retention_days,
        tags=tags,
        opts=opts,
    )
    role_full = f"{full_name}-role"
    role_name = names.fit(role_full, names.IAM_ROLE)
    role = aws.iam.Role(
        f"{resource_name}-role",
        name=role_name,
        assume_role_policy=iam.service_trust_policy(
            "lambda.amazonaws.com", account_id=spec.account_id
        ),
        description=f"Execution role of {full_name}",
        tags=names.tagged(spec.tags, role_full, role_name),
        opts=opts,
    )
    all_statements = [*statements, iam.logs_statement(log_group.arn)]
    if spec.tracing:
        all_statements.append(iam.xray_statement())
    role_policy = aws.iam.RolePolicy(
        f"{resource_name}-policy",
        role=role.id,
        name=names.fit(f"{full_name}-least-privilege", names.IAM_INLINE_POLICY),
        policy=iam.policy_json(all_statements),
        opts=opts,
    )
    function = aws.lambda_.Function(
        resource_name,
        name=function_name,
        description=spec.description,
        role=role.arn,
        handler=spec.handler,
        runtime=spec.runtime,
        architectures=[spec.architecture],
        timeout=spec.timeout_seconds,
        memory_size=spec.memory_size_mb,
        code=spec.code if spec.code is not None else library_code_archive(),
        layers=list(spec.layers),
        environment=aws.lambda_.FunctionEnvironmentArgs(variables=dict(spec.environment)),
        tracing_config=aws.lambda_.FunctionTracingConfigArgs(
            mode="Active" if spec.tracing else "PassThrough"
        ),
        reserved_concurrent_executions=spec.reserved_concurrency,
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[role_policy, log_group]),
    )
    function_alarms = (
        alarms.function_alarms(
            f"{resource_name}-alarm",
            alarm_name_prefix=full_name,
            function_name=function.name,
            actions=alarm_actions,
            tags=tags,
            parent=parent,
        )
        if alarm_actions
        else []
    )
    return FunctionResources(
        function=function,
        role=role,
        role_policy=role_policy,
        log_group=log_group,
        alarms=function_alarms,
    )
