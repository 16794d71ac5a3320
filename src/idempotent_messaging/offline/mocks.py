"""The default offline mocks: what AWS (and any other provider) would answer, typed and regional.

``AwsMocks`` echoes inputs, auto-names like the AWS provider (``<logical>-<7 hex>``, ``.fifo``
kept for FIFO queues), returns the ids/ARNs/URLs of common AWS types in the resource's region
(pulumi-aws v7's per-resource ``region`` argument, else its explicit ``aws.Provider``'s region,
else ``aws:region``), and fills every other computed output from the provider SDK's typed
declarations (``offline.typed``). Invokes: ``getCallerIdentity``, ``getRegion``,
``getPartition``, ``getAvailabilityZones``, ``getArn`` and ``iam.getPolicyDocument`` (rendered as
the AWS provider renders it: source/override documents merged, principals, conditions, sets)
are exact; a lookup by name knows the ARN/URL the name gives; every other field of a data
source is a value only the cloud knows, answered as unknown (``offline.unknowns``), never
invented; an answers file pins real values; an invoke no installed SDK types fails closed.
Inputs the program does not know (unknown in either mode) are never auto-named or filled.

In preview mode only what a real preview of a new resource knows is returned: the inputs and
the auto-name (the provider's Check computes it before any API call); everything the provider
computes on create is left out, which the Pulumi SDK turns into unknown outputs.

Override points for subclasses: ``computed_outputs(typ, name, inputs, region)`` and
``invoke_result(args)``.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockCallArgs, MockResourceArgs

from ..rules.values import UNKNOWN_STRING_SENTINEL, is_unknown
from . import typed, unknowns
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
        # Provider logical name -> the account its credentials act in (None: not known
        # offline, e.g. a profile); providers absent here act in the stack's account.
        self._provider_accounts: dict[str, str | None] = {}

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
        self,
        typ: str,
        name: str,
        inputs: dict[str, Any],
        region: str,
        account: str | None = None,
    ) -> tuple[str, dict[str, Any]]:
        acct, part = account or self.account_id, "aws"
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
        # Inputs the program does not know (computed outputs in a preview, values only the
        # cloud knows in both modes): never auto-named or filled with a placeholder.
        unknown_keys = {k for k, v in dict(args.inputs).items() if _is_sdk_unknown(v)}
        inputs = _strip_unknowns(dict(args.inputs))
        if args.typ == "pulumi:providers:aws" and isinstance(inputs.get("region"), str):
            self._provider_regions[args.name] = inputs["region"]
        if args.typ == "pulumi:providers:aws":
            account = _provider_account(inputs, self.account_id)
            if account != self.account_id:
                self._provider_accounts[args.name] = account
        if args.custom is False:  # a component: no id, no cloud state
            return "", {}
        outputs = dict(inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            # Another stack's outputs cannot be read offline, and they are that stack's values,
            # not this one's to judge: unknown in `up` as in a preview (callbacks over them do
            # not run, as for any computed value), unless an answers file pins them.
            target = str(inputs.get("name", args.name))
            pinned = self.answers.stack_outputs(target)
            found: dict[str, Any] = {"name": target, "secretOutputNames": []}
            if pinned is not None:
                found["outputs"] = dict(pinned)
            else:
                found["outputs"] = None
                found[typed.UNKNOWN_FIELDS_KEY] = {
                    "token": STACK_REFERENCE_TYPE,
                    "fields": {"outputs": "unknown"},
                }
            return target, found
        if args.resource_id and args.typ == "aws:sqs/queue:Queue" and "name" not in outputs:
            outputs["name"] = args.resource_id.rstrip("/").rsplit("/", 1)[-1]
        name_prop = _AUTONAME_PROPERTY.get(args.typ) or (
            # The AWS provider auto-names any resource with an optional `name` it is not given.
            "name"
            if args.typ.startswith("aws:") and "name" in typed.input_names(args.typ)
            else None
        )
        if (
            name_prop
            and name_prop not in unknown_keys
            and not isinstance(outputs.get(name_prop), str)
        ):
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
        given = {**outputs, **{k: UNKNOWN_STRING_SENTINEL for k in unknown_keys}}
        resource_id, computed = self.computed_outputs(args.typ, args.name, given, region)
        if args.resource_id:  # a read/import keeps the id it was given
            resource_id = args.resource_id
        if UNKNOWN_STRING_SENTINEL in resource_id:
            resource_id = ""  # named by an unknown: its id is unknown too
        return resource_id, {**computed, **outputs, "id": resource_id}

    def _account_for(self, provider_ref: str | None) -> str | None:
        """The account an explicit provider acts in (None: not known offline), else the
        stack's."""
        if provider_ref:
            urn = provider_ref.rsplit("::", 1)[0]
            name = urn.rsplit("::", 1)[-1]
            if name in self._provider_accounts:
                return self._provider_accounts[name]
        return self.account_id

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
        # The mock monitor iterates the failures: an empty list, never None. A call the AWS
        # provider would refuse (a policy document with duplicate Sids) fails as it would.
        try:
            return self.invoke_result(args), []
        except InvokeRefused as refused:
            return {}, [(refused.property, str(refused))]

    def invoke_result(self, args: MockCallArgs) -> dict[str, Any]:
        """The data source's result: exact where it is a function of the configuration and the
        arguments (identity, region, partition, zones, policy documents, ARN parsing, the
        ARN/URL of a resource looked up by name), the arguments it repeats, the fields an
        answers file pins; every other field is a value only the cloud knows, listed under
        `typed.UNKNOWN_FIELDS_KEY` so that the program gets typed unknowns
        (`offline.unknowns`) and the pack never judges an invented value."""
        token, given = args.token, dict(args.args)
        region = self._region_for(args.provider, given)
        ctx = typed.Context(
            _service(token), str(given.get("name") or "offline"), region, self.account_id
        )
        unknown_args = any(_contains_unknown(v) for v in given.values())
        generic = typed.invoke_result(token, ctx, {} if unknown_args else given)
        placeholders = typed.invoke_placeholders(token, ctx) or {}
        specific = (
            None
            if unknown_args
            else self._specific_invoke_result(
                token, given, region, self._account_for(args.provider)
            )
        )
        answered = None if unknown_args else self.answers.answered(token, given)
        if generic is None and specific is None and answered is None:
            # No result type to answer from: not an answer to invent (fail closed).
            raise unknowns.UnsupportedError(
                token,
                f"the offline engine cannot answer invoke {token}: no installed provider SDK "
                f"declares its result type, so neither its fields nor which of them only the "
                f"cloud knows can be told. Install the provider's Python SDK where the check "
                f"runs (or --package-path DIR), or pin the result with --answers FILE "
                f"(function: {token}).",
            )
        result: dict[str, Any] = {**(generic or {}), **(specific or {})}
        if answered is not None:
            result.update(typed.coerce_result(token, answered))
        if unknown_args:
            known: set[str] = set()  # an invoke over unknown arguments: nothing is known
        elif token in EXACT_INVOKES:
            known = set(result)
        else:
            known = {k for k, v in given.items() if v is not None and k in result}
            known |= set(specific or {}) | set(answered or {}) | {"region"}
        unknown = {k: result[k] for k in result if k not in known}
        if not unknown:
            return result
        for key in unknown:
            if key in placeholders:
                result[key] = placeholders[key]
        result[typed.UNKNOWN_FIELDS_KEY] = {
            "token": token,
            "fields": {k: typed.kinds_of(result[k]) for k in unknown},
        }
        return result

    def _specific_invoke_result(
        self, token: str, given: dict[str, Any], region: str, account: str | None = None
    ) -> dict[str, Any] | None:
        """The fields a data source's answer is known by: a function of the region and account
        of the provider the invoke goes through (the stack's: the offline account every
        fabricated ARN uses) and of the arguments. Through a provider whose account is not
        known offline (a profile, an assumed role whose ARN is computed), what depends on the
        account is a value only the cloud knows: a queue another account owns, looked up by
        name, is not taken for one of this stack's."""
        if account is None:
            if token in _ACCOUNT_BOUND_INVOKES or token in _LOOKUPS_BY_NAME:
                return None
            account = self.account_id
        acct = account
        if token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                "accountId": acct,
                "arn": f"arn:aws:iam::{acct}:user/offline",
                "userId": "AIDAOFFLINE",
                "id": acct,
            }
        if token == "aws:index/getRegion:getRegion":
            return {
                "name": region,
                "region": region,
                "id": region,
                "description": region,
                "endpoint": f"ec2.{region}.amazonaws.com",
            }
        if token == "aws:index/getPartition:getPartition":
            return {
                "partition": "aws",
                "dnsSuffix": "amazonaws.com",
                "id": "aws",
                "reverseDnsPrefix": "com.amazonaws",
            }
        if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            zones = [f"{region}{z}" for z in "abc"]
            return {"names": zones, "zoneIds": zones, "id": region, "groupNames": [region]}
        if token == "aws:index/getArn:getArn" and isinstance(given.get("arn"), str):
            return _parsed_arn(given["arn"])
        if token == "aws:iam/getPolicyDocument:getPolicyDocument":
            pretty, minified = render_policy_document(given)
            return {"json": pretty, "minifiedJson": minified, "id": _hashcode(pretty)}
        if token == "aws:kms/getAlias:getAlias" and isinstance(given.get("name"), str):
            # The alias's own ARN follows from its name; the key it targets only AWS knows.
            alias = given["name"]
            arn = f"arn:aws:kms:{region}:{acct}:{alias}"
            return {"arn": arn, "id": arn, "name": alias}
        lookup = _LOOKUPS_BY_NAME.get(token)
        name = next(
            (given[k] for k in ("name", "functionName") if isinstance(given.get(k), str)), None
        )
        if lookup is not None and name is not None:
            # An existing resource looked up by name: the ARN (and URL) its name gives.
            typ, fields = lookup
            resource_id, computed = self._identity_outputs(
                typ, name, {"name": name}, region, account=acct
            )
            found = {**computed, "id": resource_id}
            return {k: v for k, v in found.items() if k in fields}
        return None


STACK_REFERENCE_TYPE = "pulumi:pulumi:StackReference"
# Data sources whose answer names the account the caller's credentials act in.
_ACCOUNT_BOUND_INVOKES = frozenset(
    {"aws:index/getCallerIdentity:getCallerIdentity", "aws:kms/getAlias:getAlias"}
)


def _provider_account(inputs: Mapping[str, Any], default: str) -> str | None:
    """The account an explicit AWS provider's credentials act in: the one `allowed_account_ids`
    names, else the account of the role it assumes; None when its credentials come from
    elsewhere (a profile, keys, an assumed role whose ARN is not known); `default` (the
    stack's) when it sets no credentials of its own (a provider for another region)."""

    def parsed(value: Any) -> Any:
        if isinstance(value, str) and value[:1] in "[{":
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    allowed = parsed(inputs.get("allowedAccountIds"))
    if isinstance(allowed, list) and len(allowed) == 1 and isinstance(allowed[0], str):
        return allowed[0]
    roles = parsed(inputs.get("assumeRoles")) or parsed(inputs.get("assumeRole")) or []
    roles = roles if isinstance(roles, list) else [roles]
    web = parsed(inputs.get("assumeRoleWithWebIdentity"))
    for role in [*roles, web]:
        arn = role.get("roleArn") if isinstance(role, dict) else None
        if isinstance(arn, str) and not is_unknown(arn):
            parts = arn.split(":")
            return parts[4] if len(parts) > 4 and parts[4].isdigit() else None
    credentials = (
        "profile",
        "accessKey",
        "sharedCredentialsFiles",
        "sharedConfigFiles",
        "assumeRoles",
        "assumeRole",
        "assumeRoleWithWebIdentity",
    )
    if any(inputs.get(k) for k in credentials):
        return None
    return default


# Data sources whose whole answer follows from the configuration and the arguments.
EXACT_INVOKES = frozenset(
    {
        "aws:index/getCallerIdentity:getCallerIdentity",
        "aws:index/getRegion:getRegion",
        "aws:index/getPartition:getPartition",
        "aws:index/getAvailabilityZones:getAvailabilityZones",
        "aws:index/getArn:getArn",
        "aws:iam/getPolicyDocument:getPolicyDocument",
    }
)

# Lookups by name whose ARN/URL the name gives (the resource type and the fields it gives).
_LOOKUPS_BY_NAME: dict[str, tuple[str, frozenset[str]]] = {
    "aws:sqs/getQueue:getQueue": ("aws:sqs/queue:Queue", frozenset({"arn", "url", "id"})),
    "aws:sns/getTopic:getTopic": ("aws:sns/topic:Topic", frozenset({"arn", "id"})),
    "aws:lambda/getFunction:getFunction": (
        "aws:lambda/function:Function",
        frozenset({"arn", "invokeArn", "id"}),
    ),
    "aws:dynamodb/getTable:getTable": ("aws:dynamodb/table:Table", frozenset({"arn", "id"})),
    "aws:iam/getRole:getRole": ("aws:iam/role:Role", frozenset({"arn", "id"})),
}


class InvokeRefused(Exception):
    """Arguments the AWS provider refuses: the invoke fails with this reason."""

    def __init__(self, message: str, property: str = "") -> None:
        super().__init__(message)
        self.property = property


def _contains_unknown(value: Any) -> bool:
    if _is_sdk_unknown(value):
        return True
    if isinstance(value, dict):
        return any(_contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_unknown(v) for v in value)
    return False


def _parsed_arn(arn: str) -> dict[str, Any] | None:
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn":
        return None
    _, partition, service, region, account, resource = parts
    return {
        "arn": arn,
        "id": arn,
        "partition": partition,
        "service": service,
        "region": region,
        "account": account,
        "resource": resource,
    }


def _service(token: str) -> str:
    return token.split(":")[1].split("/")[0] if token.count(":") >= 2 else "resource"


def _provider_id(logical_name: str) -> str:
    return f"{logical_name}-provider-id"


# --- aws.iam.get_policy_document, rendered as the AWS provider renders it ------------------------
#
# The provider (terraform-provider-aws `aws_iam_policy_document`, which pulumi-aws bridges):
# the `source_policy_documents` are merged first (their Sids must be unique), then the
# document's own statements, then each `override_policy_documents` entry; a statement whose Sid
# an earlier one has replaces it in place, others are appended. Sets (actions, resources,
# principal identifiers) render as the single string when they hold one element, else sorted in
# reverse order; condition values keep their order and flatten to a string when single;
# principals of one type merge; a lone principal of type "*" with identifier "*" renders as
# `"Principal": "*"` (type "AWS" with "*" stays {"AWS": "*"}); `&{` becomes `${`. The JSON is
# Go's: two-space indent, `<`, `>` and `&` escaped, keys in struct order (Sid, Effect, Action,
# NotAction, Resource, NotResource, Principal, NotPrincipal, Condition), maps sorted.

_STATEMENT_KEYS = (
    "Sid",
    "Effect",
    "Action",
    "NotAction",
    "Resource",
    "NotResource",
    "Principal",
    "NotPrincipal",
    "Condition",
)


def _var(value: str) -> str:
    return value.replace("&{", "${")


def _string_set(values: Any, *, variables: bool = False) -> Any:
    items = sorted({_var(v) if variables else v for v in values or []}, reverse=True)
    return items[0] if len(items) == 1 else items


def _principal_set(blocks: list[tuple[str, Any]]) -> Any:
    if len(blocks) == 1 and blocks[0][0] == "*" and blocks[0][1] in ("*", ["*"]):
        return "*"
    raw: dict[str, Any] = {}
    for typ, ids in blocks:
        current = raw.get(typ)
        if isinstance(ids, list):
            merged = [] if current is None else [current] if isinstance(current, str) else current
            raw[typ] = merged + sorted(ids, reverse=True)
        elif current is None:
            raw[typ] = ids
        elif isinstance(current, str):
            raw[typ] = [current, ids]
        else:
            current.append(ids)
    return dict(sorted(raw.items()))


def _condition_set(blocks: list[tuple[str, str, list[str]]]) -> dict[str, Any]:
    raw: dict[str, dict[str, list[str]]] = {}
    for test, variable, values in blocks:
        raw.setdefault(test, {}).setdefault(variable, []).extend(values)
    return {
        test: {var: vals[0] if len(vals) == 1 else vals for var, vals in sorted(by_var.items())}
        for test, by_var in sorted(raw.items())
    }


def _arg(st: Mapping[str, Any], wire: str) -> Any:
    """A nested argument by its wire name, or by its Python name: the SDK sends a plain dict's
    keys as written (`not_actions`), and the provider accepts its Terraform (snake) names."""
    if wire in st:
        return st[wire]
    return st.get(re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), wire))


def _statement_from_args(st: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if st.get("sid"):
        out["Sid"] = st["sid"]
    out["Effect"] = st.get("effect") or "Allow"
    for src, dst, variables in (
        ("actions", "Action", False),
        ("notActions", "NotAction", False),
        ("resources", "Resource", True),
        ("notResources", "NotResource", True),
    ):
        if _arg(st, src):
            out[dst] = _string_set(_arg(st, src), variables=variables)
    for src, dst in (("principals", "Principal"), ("notPrincipals", "NotPrincipal")):
        if _arg(st, src):
            out[dst] = _principal_set(
                [
                    (str(p.get("type", "")), _string_set(p.get("identifiers"), variables=True))
                    for p in _arg(st, src)
                ]
            )
    if st.get("conditions"):
        out["Condition"] = _condition_set(
            [
                (c["test"], c["variable"], [_var(str(v)) for v in c.get("values") or []])
                for c in st["conditions"]
            ]
        )
    return out


def _field(mapping: Mapping[str, Any], name: str) -> Any:
    """Go's JSON decoding matches struct fields case-insensitively."""
    if name in mapping:
        return mapping[name]
    return next((v for k, v in mapping.items() if k.lower() == name.lower()), None)


def _statement_from_json(st: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _STATEMENT_KEYS:
        value = _field(st, key)
        if value is None or value == "":
            continue
        if key in ("Principal", "NotPrincipal"):
            if isinstance(value, str):
                value = _principal_set([("*", ["*"])])
            elif isinstance(value, Mapping):
                value = _principal_set(
                    [(k, sorted(v) if isinstance(v, list) else v) for k, v in value.items()]
                )
        elif key == "Condition" and isinstance(value, Mapping):
            blocks: list[tuple[str, str, list[str]]] = []
            for test, by_var in value.items():
                for var, vals in (by_var or {}).items():
                    if isinstance(vals, bool):
                        vals = ["true" if vals else "false"]
                    blocks.append((test, var, [vals] if isinstance(vals, str) else list(vals)))
            value = _condition_set(blocks)
        out[key] = value
    return out


def _merge(doc: dict[str, Any], new: dict[str, Any]) -> None:
    if new.get("Id"):
        doc["Id"] = new["Id"]
    if str(new.get("Version") or "") > str(doc.get("Version") or ""):
        doc["Version"] = new["Version"]
    statements = doc.setdefault("Statement", [])
    for statement in new.get("Statement") or []:
        sid = statement.get("Sid")
        at = next((i for i, s in enumerate(statements) if sid and s.get("Sid") == sid), None)
        if at is None:
            statements.append(statement)
        else:
            statements[at] = statement


def _document_from_json(text: str, what: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InvokeRefused(f"writing IAM Policy Document: merging {what}: {exc}") from exc
    if not isinstance(parsed, Mapping):
        raise InvokeRefused(f"writing IAM Policy Document: merging {what}: not a JSON object")
    statements = _field(parsed, "Statement")
    if isinstance(statements, Mapping):
        statements = [statements]
    return {
        "Version": _field(parsed, "Version") or "",
        "Id": _field(parsed, "Id") or "",
        "Statement": [_statement_from_json(s) for s in statements or [] if isinstance(s, Mapping)],
    }


def policy_document_from_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The IAM policy document aws.iam.get_policy_document renders for these (wire) arguments;
    raises InvokeRefused where the provider refuses them (duplicate Sids, malformed JSON)."""
    merged: dict[str, Any] = {"Version": "", "Id": ""}
    seen: set[str] = set()
    for index, source in enumerate(_arg(args, "sourcePolicyDocuments") or []):
        if source is None:
            continue
        doc = _document_from_json(source, f"source document {index}")
        for number, statement in enumerate(doc["Statement"]):
            sid = statement.get("Sid")
            if sid and sid in seen:
                raise InvokeRefused(
                    f"writing IAM Policy Document: merging source document {index}: duplicate "
                    f"Sid ({sid}) in source_policy_documents (statement {number}). Remove the "
                    f"Sid or ensure Sids are unique.",
                    "sourcePolicyDocuments",
                )
            if sid:
                seen.add(sid)
        _merge(merged, doc)
    own: list[dict[str, Any]] = []
    sids: set[str] = set()
    for st in args.get("statements") or []:
        sid = st.get("sid") or ""
        if sid and sid in sids:
            raise InvokeRefused(
                f"writing IAM Policy Document: duplicate Sid ({sid}). Remove the Sid or ensure "
                f"the Sid is unique.",
                "statements",
            )
        if sid:
            sids.add(sid)
        own.append(_statement_from_args(st))
    _merge(
        merged,
        {
            "Version": args.get("version") or "2012-10-17",
            "Id": _arg(args, "policyId") or "",
            "Statement": own,
        },
    )
    for index, override in enumerate(_arg(args, "overridePolicyDocuments") or []):
        if override is not None:
            _merge(merged, _document_from_json(override, f"override document {index}"))
    out: dict[str, Any] = {}
    for key in ("Version", "Id", "Statement"):
        if merged.get(key):
            out[key] = merged[key]
    return out


def _go_json(text: str) -> str:
    """Go's encoding/json escapes these even inside strings."""
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def render_policy_document(args: Mapping[str, Any]) -> tuple[str, str]:
    """(`json`, `minified_json`) of aws.iam.get_policy_document for these arguments."""
    doc = policy_document_from_args(args)
    pretty = _go_json(json.dumps(doc, indent=2, ensure_ascii=False))
    minified = _go_json(json.dumps(doc, separators=(",", ":"), ensure_ascii=False))
    return pretty, minified


def _hashcode(text: str) -> str:
    """The provider's id of a rendered document (`create.StringHashcode`: its CRC-32)."""
    return str(zlib.crc32(text.encode()))
