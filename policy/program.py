"""Run any Pulumi Python project in-process under Pulumi mocks and record every registration.

The Pulumi CLI cannot run here (and CI has no AWS account), so this module plays the engine's
part for one program run: it reads the project the way the CLI does, runs its program against
`pulumi.runtime` mocks, and records what the program registered, with the same wire data the
engine would hold (inputs, outputs, parent, dependencies, property dependencies, source
positions). The offline policy check (`policy.check`) feeds these records to the policy pack;
a preview printer or an emulator deploy can reuse it unchanged by passing their own mocks.

Public API
----------
``load_project(project_dir) -> ProjectSpec``
    Parses ``Pulumi.yaml``: ``name``, ``main`` (a file or a directory holding ``__main__.py``)
    and the project-level ``config:`` schema defaults.
``load_stack_config(project, stack) -> StackConfig``
    Merges the schema defaults with ``Pulumi.<stack>.yaml``'s ``config:`` (keys without a
    namespace belong to the project; ``aws:region`` and other provider keys are kept;
    structured values are JSON-encoded as the CLI does; ``secure:`` values cannot be decrypted
    here, so they become the placeholder ``SECRET_PLACEHOLDER`` and are marked secret).
``run_program(project_dir, stack, *, preview=False, mocks=None, new_resource=None,
config_overrides=None) -> ProgramRun``
    Runs the program once and returns every registration. ``preview=True`` runs it as
    ``pulumi preview`` would for new resources: computed outputs (ARNs, URLs, ids) are unknown.
    ``mocks`` replaces the default ``AwsMocks`` entirely; ``new_resource`` is a lighter hook:
    ``callback(args: MockResourceArgs, default_outputs: dict) -> (id, outputs) | None`` is
    called with what the default mocks computed; return ``(id, outputs)`` to replace it
    (e.g. after materialising the resource through boto3) or None to keep it.
    Raises ``ProgramError`` when the project is malformed or the program fails.
``ProgramRun``
    ``resources`` (``RecordedResource`` in registration order, the root stack first),
    ``by_urn``, ``stack_outputs``, ``project``, ``stack``, ``preview``, ``config``.
``RecordedResource``
    ``type``, ``name`` (logical name), ``urn``, ``id``, ``custom``, ``parent``,
    ``dependencies``, ``property_dependencies`` (top-level property -> URNs), ``provider``,
    ``inputs`` / ``outputs`` (plain Python values; unknowns are ``UNKNOWN``),
    ``inputs_struct`` / ``outputs_struct`` (the protobuf ``Struct`` wire form with Pulumi's
    unknown sentinels, exactly what the engine sends to an analyzer), ``source_file`` /
    ``source_line`` (where the program declared it) and ``component_file`` /
    ``component_line`` (for a component's child: where the outermost enclosing component was
    instantiated, i.e. the line of the user's program), ``read`` (registered by
    ``Resource.get``).
``AwsMocks``
    The default mocks: echo inputs, auto-name like the AWS provider (``<logical>-<7 hex>``,
    ``.fifo`` kept for FIFO queues), and add plausible ``arn``/``url``/``id``/... outputs for
    common AWS types; answers common invokes (``getCallerIdentity``, ``getRegion``,
    ``getPartition``, ``getAvailabilityZones``, ``iam.getPolicyDocument`` rendered to real
    IAM JSON, and by-name lookups such as ``sqs.get_queue``). ``region`` comes from
    ``aws:region`` (or an explicit ``aws.Provider``'s region). Override points for
    subclasses: ``computed_outputs(typ, name, inputs, region)`` and ``invoke_result(args)``.
    Existing resources read with ``Resource.get`` keep their settings unknown (never AWS
    defaults); a ``pulumi.StackReference``'s outputs are unknown in a preview and absent
    at ``up`` (``require_output`` then yields None instead of failing the program).
``RecordingMonitor``
    A ``MockMonitor`` subclass that records ``RegisterResource`` / ``ReadResource`` requests.

Runs are isolated from each other: each executes in a fresh ``contextvars.Context`` (Pulumi's
settings, config and root stack live in context variables), with the project directory as
working directory and first ``sys.path`` entry, and modules the program imported are dropped
afterwards so the next project with equally named modules gets its own.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import runpy
import sys
import sysconfig
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import unquote, urlparse

import pulumi
import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from policy.values import UNKNOWN, UNKNOWN_STRING_SENTINEL, is_unknown

SECRET_PLACEHOLDER = "[secret: encrypted in the stack file, not decrypted offline]"
DEFAULT_ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"
STACK_TYPE = "pulumi:pulumi:Stack"


class ProgramError(Exception):
    """The project is malformed or its program raised; the message says which and why."""


# --- project and stack files ----------------------------------------------------------------


@dataclass(frozen=True)
class ProjectSpec:
    directory: Path
    name: str
    main: Path  # the __main__.py (or main file) to execute
    config_defaults: dict[str, Any]  # fully qualified key -> default value


@dataclass(frozen=True)
class StackConfig:
    values: dict[str, str]  # fully qualified key -> string value (structured: JSON)
    secret_keys: list[str]

    @property
    def aws_region(self) -> str:
        return self.values.get("aws:region") or os.environ.get("AWS_REGION") or DEFAULT_REGION


def _qualify(key: str, project: str) -> str:
    return key if ":" in key else f"{project}:{key}"


def _config_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    # The CLI hands structured and non-string config to programs JSON-encoded.
    return json.dumps(value)


def load_project(project_dir: str | os.PathLike[str]) -> ProjectSpec:
    directory = Path(project_dir).resolve()
    if not directory.is_dir():
        raise ProgramError(f"project directory {directory} does not exist")
    project_file = next(
        (directory / n for n in ("Pulumi.yaml", "Pulumi.yml") if (directory / n).exists()), None
    )
    if project_file is None:
        raise ProgramError(f"{directory} has no Pulumi.yaml: not a Pulumi project")
    try:
        doc = yaml.safe_load(project_file.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ProgramError(f"{project_file} is not valid YAML: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not doc["name"]:
        raise ProgramError(f"{project_file} must set a string `name`")
    runtime = doc.get("runtime")
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if runtime_name not in (None, "python"):
        raise ProgramError(f"{project_file}: runtime {runtime_name!r} is not python")
    name: str = doc["name"]
    main = directory / str(doc.get("main") or ".")
    if main.is_dir():
        main = main / "__main__.py"
    if not main.is_file():
        raise ProgramError(f"{project_file}: program {main} does not exist")
    defaults: dict[str, Any] = {}
    schema = doc.get("config") or {}
    if not isinstance(schema, dict):
        raise ProgramError(f"{project_file}: `config` must be a mapping")
    for key, spec in schema.items():
        if isinstance(spec, dict) and ("default" in spec or "value" in spec):
            defaults[_qualify(key, name)] = spec.get("default", spec.get("value"))
        elif not isinstance(spec, dict):
            defaults[_qualify(key, name)] = spec  # short form `key: value`
    return ProjectSpec(directory, name, main, defaults)


def load_stack_config(project: ProjectSpec, stack: str) -> StackConfig:
    values = {k: _config_string(v) for k, v in project.config_defaults.items()}
    secret_keys: list[str] = []
    stack_file = project.directory / f"Pulumi.{stack}.yaml"
    if stack_file.exists():
        try:
            doc = yaml.safe_load(stack_file.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ProgramError(f"{stack_file} is not valid YAML: {exc}") from exc
        config = doc.get("config") or {} if isinstance(doc, dict) else {}
        if not isinstance(config, dict):
            raise ProgramError(f"{stack_file}: `config` must be a mapping")
        for key, value in config.items():
            qualified = _qualify(str(key), project.name)
            if isinstance(value, dict) and set(value) == {"secure"}:
                values[qualified] = SECRET_PLACEHOLDER
                secret_keys.append(qualified)
            else:
                values[qualified] = _config_string(value)
    return StackConfig(values, secret_keys)


# --- default AWS mocks ------------------------------------------------------------------------

# Resource types whose physical name the AWS provider generates from the logical name, and the
# property that holds it.
_AUTONAME_PROPERTY: dict[str, str] = {
    "aws:sqs/queue:Queue": "name",
    "aws:sns/topic:Topic": "name",
    "aws:lambda/function:Function": "name",
    "aws:dynamodb/table:Table": "name",
    "aws:iam/role:Role": "name",
    "aws:iam/policy:Policy": "name",
    "aws:iam/rolePolicy:RolePolicy": "name",
    "aws:cloudwatch/metricAlarm:MetricAlarm": "name",
    "aws:cloudwatch/eventRule:EventRule": "name",
    "aws:cloudwatch/eventBus:EventBus": "name",
    "aws:cloudwatch/logGroup:LogGroup": "name",
    "aws:scheduler/schedule:Schedule": "name",
    "aws:scheduler/scheduleGroup:ScheduleGroup": "name",
    "aws:s3/bucket:Bucket": "bucket",
    "aws:s3/bucketV2:BucketV2": "bucket",
    "aws:kms/alias:Alias": "name",
}


def _suffix(urn: str) -> str:
    return hashlib.sha1(urn.encode()).hexdigest()[:7]


def _strip_unknowns(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_unknowns(v) for k, v in value.items() if not _is_sdk_unknown(v)}
    if isinstance(value, list):
        return [_strip_unknowns(v) for v in value if not _is_sdk_unknown(v)]
    return value


def _is_sdk_unknown(value: Any) -> bool:
    return type(value).__name__ == "Unknown" or is_unknown(value)


class AwsMocks(pulumi.runtime.Mocks):
    """Plausible AWS outputs: inputs echoed, provider-style auto-names, ARNs/URLs/ids.

    In preview mode only what a real preview of a new resource knows is returned: the inputs
    and the auto-name (the provider's Check computes it before any API call); ARNs, URLs and
    ids are left out, which the Pulumi SDK turns into unknown outputs.
    """

    def __init__(
        self,
        *,
        preview: bool = False,
        region: str = DEFAULT_REGION,
        account_id: str = DEFAULT_ACCOUNT_ID,
    ) -> None:
        self.preview = preview
        self.region = region
        self.account_id = account_id
        self._provider_regions: dict[str, str] = {}

    # Subclasses (or the `new_resource` hook of run_program) may override these two.
    def computed_outputs(
        self, typ: str, name: str, inputs: dict[str, Any], region: str
    ) -> tuple[str, dict[str, Any]]:
        """The id and the provider-computed outputs of a created resource."""
        acct, part = self.account_id, "aws"
        service = typ.split(":")[1].split("/")[0] if typ.count(":") >= 2 else "resource"
        n = str(inputs.get(_AUTONAME_PROPERTY.get(typ, "name"), name))
        if typ == "aws:sqs/queue:Queue":
            url = f"https://sqs.{region}.amazonaws.com/{acct}/{n}"
            return url, {"arn": f"arn:{part}:sqs:{region}:{acct}:{n}", "url": url}
        if typ == "aws:sns/topic:Topic":
            arn = f"arn:{part}:sns:{region}:{acct}:{n}"
            return arn, {"arn": arn}
        if typ == "aws:lambda/function:Function":
            arn = f"arn:{part}:lambda:{region}:{acct}:function:{n}"
            return n, {
                "arn": arn,
                "qualifiedArn": f"{arn}:$LATEST",
                "invokeArn": f"arn:{part}:apigateway:{region}:lambda:path/2015-03-31/functions/"
                f"{arn}/invocations",
                "version": "$LATEST",
            }
        if typ == "aws:lambda/alias:Alias":
            fn = str(inputs.get("functionName", "function"))
            fn_arn = (
                fn if fn.startswith("arn:") else f"arn:{part}:lambda:{region}:{acct}:function:{fn}"
            )
            return f"{fn_arn}:{n}", {"arn": f"{fn_arn}:{n}"}
        if typ == "aws:lambda/eventSourceMapping:EventSourceMapping":
            uuid = hashlib.md5(name.encode()).hexdigest()
            return uuid, {"uuid": uuid, "state": "Enabled"}
        if typ == "aws:dynamodb/table:Table":
            arn = f"arn:{part}:dynamodb:{region}:{acct}:table/{n}"
            extra = {"streamArn": f"{arn}/stream/2024-01-01T00:00:00.000"}
            return n, {"arn": arn, **(extra if inputs.get("streamEnabled") else {})}
        if typ == "aws:iam/role:Role":
            return n, {"arn": f"arn:{part}:iam::{acct}:role/{n}", "uniqueId": f"AROA{_suffix(n)}"}
        if typ == "aws:iam/policy:Policy":
            arn = f"arn:{part}:iam::{acct}:policy/{n}"
            return arn, {"arn": arn, "policyId": f"ANPA{_suffix(n)}"}
        if typ == "aws:cloudwatch/metricAlarm:MetricAlarm":
            return n, {"arn": f"arn:{part}:cloudwatch:{region}:{acct}:alarm:{n}"}
        if typ == "aws:scheduler/schedule:Schedule":
            group = str(inputs.get("groupName") or "default")
            return f"{group}/{n}", {
                "arn": f"arn:{part}:scheduler:{region}:{acct}:schedule/{group}/{n}",
                "groupName": group,
            }
        if typ in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"):
            return n, {"arn": f"arn:{part}:s3:::{n}", "bucketDomainName": f"{n}.s3.amazonaws.com"}
        if typ == "aws:kms/key:Key":
            key_id = hashlib.md5(name.encode()).hexdigest()
            return key_id, {"arn": f"arn:{part}:kms:{region}:{acct}:key/{key_id}", "keyId": key_id}
        if typ.startswith("pulumi:providers:"):
            return f"{name}-provider-id", {}
        if typ.startswith("aws:"):
            return f"{n}-{_suffix(name)}", {"arn": f"arn:{part}:{service}:{region}:{acct}:{n}"}
        return f"{n}-id", {}

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        inputs = _strip_unknowns(dict(args.inputs))
        if args.typ == "pulumi:providers:aws" and isinstance(inputs.get("region"), str):
            self._provider_regions[args.name] = inputs["region"]
        if args.custom is False:  # a component: no id, no cloud state
            return "", {}
        outputs = dict(inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            # Another stack's outputs cannot be read offline: unknown in a preview (callbacks
            # over them do not run, as for any computed value), absent at `up`.
            return str(inputs.get("name", args.name)), {
                "name": inputs.get("name", args.name),
                "outputs": UNKNOWN_STRING_SENTINEL if self.preview else {},
                "secretOutputNames": [],
            }
        if args.resource_id and args.typ == "aws:sqs/queue:Queue" and "name" not in outputs:
            outputs["name"] = args.resource_id.rstrip("/").rsplit("/", 1)[-1]
        name_prop = _AUTONAME_PROPERTY.get(args.typ)
        if name_prop and not isinstance(outputs.get(name_prop), str):
            prefix = outputs.get("namePrefix") or outputs.get(f"{name_prop}Prefix")
            base = (
                f"{prefix}{_suffix(args.name)}" if prefix else f"{args.name}-{_suffix(args.name)}"
            )
            if args.typ == "aws:sqs/queue:Queue" and outputs.get("fifoQueue") is True:
                base += ".fifo"
            outputs[name_prop] = base
        if self.preview:
            return "", outputs
        region = self._region_for(args.provider)
        resource_id, computed = self.computed_outputs(args.typ, args.name, outputs, region)
        if args.resource_id:  # a read/import keeps the id it was given
            resource_id = args.resource_id
        return resource_id, {**computed, **outputs, "id": resource_id}

    def _region_for(self, provider_ref: str | None) -> str:
        # Provider references are "<urn>::<id>"; the provider's logical name ends the URN.
        if provider_ref:
            urn = provider_ref.rsplit("::", 1)[0]
            region = self._provider_regions.get(urn.rsplit("::", 1)[-1])
            if region:
                return region
        return self.region

    def call(self, args: MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        # The mock monitor iterates the failures: an empty list, never None.
        return self.invoke_result(args), []

    def invoke_result(self, args: MockCallArgs) -> dict[str, Any]:
        """Common data sources; any other invoke echoes its arguments."""
        token, given = args.token, dict(args.args)
        acct, region = self.account_id, self.region
        if token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                "accountId": acct,
                "arn": f"arn:aws:iam::{acct}:user/offline",
                "userId": "AIDAOFFLINE",
                "id": acct,
            }
        if token == "aws:index/getRegion:getRegion":
            return {"name": region, "region": region, "id": region, "description": region}
        if token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}
        if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            zones = [f"{region}{z}" for z in "abc"]
            return {"names": zones, "zoneIds": zones, "id": region}
        if token == "aws:iam/getPolicyDocument:getPolicyDocument":
            doc = json.dumps(policy_document_from_args(given), indent=2)
            return {**given, "json": doc, "minifiedJson": json.dumps(json.loads(doc)), "id": "doc"}
        name = given.get("name") or given.get("functionName") or given.get("queueName")
        if isinstance(name, str) and token.startswith("aws:") and "/get" in token:
            # An existing resource looked up by name: the ARN (and URL) it would have.
            service = token.split(":")[1].split("/")[0]
            typ = {
                "sqs": "aws:sqs/queue:Queue",
                "sns": "aws:sns/topic:Topic",
                "lambda": "aws:lambda/function:Function",
                "dynamodb": "aws:dynamodb/table:Table",
                "iam": "aws:iam/role:Role",
            }.get(service, f"aws:{service}/x:X")
            resource_id, computed = self.computed_outputs(typ, name, {"name": name}, region)
            return {**computed, **given, "id": resource_id}
        return given


def policy_document_from_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The IAM JSON that aws.iam.get_policy_document would render for these arguments."""
    statements = []
    for st in args.get("statements") or []:
        out: dict[str, Any] = {}
        if st.get("sid"):
            out["Sid"] = st["sid"]
        out["Effect"] = st.get("effect") or "Allow"
        for src, dst in (
            ("actions", "Action"),
            ("notActions", "NotAction"),
            ("resources", "Resource"),
            ("notResources", "NotResource"),
        ):
            if st.get(src):
                items = list(st[src])
                out[dst] = items[0] if len(items) == 1 else items
        for src, dst in (("principals", "Principal"), ("notPrincipals", "NotPrincipal")):
            if st.get(src):
                principal: dict[str, Any] = {}
                for p in st[src]:
                    ids = list(p.get("identifiers") or [])
                    principal[p.get("type", "AWS")] = ids[0] if len(ids) == 1 else ids
                out[dst] = principal
        if st.get("conditions"):
            cond: dict[str, dict[str, Any]] = {}
            for c in st["conditions"]:
                values = list(c.get("values") or [])
                cond.setdefault(c["test"], {})[c["variable"]] = (
                    values[0] if len(values) == 1 else values
                )
            out["Condition"] = cond
        statements.append(out)
    return {"Version": args.get("version") or "2012-10-17", "Statement": statements}


# --- recording -------------------------------------------------------------------------------


@dataclass
class RecordedResource:
    type: str
    name: str
    urn: str
    id: str
    custom: bool
    parent: str | None
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    provider: str | None
    inputs_struct: struct_pb2.Struct
    outputs_struct: struct_pb2.Struct
    source_file: str | None = None
    source_line: int | None = None
    component_file: str | None = None
    component_line: int | None = None
    read: bool = False  # registered by `Resource.get` (an existing resource)

    @property
    def inputs(self) -> dict[str, Any]:
        return struct_to_plain(self.inputs_struct)

    @property
    def outputs(self) -> dict[str, Any]:
        return struct_to_plain(self.outputs_struct)


def struct_to_plain(struct: struct_pb2.Struct) -> dict[str, Any]:
    return _plain(json_format.MessageToDict(struct))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if is_unknown(value):
        return UNKNOWN
    return value


def _source_of(request: Any) -> tuple[str | None, int | None]:
    if not request.HasField("sourcePosition") or not request.sourcePosition.uri:
        return None, None
    parsed = urlparse(request.sourcePosition.uri)
    path = unquote(parsed.path) if parsed.scheme == "file" else request.sourcePosition.uri
    return path, request.sourcePosition.line or None


_READ_UNKNOWN_KEYS = (
    "visibilityTimeoutSeconds",
    "messageRetentionSeconds",
    "redrivePolicy",
    "fifoQueue",
    "policy",
    "kmsMasterKeyId",
    "sqsManagedSseEnabled",
    "timeout",
    "ttl",
    "pointInTimeRecovery",
    "functionResponseTypes",
)


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`base` (the inputs, unknowns included) plus what `over` adds; inputs win."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        elif key not in merged:
            merged[key] = value
    return merged


class RecordingMonitor(MockMonitor):
    """MockMonitor that keeps every registration request (MockResourceArgs has no parent,
    dependencies or source position; the request does)."""

    def __init__(self, mocks: pulumi.runtime.Mocks, *, preview: bool = False) -> None:
        super().__init__(mocks)
        self.preview = preview
        self.recorded: list[RecordedResource] = []
        self.stack_outputs: dict[str, Any] = {}

    def _record(self, request: Any, response: Any, *, read: bool) -> None:
        file, line = _source_of(request)
        inputs = struct_pb2.Struct()
        inputs.CopyFrom(request.properties if read else request.object)
        urn = response.urn
        resource_id = self.resources[urn].id if urn in self.resources else ""
        custom = True if read else bool(request.custom)
        outputs = struct_pb2.Struct()
        if self.preview and custom and not read:
            # A preview of a new resource knows its inputs (unknown ones stay unknown) plus
            # what the provider's Check adds (auto-names); what the provider computes on
            # create is unknown, which the engine shows the analyzer as unknown sentinels.
            outputs.update(
                _deep_merge(
                    json_format.MessageToDict(inputs), json_format.MessageToDict(response.object)
                )
            )
            computed = (
                ("arn", "id", "url") if request.type == "aws:sqs/queue:Queue" else ("arn", "id")
            )
            for key in computed:
                if key not in outputs.fields:
                    outputs[key] = UNKNOWN_STRING_SENTINEL
        else:
            outputs.CopyFrom(response.properties if read else response.object)
        if read:
            # `Resource.get` reads an existing resource whose settings only the cloud knows:
            # they are unknown here, never the AWS defaults.
            for key in _READ_UNKNOWN_KEYS:
                if key not in outputs.fields:
                    outputs[key] = UNKNOWN_STRING_SENTINEL
        property_dependencies = (
            {} if read else {k: list(v.urns) for k, v in request.propertyDependencies.items()}
        )
        self.recorded.append(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=urn,
                id=resource_id or "",
                custom=custom,
                parent=request.parent or None,
                dependencies=[] if read else list(request.dependencies),
                property_dependencies=property_dependencies,
                provider=request.provider or None,
                inputs_struct=inputs,
                outputs_struct=outputs,
                source_file=file,
                source_line=line,
                read=read,
            )
        )

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        self._record(request, response, read=False)
        return response

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)
        self._record(request, response, read=True)
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if request.urn.split("::")[2:3] == [STACK_TYPE]:
            self.stack_outputs.update(struct_to_plain(request.outputs))
        return super().RegisterResourceOutputs(request)


@dataclass
class ProgramRun:
    project: ProjectSpec
    stack: str
    preview: bool
    config: StackConfig
    resources: list[RecordedResource]
    stack_outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def by_urn(self) -> dict[str, RecordedResource]:
        return {r.urn: r for r in self.resources}


def _link_components(resources: list[RecordedResource], project_dir: Path) -> None:
    by_urn = {r.urn: r for r in resources}
    for r in resources:
        if r.type == STACK_TYPE:
            r.source_file = r.source_line = None  # the SDK's own frame, not user code
            continue
        # The outermost component below the stack is where the user's program instantiated
        # the whole subtree: that is the line a reviewer changes.
        outer: RecordedResource | None = None
        parent = by_urn.get(r.parent or "")
        while parent is not None and parent.type != STACK_TYPE:
            outer = parent
            parent = by_urn.get(parent.parent or "")
        if outer is not None:
            r.component_file, r.component_line = outer.source_file, outer.source_line


def _resolve_outputs(value: Any) -> Any:
    """Stack exports as plain values (Outputs awaited; unknowns become UNKNOWN)."""

    async def resolve() -> Any:
        out = pulumi.Output.from_input(value)
        known = await out.is_known()
        return (await out.future()) if known else UNKNOWN

    try:
        return _sync_await(resolve())
    except Exception:  # an export that cannot be resolved offline is reported as unknown
        return UNKNOWN


NewResourceHook = Callable[[MockResourceArgs, dict[str, Any]], "tuple[str | None, dict] | None"]


class _HookedMocks(pulumi.runtime.Mocks):
    def __init__(self, base: pulumi.runtime.Mocks, hook: NewResourceHook) -> None:
        self.base, self.hook = base, hook

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        default_id, default_outputs = self.base.new_resource(args)
        result = self.hook(args, default_outputs)
        return (default_id, default_outputs) if result is None else result

    def call(self, args: MockCallArgs) -> Any:
        return self.base.call(args)


def _local_module_names(program_dir: Path) -> set[str]:
    """Top-level module names the program directory provides (`x.py`, packages `x/`)."""
    names: set[str] = set()
    for entry in program_dir.iterdir():
        if entry.suffix == ".py" and entry.stem != "__main__":
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier() and any(entry.glob("*.py")):
            names.add(entry.name)
    return names


_INSTALLED_ROOTS = tuple(
    str(Path(p).resolve())
    for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]}
)


def _is_installed(module: Any) -> bool:
    """A stdlib or site-packages module (never hidden: the SDK itself depends on them)."""
    file = getattr(module, "__file__", None)
    if not file:
        return True  # builtins and namespace packages without a file
    resolved = str(Path(file).resolve())
    return "site-packages" in resolved or resolved.startswith(_INSTALLED_ROOTS)


def run_program(
    project_dir: str | os.PathLike[str],
    stack: str,
    *,
    preview: bool = False,
    mocks: pulumi.runtime.Mocks | None = None,
    new_resource: NewResourceHook | None = None,
    config_overrides: Mapping[str, Any] | None = None,
) -> ProgramRun:
    project = load_project(project_dir)
    config = load_stack_config(project, stack)
    if config_overrides:
        config.values.update(
            {_qualify(k, project.name): _config_string(v) for k, v in config_overrides.items()}
        )
    base = mocks or AwsMocks(preview=preview, region=config.aws_region)
    effective: pulumi.runtime.Mocks = _HookedMocks(base, new_resource) if new_resource else base
    monitor = RecordingMonitor(effective, preview=preview)

    def execute() -> None:
        pulumi.runtime.set_mocks(
            effective, project=project.name, stack=stack, preview=preview, monitor=monitor
        )
        pulumi.runtime.set_all_config(dict(config.values), list(config.secret_keys))
        SETTINGS.rpc_manager.clear()
        SETTINGS.outputs.clear()

        def program() -> None:
            runpy.run_path(str(project.main), run_name="__main__")

        # Offline no stack reference has outputs: `require_output` must not fail the program
        # for that (it yields None at `up` and an unknown in a preview), also in callbacks.
        with mock.patch.object(
            pulumi.StackReference, "require_output", pulumi.StackReference.get_output
        ):
            _sync_await(run_pulumi_func(program))
        root = pulumi.runtime.get_root_resource()
        exports = getattr(root, "outputs", None) or {}
        for key, value in exports.items():
            monitor.stack_outputs.setdefault(key, _resolve_outputs(value))

    program_dir = str(project.main.parent)
    # The program's own modules (a `policy.py`, a `components/` package) must win over equally
    # named modules this process already imported (this pack is `policy`): hide those for the
    # run, as a fresh `pulumi` language host would never have loaded them.
    shadowed = _local_module_names(project.main.parent)
    stashed = {
        n: m for n, m in sys.modules.items() if n.split(".")[0] in shadowed and not _is_installed(m)
    }
    for n in stashed:
        del sys.modules[n]
    modules_before = set(sys.modules)
    cwd, path0, argv = os.getcwd(), list(sys.path), list(sys.argv)
    try:
        os.chdir(project.directory)
        sys.path.insert(0, program_dir)
        sys.argv = [str(project.main)]
        contextvars.Context().run(execute)
    except ProgramError:
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        detail = "".join(traceback.format_exception(exc)).rstrip()
        raise ProgramError(
            f"program {project.main} (stack {stack}) failed: {type(exc).__name__}: {exc}\n{detail}"
        ) from exc
    finally:
        os.chdir(cwd)
        sys.path[:] = path0
        sys.argv = argv
        for mod_name in set(sys.modules) - modules_before:
            module_file = getattr(sys.modules[mod_name], "__file__", None) or ""
            if module_file.startswith(str(project.directory) + os.sep) and (
                "site-packages" not in module_file
            ):
                del sys.modules[mod_name]
        for mod_name in [n for n in sys.modules if n.split(".")[0] in stashed]:
            del sys.modules[mod_name]
        sys.modules.update(stashed)
    _link_components(monitor.recorded, project.directory)
    return ProgramRun(project, stack, preview, config, monitor.recorded, monitor.stack_outputs)
