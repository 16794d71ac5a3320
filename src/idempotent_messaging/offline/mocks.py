"""The default offline mocks: what AWS (and any other provider) would answer, typed and regional.

``AwsMocks`` echoes inputs, auto-names like the AWS provider (``<logical>-<7 hex>``, ``.fifo``
kept for FIFO queues), returns the ids/ARNs/URLs of common AWS types in the resource's region
(pulumi-aws v7's per-resource ``region`` argument, else its explicit ``aws.Provider``'s region,
else ``aws:region``), and fills every other computed output from the provider SDK's typed
declarations (``policy.offline.typed``). Invokes are answered from the function's result type,
with ``getCallerIdentity``, ``getRegion``, ``getPartition``, ``getAvailabilityZones`` and
``iam.getPolicyDocument`` (rendered to real IAM JSON) exact; an answers file pins any other.

In preview mode only what a real preview of a new resource knows is returned: the inputs and
the auto-name (the provider's Check computes it before any API call); everything the provider
computes on create is left out, which the Pulumi SDK turns into unknown outputs.

Override points for subclasses: ``computed_outputs(typ, name, inputs, region)`` and
``invoke_result(args)``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockCallArgs, MockResourceArgs

from ..rules.values import UNKNOWN_STRING_SENTINEL, is_unknown
from . import typed
from .answers import Answers
from .project import DEFAULT_ACCOUNT_ID, DEFAULT_REGION

SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"

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
    """Inputs as a provider's Check echoes them: unknown values left out (the SDK then shows
    them as unknown outputs in a preview); a secret whose value is unknown stays a secret of
    an unknown, never an empty secret wrapper."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG_KEY) == SECRET_SIG:
            inner = value.get("value")
            return {
                SECRET_SIG_KEY: SECRET_SIG,
                "value": UNKNOWN_STRING_SENTINEL
                if inner is None or _is_sdk_unknown(inner)
                else _strip_unknowns(inner),
            }
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
        answers: Answers | None = None,
    ) -> None:
        self.preview = preview
        self.region = region
        self.account_id = account_id
        self.answers = answers or Answers()
        self._provider_regions: dict[str, str] = {}  # provider logical name -> its region

    # Subclasses (or the `new_resource` hook of run_program) may override these two.
    def computed_outputs(
        self, typ: str, name: str, inputs: dict[str, Any], region: str
    ) -> tuple[str, dict[str, Any]]:
        """The id and the provider-computed outputs of a created resource: exact shapes for
        the types the pack links by identity, plausible typed values for every other output
        the provider SDK declares, and placeholders for unset inputs, listed under
        `typed.PLACEHOLDERS_KEY` so that the recorder hides them from the pack (an unset
        input means the AWS default)."""
        resource_id, known = self._identity_outputs(typ, name, inputs, region)
        n = str(inputs.get(_AUTONAME_PROPERTY.get(typ, "name"), name))
        ctx = typed.Context(
            _service(typ), n, region, self.account_id, typ.rsplit(":", 1)[-1].lower()
        )
        given = {**inputs, **known}
        placeholders = typed.unset_input_placeholders(typ, ctx, given)
        outputs = {**typed.computed_outputs(typ, ctx, given), **placeholders, **known}
        if placeholders:
            outputs[typed.PLACEHOLDERS_KEY] = sorted(placeholders)
        return resource_id, outputs

    def _identity_outputs(
        self, typ: str, name: str, inputs: dict[str, Any], region: str
    ) -> tuple[str, dict[str, Any]]:
        acct, part = self.account_id, "aws"
        service = _service(typ)
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
            return _provider_id(name), {}
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
        name_prop = _AUTONAME_PROPERTY.get(args.typ) or (
            # The AWS provider auto-names any resource with an optional `name` it is not given.
            "name"
            if args.typ.startswith("aws:") and "name" in typed.input_names(args.typ)
            else None
        )
        if name_prop and not isinstance(outputs.get(name_prop), str):
            prefix = outputs.get("namePrefix") or outputs.get(f"{name_prop}Prefix")
            base = (
                f"{prefix}{_suffix(args.name)}" if prefix else f"{args.name}-{_suffix(args.name)}"
            )
            if args.typ == "aws:sqs/queue:Queue" and outputs.get("fifoQueue") is True:
                base += ".fifo"
            outputs[name_prop] = base
        region = self._region_for(args.provider, outputs)
        if args.typ.startswith("aws:") and "region" in typed.input_names(args.typ):
            # pulumi-aws v7: every regional resource reports the region it lives in; the
            # provider's Check fills it in, so a preview knows it too.
            outputs.setdefault("region", region)
        if self.preview:
            return "", outputs
        resource_id, computed = self.computed_outputs(args.typ, args.name, outputs, region)
        if args.resource_id:  # a read/import keeps the id it was given
            resource_id = args.resource_id
        return resource_id, {**computed, **outputs, "id": resource_id}

    def _region_for(self, provider_ref: str | None, inputs: Mapping[str, Any] | None = None) -> str:
        """pulumi-aws v7's per-resource `region` argument, else the explicit provider's region
        (provider references are "<urn>::<id>"), else the stack's `aws:region`."""
        if inputs is not None and isinstance(inputs.get("region"), str) and inputs["region"]:
            return str(inputs["region"])
        if provider_ref:
            urn = provider_ref.rsplit("::", 1)[0]  # the provider's logical name ends its URN
            region = self._provider_regions.get(urn.rsplit("::", 1)[-1])
            if region:
                return region
        return self.region

    def call(self, args: MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        # The mock monitor iterates the failures: an empty list, never None.
        return self.invoke_result(args), []

    def invoke_result(self, args: MockCallArgs) -> dict[str, Any]:
        """A pinned answer if the answers file has one, else the data source's result type
        filled plausibly (exact for identity, region, partition, zones, policy documents)."""
        token, given = args.token, dict(args.args)
        region = self._region_for(args.provider, given)
        generic = typed.invoke_result(
            token,
            typed.Context(
                _service(token), str(given.get("name") or "offline"), region, self.account_id
            ),
            given,
        )
        specific = self._specific_invoke_result(token, given, region)
        result = {**(generic or {}), **(specific or {})}
        if generic is None and specific is None:
            # No result type to answer from (a provider SDK without typed results): the
            # arguments are not an answer, so the program gets an empty result.
            result = {}
        return self.answers.apply(token, given, result)

    def _specific_invoke_result(
        self, token: str, given: dict[str, Any], region: str
    ) -> dict[str, Any] | None:
        acct = self.account_id
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
            return {"json": doc, "minifiedJson": json.dumps(json.loads(doc)), "id": "doc"}
        if token == "aws:kms/getAlias:getAlias" and isinstance(given.get("name"), str):
            # An alias names a key: the alias ARN, and the ARN and id of the key it targets.
            alias = given["name"]
            key_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{region}/{alias}"))
            return {
                "arn": f"arn:aws:kms:{region}:{acct}:{alias}",
                "id": f"arn:aws:kms:{region}:{acct}:{alias}",
                "name": alias,
                "targetKeyId": key_id,
                "targetKeyArn": f"arn:aws:kms:{region}:{acct}:key/{key_id}",
            }
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
            resource_id, computed = self._identity_outputs(typ, name, {"name": name}, region)
            return {**computed, "id": resource_id}
        return None


def _service(token: str) -> str:
    return token.split(":")[1].split("/")[0] if token.count(":") >= 2 else "resource"


def _provider_id(logical_name: str) -> str:
    return f"{logical_name}-provider-id"


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
