"""Pulumi mocks that create each declared resource in the emulator with exactly its inputs.

The Pulumi SDK awaits every input before it registers a resource, so `new_resource` sees
resolved values (ARNs and URLs the emulator returned for earlier resources) in camelCase with
numbers as floats, still in Pulumi's wire wrappers: every input (and every invoke's arguments)
is seen through them first (`local.unwrap.plain`: a secret is its value, an unknown refuses the
resource by property path), so no materialiser ever reads a wrapper. Each supported type is
created through boto3 and its real identifiers are returned as outputs, so dependent resources
get them too. A type without a materialiser, or a
create the emulator refuses, is recorded in the registry and shown in the deploy report; the
program still completes (it receives the inputs as outputs) so that every such resource is
listed, not only the first.
"""

from __future__ import annotations

import io
import secrets
import threading
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
from botocore.exceptions import ClientError

from idempotent_messaging.local.registry import (
    AlarmConfig,
    DeployedResource,
    FunctionConfig,
    MappingConfig,
    Registry,
    ScheduleConfig,
)
from idempotent_messaging.local.server import EMULATOR_ACCOUNT_ID, Emulator, queue_url_from_arn
from idempotent_messaging.local.unwrap import plain
from idempotent_messaging.offline.mocks import AwsMocks

# Invokes that read no cloud state: answered without the emulator.
_ENVIRONMENT_INVOKES = frozenset(
    {
        "aws:index/getRegion:getRegion",
        "aws:index/getCallerIdentity:getCallerIdentity",
        "aws:index/getPartition:getPartition",
        "aws:iam/getPolicyDocument:getPolicyDocument",
    }
)

# Lambda's own create-time checks that moto does not make (the emulator keeps the mapping).
_LAMBDA_DEFAULT_TIMEOUT_S = 3
_LAMBDA_DEFAULT_MEMORY_MB = 128
_ESM_DEFAULT_BATCH_SIZE = 10
_MAX_ARCHIVE_BYTES = 20 * 1024 * 1024

State = dict[str, Any]


class _ReadTracker(dict[str, Any]):
    """The inputs, remembering which top-level settings a materialiser read, so that a
    declared setting the emulator did not apply is reported instead of silently dropped."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return super().__contains__(key)

    def unread(self) -> list[str]:
        ignored = {"tagsAll", "region"}  # provider bookkeeping, not a resource setting
        return sorted(
            k
            for k, v in self.items()
            if k not in self.read
            and not k.startswith("__")
            and k not in ignored
            and v not in (None, "", [], {})
        )


class MaterialiseError(Exception):
    """The emulator refused a resource; the message says which setting and why."""


def _int(value: Any) -> int:
    return int(value)


def _bool_str(value: Any) -> str:
    return "true" if value else "false"


def _tags_list(tags: dict[str, str] | None, key: str = "Key", val: str = "Value") -> list[Any]:
    return [{key: k, val: v} for k, v in (tags or {}).items()]


def autoname(logical: str, fifo: bool = False) -> str:
    """Pulumi's auto-naming: the logical name plus a random 7-character suffix."""
    base = f"{logical}-{secrets.token_hex(4)[:7]}"
    return base + ".fifo" if fifo and not logical.endswith(".fifo") else base


class EmulatorMocks(pulumi.runtime.Mocks):
    """new_resource = create in the emulator; call = the provider functions programs use."""

    def __init__(self, emulator: Emulator, registry: Registry, project_dir: Path) -> None:
        self.emulator = emulator
        self.registry = registry
        self.project_dir = project_dir
        self.region = emulator.region
        self._offline = AwsMocks(region=self.region, account_id=EMULATOR_ACCOUNT_ID)
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self._handlers: dict[str, Callable[[str, State], tuple[str, State]]] = {
            "aws:sqs/queue:Queue": self._queue,
            "aws:sqs/queuePolicy:QueuePolicy": self._queue_policy,
            "aws:sqs/redrivePolicy:RedrivePolicy": self._redrive_policy,
            "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy": self._redrive_allow_policy,
            "aws:dynamodb/table:Table": self._table,
            "aws:sns/topic:Topic": self._topic,
            "aws:sns/topicPolicy:TopicPolicy": self._topic_policy,
            "aws:sns/topicSubscription:TopicSubscription": self._subscription,
            "aws:iam/role:Role": self._role,
            "aws:iam/rolePolicy:RolePolicy": self._role_policy,
            "aws:iam/policy:Policy": self._policy,
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment": self._role_policy_attachment,
            "aws:cloudwatch/logGroup:LogGroup": self._log_group,
            "aws:cloudwatch/metricAlarm:MetricAlarm": self._metric_alarm,
            "aws:cloudwatch/dashboard:Dashboard": self._dashboard,
            "aws:lambda/function:Function": self._function,
            "aws:lambda/permission:Permission": self._permission,
            "aws:lambda/eventSourceMapping:EventSourceMapping": self._event_source_mapping,
            "aws:lambda/functionEventInvokeConfig:FunctionEventInvokeConfig": (
                self._event_invoke_config
            ),
            "aws:lambda/functionRecursionConfig:FunctionRecursionConfig": self._recursion_config,
            "aws:scheduler/schedule:Schedule": self._schedule,
            "aws:scheduler/scheduleGroup:ScheduleGroup": self._schedule_group,
            "aws:kms/key:Key": self._kms_key,
            "aws:kms/alias:Alias": self._kms_alias,
        }

    # --- Pulumi mocks interface ---------------------------------------------------------------
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, State]:
        # Returned as the outputs as given: a secret input stays a secret output.
        inputs: State = dict(args.inputs)
        if not args.custom:
            self.registry.record(DeployedResource(args.typ, args.name, "component"))
            return args.name, {}
        if args.typ.startswith("pulumi:providers:"):
            self.registry.record(DeployedResource(args.typ, args.name, "provider", args.name))
            return f"{args.name}-provider-id", inputs
        handler = self._handlers.get(args.typ)
        if handler is None:
            self.registry.record(
                DeployedResource(
                    args.typ, args.name, "unsupported", detail="no materialiser for this type"
                )
            )
            return f"{args.name}-not-materialised", inputs
        try:
            # Every materialiser reads plain values; an unknown refuses it (a ValueError).
            tracked = _ReadTracker(plain(inputs))
            physical_id, state = handler(args.name, tracked)
        except (ClientError, MaterialiseError, KeyError, ValueError) as exc:
            self.registry.record(DeployedResource(args.typ, args.name, "failed", detail=str(exc)))
            return f"{args.name}-not-materialised", inputs
        notes = [state.pop("__detail__", "")]
        unread = tracked.unread()
        if unread:
            notes.append(f"declared but not applied: {', '.join(unread)}")
        detail = "; ".join(n for n in notes if n)
        self.registry.record(
            DeployedResource(args.typ, args.name, "created", physical_id, detail=detail)
        )
        return physical_id, {**inputs, **state}

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[Any]]:
        """Provider functions. Failures must be a list: the mock monitor iterates it."""
        token = args.token
        if token in _ENVIRONMENT_INVOKES:
            # Pure answers (region, identity, partition, rendered policy documents): the offline
            # engine's own, in the emulator's region and account, over the plain arguments.
            plain_args = pulumi.runtime.MockCallArgs(token, plain(dict(args.args)), args.provider)
            return self._offline.invoke_result(plain_args), []
        self.registry.record(
            DeployedResource(token, "(invoke)", "unsupported", detail="provider function")
        )
        return {}, []

    # --- helpers -----------------------------------------------------------------------------
    def _client(self, service: str) -> Any:
        with self._clients_lock:
            if service not in self._clients:
                self._clients[service] = self.emulator.client(service)
            return self._clients[service]

    def _arn(self, service: str, resource: str, region: bool = True) -> str:
        return f"arn:aws:{service}:{self.region if region else ''}:{EMULATOR_ACCOUNT_ID}:{resource}"

    # --- SQS ---------------------------------------------------------------------------------
    _QUEUE_ATTRIBUTES: dict[str, tuple[str, Callable[[Any], str]]] = {
        "visibilityTimeoutSeconds": ("VisibilityTimeout", lambda v: str(_int(v))),
        "messageRetentionSeconds": ("MessageRetentionPeriod", lambda v: str(_int(v))),
        "delaySeconds": ("DelaySeconds", lambda v: str(_int(v))),
        "maxMessageSize": ("MaximumMessageSize", lambda v: str(_int(v))),
        "receiveWaitTimeSeconds": ("ReceiveMessageWaitTimeSeconds", lambda v: str(_int(v))),
        "redrivePolicy": ("RedrivePolicy", str),
        "redriveAllowPolicy": ("RedriveAllowPolicy", str),
        "fifoQueue": ("FifoQueue", _bool_str),
        "contentBasedDeduplication": ("ContentBasedDeduplication", _bool_str),
        "deduplicationScope": ("DeduplicationScope", str),
        "fifoThroughputLimit": ("FifoThroughputLimit", str),
        "sqsManagedSseEnabled": ("SqsManagedSseEnabled", _bool_str),
        "kmsMasterKeyId": ("KmsMasterKeyId", str),
        "kmsDataKeyReusePeriodSeconds": ("KmsDataKeyReusePeriodSeconds", lambda v: str(_int(v))),
        "policy": ("Policy", str),
    }

    def _queue(self, logical: str, inputs: State) -> tuple[str, State]:
        fifo = bool(inputs.get("fifoQueue"))
        name = inputs.get("name") or autoname(inputs.get("namePrefix") or logical, fifo)
        attributes: dict[str, str] = {}
        for key, (attribute, convert) in self._QUEUE_ATTRIBUTES.items():
            value = inputs.get(key)
            if value is None or value == "":
                continue
            if key == "fifoQueue" and not value:
                continue  # FifoQueue=false is refused by SQS on create
            attributes[attribute] = convert(value)
        sqs = self._client("sqs")
        kwargs: dict[str, Any] = {"QueueName": name, "Attributes": attributes}
        if inputs.get("tags"):
            kwargs["tags"] = inputs["tags"]
        url = sqs.create_queue(**kwargs)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        state: State = {"name": name, "arn": arn, "url": url}
        if "RedriveAllowPolicy" in attributes:
            state["__detail__"] = "RedriveAllowPolicy sent; moto accepts but does not store it"
        return url, state

    def _queue_policy(self, logical: str, inputs: State) -> tuple[str, State]:
        url = inputs["queueUrl"]
        self._client("sqs").set_queue_attributes(
            QueueUrl=url, Attributes={"Policy": str(inputs["policy"])}
        )
        return url, {}

    def _redrive_policy(self, logical: str, inputs: State) -> tuple[str, State]:
        url = inputs["queueUrl"]
        self._client("sqs").set_queue_attributes(
            QueueUrl=url, Attributes={"RedrivePolicy": str(inputs["redrivePolicy"])}
        )
        return url, {}

    def _redrive_allow_policy(self, logical: str, inputs: State) -> tuple[str, State]:
        url = inputs["queueUrl"]
        self._client("sqs").set_queue_attributes(
            QueueUrl=url, Attributes={"RedriveAllowPolicy": str(inputs["redriveAllowPolicy"])}
        )
        return url, {"__detail__": "sent; moto accepts RedriveAllowPolicy but does not store it"}

    # --- DynamoDB ----------------------------------------------------------------------------
    def _table(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(logical)
        key_schema = [{"AttributeName": inputs["hashKey"], "KeyType": "HASH"}]
        if inputs.get("rangeKey"):
            key_schema.append({"AttributeName": inputs["rangeKey"], "KeyType": "RANGE"})
        billing = inputs.get("billingMode") or "PROVISIONED"
        kwargs: dict[str, Any] = {
            "TableName": name,
            "KeySchema": key_schema,
            "AttributeDefinitions": [
                {"AttributeName": a["name"], "AttributeType": a["type"]}
                for a in inputs.get("attributes") or []
            ],
            "BillingMode": billing,
        }
        if billing == "PROVISIONED":
            kwargs["ProvisionedThroughput"] = {
                "ReadCapacityUnits": _int(inputs.get("readCapacity") or 1),
                "WriteCapacityUnits": _int(inputs.get("writeCapacity") or 1),
            }
        gsis = []
        for index in inputs.get("globalSecondaryIndexes") or []:
            schema = [{"AttributeName": index["hashKey"], "KeyType": "HASH"}]
            if index.get("rangeKey"):
                schema.append({"AttributeName": index["rangeKey"], "KeyType": "RANGE"})
            projection: dict[str, Any] = {"ProjectionType": index.get("projectionType", "ALL")}
            if index.get("nonKeyAttributes"):
                projection["NonKeyAttributes"] = index["nonKeyAttributes"]
            gsi: dict[str, Any] = {"IndexName": index["name"], "KeySchema": schema}
            gsi["Projection"] = projection
            if billing == "PROVISIONED":
                gsi["ProvisionedThroughput"] = {
                    "ReadCapacityUnits": _int(index.get("readCapacity") or 1),
                    "WriteCapacityUnits": _int(index.get("writeCapacity") or 1),
                }
            gsis.append(gsi)
        if gsis:
            kwargs["GlobalSecondaryIndexes"] = gsis
        if inputs.get("streamEnabled"):
            kwargs["StreamSpecification"] = {
                "StreamEnabled": True,
                "StreamViewType": inputs.get("streamViewType") or "NEW_AND_OLD_IMAGES",
            }
        sse = inputs.get("serverSideEncryption") or {}
        if sse.get("enabled"):
            kwargs["SSESpecification"] = {"Enabled": True, "SSEType": "KMS"}
            if sse.get("kmsKeyArn"):
                kwargs["SSESpecification"]["KMSMasterKeyId"] = sse["kmsKeyArn"]
        if inputs.get("tags"):
            kwargs["Tags"] = _tags_list(inputs["tags"])
        if inputs.get("deletionProtectionEnabled") is not None:
            kwargs["DeletionProtectionEnabled"] = bool(inputs["deletionProtectionEnabled"])
        if inputs.get("tableClass"):
            kwargs["TableClass"] = inputs["tableClass"]
        ddb = self._client("dynamodb")
        table = ddb.create_table(**kwargs)["TableDescription"]
        ttl = inputs.get("ttl") or {}
        if ttl.get("enabled"):
            ddb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["attributeName"]},
            )
        pitr = inputs.get("pointInTimeRecovery") or {}
        if pitr.get("enabled"):
            ddb.update_continuous_backups(
                TableName=name,
                PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
            )
        state: State = {"name": name, "arn": table["TableArn"]}
        if table.get("LatestStreamArn"):
            state["streamArn"] = table["LatestStreamArn"]
            state["streamLabel"] = table.get("LatestStreamLabel", "")
        return name, state

    # --- SNS ---------------------------------------------------------------------------------
    def _topic(self, logical: str, inputs: State) -> tuple[str, State]:
        fifo = bool(inputs.get("fifoTopic"))
        name = inputs.get("name") or autoname(logical, fifo)
        attributes: dict[str, str] = {}
        for key, attribute in (
            ("kmsMasterKeyId", "KmsMasterKeyId"),
            ("policy", "Policy"),
            ("displayName", "DisplayName"),
            ("deliveryPolicy", "DeliveryPolicy"),
            ("signatureVersion", "SignatureVersion"),
            ("tracingConfig", "TracingConfig"),
        ):
            if inputs.get(key) not in (None, ""):
                attributes[attribute] = str(inputs[key])
        if fifo:
            attributes["FifoTopic"] = "true"
        if inputs.get("contentBasedDeduplication"):
            attributes["ContentBasedDeduplication"] = "true"
        kwargs: dict[str, Any] = {"Name": name, "Attributes": attributes}
        if inputs.get("tags"):
            kwargs["Tags"] = _tags_list(inputs["tags"])
        arn = self._client("sns").create_topic(**kwargs)["TopicArn"]
        return arn, {"name": name, "arn": arn}

    def _topic_policy(self, logical: str, inputs: State) -> tuple[str, State]:
        self._client("sns").set_topic_attributes(
            TopicArn=inputs["arn"], AttributeName="Policy", AttributeValue=str(inputs["policy"])
        )
        return inputs["arn"], {}

    def _subscription(self, logical: str, inputs: State) -> tuple[str, State]:
        attributes: dict[str, str] = {}
        if inputs.get("rawMessageDelivery"):
            attributes["RawMessageDelivery"] = "true"
        if inputs.get("filterPolicy"):
            attributes["FilterPolicy"] = str(inputs["filterPolicy"])
        if inputs.get("redrivePolicy"):
            attributes["RedrivePolicy"] = str(inputs["redrivePolicy"])
        arn = self._client("sns").subscribe(
            TopicArn=inputs["topic"],
            Protocol=inputs["protocol"],
            Endpoint=inputs["endpoint"],
            Attributes=attributes,
            ReturnSubscriptionArn=True,
        )["SubscriptionArn"]
        return arn, {"arn": arn}

    # --- IAM ---------------------------------------------------------------------------------
    def _role(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(inputs.get("namePrefix") or logical)
        kwargs: dict[str, Any] = {
            "RoleName": name,
            "AssumeRolePolicyDocument": str(inputs["assumeRolePolicy"]),
            "Path": inputs.get("path") or "/",
        }
        if inputs.get("description"):
            kwargs["Description"] = inputs["description"]
        if inputs.get("maxSessionDuration"):
            kwargs["MaxSessionDuration"] = _int(inputs["maxSessionDuration"])
        if inputs.get("tags"):
            kwargs["Tags"] = _tags_list(inputs["tags"])
        iam = self._client("iam")
        role = iam.create_role(**kwargs)["Role"]
        for inline in inputs.get("inlinePolicies") or []:
            if inline.get("name") and inline.get("policy"):
                iam.put_role_policy(
                    RoleName=name, PolicyName=inline["name"], PolicyDocument=inline["policy"]
                )
        for policy_arn in inputs.get("managedPolicyArns") or []:
            iam.attach_role_policy(RoleName=name, PolicyArn=policy_arn)
        return name, {"name": name, "arn": role["Arn"], "uniqueId": role["RoleId"]}

    def _role_policy(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(logical)
        self._client("iam").put_role_policy(
            RoleName=inputs["role"], PolicyName=name, PolicyDocument=str(inputs["policy"])
        )
        return f"{inputs['role']}:{name}", {"name": name}

    def _policy(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(logical)
        policy = self._client("iam").create_policy(
            PolicyName=name, PolicyDocument=str(inputs["policy"]), Path=inputs.get("path") or "/"
        )["Policy"]
        return policy["Arn"], {"name": name, "arn": policy["Arn"], "policyId": policy["PolicyId"]}

    def _role_policy_attachment(self, logical: str, inputs: State) -> tuple[str, State]:
        self._client("iam").attach_role_policy(
            RoleName=inputs["role"], PolicyArn=inputs["policyArn"]
        )
        return f"{inputs['role']}-{uuid.uuid4().hex[:8]}", {}

    # --- CloudWatch ----------------------------------------------------------------------------
    def _log_group(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(logical)
        logs = self._client("logs")
        kwargs: dict[str, Any] = {"logGroupName": name}
        if inputs.get("kmsKeyId"):
            kwargs["kmsKeyId"] = inputs["kmsKeyId"]
        if inputs.get("tags"):
            kwargs["tags"] = inputs["tags"]
        logs.create_log_group(**kwargs)
        if inputs.get("retentionInDays"):
            logs.put_retention_policy(
                logGroupName=name, retentionInDays=_int(inputs["retentionInDays"])
            )
        return name, {"name": name, "arn": self._arn("logs", f"log-group:{name}")}

    def _dashboard(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs["dashboardName"]
        cloudwatch = self._client("cloudwatch")
        cloudwatch.put_dashboard(DashboardName=name, DashboardBody=inputs["dashboardBody"])
        arn = cloudwatch.get_dashboard(DashboardName=name)["DashboardArn"]
        return name, {"dashboardName": name, "dashboardArn": arn}

    def _metric_alarm(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(logical)
        kwargs: dict[str, Any] = {
            "AlarmName": name,
            "ComparisonOperator": inputs["comparisonOperator"],
            "EvaluationPeriods": _int(inputs["evaluationPeriods"]),
        }
        optional: dict[str, tuple[str, Callable[[Any], Any]]] = {
            "alarmDescription": ("AlarmDescription", str),
            "actionsEnabled": ("ActionsEnabled", bool),
            "alarmActions": ("AlarmActions", list),
            "okActions": ("OKActions", list),
            "insufficientDataActions": ("InsufficientDataActions", list),
            "datapointsToAlarm": ("DatapointsToAlarm", _int),
            "metricName": ("MetricName", str),
            "namespace": ("Namespace", str),
            "period": ("Period", _int),
            "statistic": ("Statistic", str),
            "extendedStatistic": ("ExtendedStatistic", str),
            "threshold": ("Threshold", float),
            "thresholdMetricId": ("ThresholdMetricId", str),
            "treatMissingData": ("TreatMissingData", str),
            "unit": ("Unit", str),
            "evaluateLowSampleCountPercentiles": ("EvaluateLowSampleCountPercentile", str),
        }
        for key, (param, convert) in optional.items():
            if inputs.get(key) is not None:
                kwargs[param] = convert(inputs[key])
        dimensions = {str(k): str(v) for k, v in (inputs.get("dimensions") or {}).items()}
        if dimensions:
            kwargs["Dimensions"] = [{"Name": k, "Value": v} for k, v in dimensions.items()]
        if inputs.get("metricQueries"):
            kwargs["Metrics"] = [_metric_query(q) for q in inputs["metricQueries"]]
        if inputs.get("tags"):
            kwargs["Tags"] = _tags_list(inputs["tags"])
        self._client("cloudwatch").put_metric_alarm(**kwargs)
        self.registry.alarms.append(
            AlarmConfig(
                name=name,
                metric_name=str(inputs.get("metricName") or ""),
                namespace=str(inputs.get("namespace") or ""),
                comparison_operator=inputs["comparisonOperator"],
                threshold=float(inputs.get("threshold") or 0),
                dimensions=dimensions,
                statistic=inputs.get("statistic"),
                alarm_actions=list(inputs.get("alarmActions") or []),
                ok_actions=list(inputs.get("okActions") or []),
                logical_name=logical,
            )
        )
        return name, {"name": name, "arn": self._arn("cloudwatch", f"alarm:{name}")}

    # --- Lambda ------------------------------------------------------------------------------
    def _function(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(logical)
        handler = inputs.get("handler")
        if not handler:
            raise MaterialiseError(f"function {logical}: no handler (image functions unsupported)")
        timeout = _int(inputs.get("timeout") or _LAMBDA_DEFAULT_TIMEOUT_S)
        memory = _int(inputs.get("memorySize") or _LAMBDA_DEFAULT_MEMORY_MB)
        variables = {
            str(k): str(v)
            for k, v in ((inputs.get("environment") or {}).get("variables") or {}).items()
        }
        runtime = inputs.get("runtime") or "python3.12"
        code_root: list[str] = []
        kwargs: dict[str, Any] = {
            "FunctionName": name,
            "Runtime": runtime,
            "Role": inputs["role"],
            "Handler": handler,
            "Code": {"ZipFile": self._code_zip(inputs.get("code"), code_root, handler)},
            "Timeout": timeout,
            "MemorySize": memory,
            "Environment": {"Variables": variables},
        }
        if inputs.get("architectures"):
            kwargs["Architectures"] = list(inputs["architectures"])
        if inputs.get("description"):
            kwargs["Description"] = inputs["description"]
        if (inputs.get("tracingConfig") or {}).get("mode"):
            kwargs["TracingConfig"] = {"Mode": inputs["tracingConfig"]["mode"]}
        if inputs.get("tags"):
            kwargs["Tags"] = inputs["tags"]
        # moto knows no public layers (the Powertools layer): the function is stored without
        # them and its handler runs in-process with the Powertools this venv has.
        detail = ""
        if inputs.get("layers"):
            detail = f"layers not attached in the emulator: {', '.join(inputs['layers'])}"
        function = self._client("lambda").create_function(**kwargs)
        if inputs.get("reservedConcurrentExecutions") not in (None, -1, -1.0):
            self._client("lambda").put_function_concurrency(
                FunctionName=name,
                ReservedConcurrentExecutions=_int(inputs["reservedConcurrentExecutions"]),
            )
        arn = function["FunctionArn"]
        self.registry.functions[name] = FunctionConfig(
            name=name,
            arn=arn,
            handler=handler,
            runtime=runtime,
            timeout_s=timeout,
            memory_mb=memory,
            environment=variables,
            role_arn=inputs["role"],
            logical_name=logical,
            code_root=code_root[0] if code_root else "",
            tags={str(k): str(v) for k, v in (inputs.get("tags") or {}).items()},
        )
        invoke_arn = (
            f"arn:aws:apigateway:{self.region}:lambda:path/2015-03-31/functions/{arn}/invocations"
        )
        return name, {
            "name": name,
            "arn": arn,
            "invokeArn": invoke_arn,
            "qualifiedArn": f"{arn}:$LATEST",
            "version": "$LATEST",
            "__detail__": detail,
        }

    def _code_zip(self, code: Any, code_root: list[str], handler: str = "") -> bytes:
        """The declared archive as a zip (what `pulumi up` would upload), placeholder if exotic.

        Appends to code_root the directory the archive's files come from (its import root):
        the one holding the handler's module when the archive merges several directories
        (the user's code plus the installed library's runtime).
        """
        buffer = io.BytesIO()
        written = 0
        files = _archive_files(code, self.project_dir)
        module = handler.rpartition(".")[0].replace(".", "/")
        handler_keys = (f"{module}.py", f"{module}/__init__.py")
        ordered = sorted(files, key=lambda entry: entry[0] not in handler_keys)
        for arcname, path in ordered:
            if path.as_posix().endswith("/" + arcname):
                code_root.append(path.as_posix()[: -len(arcname) - 1])
                break
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for arcname, path in files:
                written += path.stat().st_size
                if written > _MAX_ARCHIVE_BYTES:
                    raise MaterialiseError("code archive larger than 20 MiB")
                archive.write(path, arcname)
            if not archive.namelist():
                archive.writestr(
                    "EMULATOR.txt", "handler code runs in-process from the work tree\n"
                )
        return buffer.getvalue()

    def _permission(self, logical: str, inputs: State) -> tuple[str, State]:
        statement_id = inputs.get("statementId") or autoname(logical)
        kwargs: dict[str, Any] = {
            "FunctionName": inputs["function"],
            "StatementId": statement_id,
            "Action": inputs["action"],
            "Principal": inputs["principal"],
        }
        if inputs.get("sourceArn"):
            kwargs["SourceArn"] = inputs["sourceArn"]
        if inputs.get("sourceAccount"):
            kwargs["SourceAccount"] = inputs["sourceAccount"]
        self._client("lambda").add_permission(**kwargs)
        return statement_id, {"statementId": statement_id}

    def _event_invoke_config(self, logical: str, inputs: State) -> tuple[str, State]:
        """Async invocation retries + destinations: moto stores them, the scheduler driver
        applies them (local.scheduler invokes asynchronously, as Scheduler does)."""
        fn = self.registry.function(str(inputs["functionName"]))
        kwargs: dict[str, Any] = {"FunctionName": fn.name}
        if inputs.get("qualifier"):
            kwargs["Qualifier"] = inputs["qualifier"]
        if inputs.get("maximumRetryAttempts") is not None:
            fn.async_max_retries = _int(inputs["maximumRetryAttempts"])
            kwargs["MaximumRetryAttempts"] = fn.async_max_retries
        if inputs.get("maximumEventAgeInSeconds") is not None:
            fn.async_max_event_age_s = _int(inputs["maximumEventAgeInSeconds"])
            kwargs["MaximumEventAgeInSeconds"] = fn.async_max_event_age_s
        destinations = inputs.get("destinationConfig") or {}
        shaped: dict[str, Any] = {}
        for key, param in (("onFailure", "OnFailure"), ("onSuccess", "OnSuccess")):
            target = (destinations.get(key) or {}).get("destination")
            if target:
                shaped[param] = {"Destination": target}
        if shaped:
            kwargs["DestinationConfig"] = shaped
            fn.async_on_failure = shaped.get("OnFailure", {}).get("Destination")
        self._client("lambda").put_function_event_invoke_config(**kwargs)
        return fn.name, {}

    def _recursion_config(self, logical: str, inputs: State) -> tuple[str, State]:
        """moto has no PutFunctionRecursionConfig: the setting is kept in the registry."""
        fn = self.registry.function(str(inputs["functionName"]))
        fn.recursive_loop = str(inputs["recursiveLoop"])
        return fn.name, {
            "__detail__": "held by the emulator registry (moto lacks PutFunctionRecursionConfig)"
        }

    def _event_source_mapping(self, logical: str, inputs: State) -> tuple[str, State]:
        """Kept in the registry only: moto would try to run the function itself (Docker)."""
        source = str(inputs["eventSourceArn"])
        fn = self.registry.function(str(inputs["functionName"]))
        batch_size = _int(inputs.get("batchSize") or _ESM_DEFAULT_BATCH_SIZE)
        window = _int(inputs.get("maximumBatchingWindowInSeconds") or 0)
        if source.split(":")[2] == "sqs":
            self._check_sqs_mapping(source, fn, batch_size, window)
        mapping = MappingConfig(
            uuid=str(uuid.uuid4()),
            function_name=fn.name,
            event_source_arn=source,
            batch_size=batch_size,
            maximum_batching_window_s=window,
            function_response_types=list(inputs.get("functionResponseTypes") or []),
            enabled=inputs.get("enabled", True) is not False,
            maximum_concurrency=(
                _int(inputs["scalingConfig"]["maximumConcurrency"])
                if (inputs.get("scalingConfig") or {}).get("maximumConcurrency")
                else None
            ),
            logical_name=logical,
        )
        self.registry.mappings.append(mapping)
        return mapping.uuid, {
            "uuid": mapping.uuid,
            "functionArn": fn.arn,
            "state": "Enabled" if mapping.enabled else "Disabled",
            "__detail__": "held by the emulator poller (not in moto)",
        }

    def _check_sqs_mapping(
        self, queue_arn: str, fn: FunctionConfig, batch: int, window: int
    ) -> None:
        """The validation Lambda's CreateEventSourceMapping performs for an SQS source."""
        name = queue_arn.split(":")[5]
        url = queue_url_from_arn(queue_arn, self.emulator.endpoint_url)
        attributes = self._client("sqs").get_queue_attributes(
            QueueUrl=url, AttributeNames=["VisibilityTimeout", "FifoQueue"]
        )["Attributes"]
        visibility = int(attributes["VisibilityTimeout"])
        if visibility < fn.timeout_s:
            raise MaterialiseError(
                f"InvalidParameterValueException: queue {name} visibility timeout {visibility} s "
                f"is less than function {fn.name} timeout {fn.timeout_s} s"
            )
        if attributes.get("FifoQueue") == "true" and batch > 10:
            raise MaterialiseError(f"batch size {batch} > 10 on FIFO queue {name}")
        if batch > 10 and window < 1:
            raise MaterialiseError(f"batch size {batch} > 10 needs a batching window >= 1 s")

    # --- KMS -------------------------------------------------------------------------------------
    def _kms_key(self, logical: str, inputs: State) -> tuple[str, State]:
        kwargs: dict[str, Any] = {
            "KeyUsage": inputs.get("keyUsage") or "ENCRYPT_DECRYPT",
            "KeySpec": inputs.get("customerMasterKeySpec") or "SYMMETRIC_DEFAULT",
        }
        if inputs.get("description"):
            kwargs["Description"] = inputs["description"]
        if inputs.get("policy"):
            kwargs["Policy"] = str(inputs["policy"])
        if inputs.get("tags"):
            kwargs["Tags"] = _tags_list(inputs["tags"], "TagKey", "TagValue")
        kms = self._client("kms")
        key = kms.create_key(**kwargs)["KeyMetadata"]
        if inputs.get("enableKeyRotation"):
            kms.enable_key_rotation(KeyId=key["KeyId"])
        return key["KeyId"], {"arn": key["Arn"], "keyId": key["KeyId"]}

    def _kms_alias(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or f"alias/{autoname(logical)}"
        self._client("kms").create_alias(AliasName=name, TargetKeyId=inputs["targetKeyId"])
        return name, {"name": name, "arn": self._arn("kms", name)}

    # --- Scheduler ---------------------------------------------------------------------------
    def _schedule_group(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(logical)
        arn = self._client("scheduler").create_schedule_group(Name=name)["ScheduleGroupArn"]
        return name, {"name": name, "arn": arn}

    def _schedule(self, logical: str, inputs: State) -> tuple[str, State]:
        name = inputs.get("name") or autoname(logical)
        group = inputs.get("groupName") or "default"
        target_in = inputs["target"]
        target: dict[str, Any] = {"Arn": target_in["arn"], "RoleArn": target_in["roleArn"]}
        if target_in.get("input") is not None:
            target["Input"] = target_in["input"]
        retry = target_in.get("retryPolicy") or {}
        if retry:
            target["RetryPolicy"] = {
                "MaximumEventAgeInSeconds": _int(retry.get("maximumEventAgeInSeconds", 86400)),
                "MaximumRetryAttempts": _int(retry.get("maximumRetryAttempts", 185)),
            }
        dlq = (target_in.get("deadLetterConfig") or {}).get("arn")
        if dlq:
            target["DeadLetterConfig"] = {"Arn": dlq}
        window_in = inputs.get("flexibleTimeWindow") or {"mode": "OFF"}
        window: dict[str, Any] = {"Mode": window_in["mode"]}
        if window_in.get("maximumWindowInMinutes"):
            window["MaximumWindowInMinutes"] = _int(window_in["maximumWindowInMinutes"])
        kwargs: dict[str, Any] = {
            "Name": name,
            "GroupName": group,
            "ScheduleExpression": inputs["scheduleExpression"],
            "FlexibleTimeWindow": window,
            "Target": target,
            "State": inputs.get("state") or "ENABLED",
        }
        if inputs.get("scheduleExpressionTimezone"):
            kwargs["ScheduleExpressionTimezone"] = inputs["scheduleExpressionTimezone"]
        if inputs.get("description"):
            kwargs["Description"] = inputs["description"]
        arn = self._client("scheduler").create_schedule(**kwargs)["ScheduleArn"]
        self.registry.schedules[name] = ScheduleConfig(
            name=name,
            arn=arn,
            group=group,
            expression=inputs["scheduleExpression"],
            timezone=inputs.get("scheduleExpressionTimezone") or "UTC",
            target_arn=target_in["arn"],
            target_input=target_in.get("input"),
            role_arn=target_in["roleArn"],
            retry_policy=target.get("RetryPolicy", {}),
            dead_letter_arn=dlq,
            flexible_time_window=window,
            state=kwargs["State"],
            logical_name=logical,
        )
        return f"{group}/{name}", {"name": name, "arn": arn}


def _metric_query(query: dict[str, Any]) -> dict[str, Any]:
    shaped: dict[str, Any] = {"Id": query["id"]}
    for key, param in (
        ("expression", "Expression"),
        ("label", "Label"),
        ("accountId", "AccountId"),
    ):
        if query.get(key):
            shaped[param] = query[key]
    if query.get("returnData") is not None:
        shaped["ReturnData"] = bool(query["returnData"])
    if query.get("period"):
        shaped["Period"] = _int(query["period"])
    metric = query.get("metric")
    if metric:
        shaped["MetricStat"] = {
            "Metric": {
                "MetricName": metric["metricName"],
                "Namespace": metric.get("namespace", ""),
                "Dimensions": [
                    {"Name": k, "Value": str(v)}
                    for k, v in (metric.get("dimensions") or {}).items()
                ],
            },
            "Period": _int(metric["period"]),
            "Stat": metric["stat"],
        }
        if metric.get("unit"):
            shaped["MetricStat"]["Unit"] = metric["unit"]
    return shaped


def _archive_files(code: Any, project_dir: Path) -> list[tuple[str, Path]]:
    """(name in zip, file) pairs of a Pulumi FileArchive / AssetArchive / FileAsset tree."""
    files: list[tuple[str, Path]] = []

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, pulumi.FileArchive):
            root = (project_dir / node.path).resolve()
            if root.is_dir():
                for path in sorted(root.rglob("*")):
                    if path.is_file() and "__pycache__" not in path.parts:
                        files.append((f"{prefix}{path.relative_to(root).as_posix()}", path))
        elif isinstance(node, pulumi.FileAsset):
            path = (project_dir / node.path).resolve()
            if path.is_file():
                files.append((prefix.rstrip("/") or path.name, path))
        elif isinstance(node, pulumi.AssetArchive):
            for name, child in node.assets.items():
                walk(
                    child,
                    f"{prefix}{name}/"
                    if not isinstance(child, pulumi.FileAsset)
                    else f"{prefix}{name}",
                )

    walk(code, "")
    return files
