"""Record what a program registers, with the wire data the engine would hold.

``RecordingMonitor`` is a ``MockMonitor`` that keeps every ``RegisterResource`` /
``ReadResource`` request (``MockResourceArgs`` has no parent, dependencies or source position;
the request does) as a ``RecordedResource``: type, logical name, URN, id, parent,
dependencies, property dependencies, provider, inputs and outputs in the protobuf ``Struct``
form an analyzer receives (unknowns as Pulumi's sentinels), and the source position.

It also plays the parts of the engine the plain mock monitor does not:
- it runs the program's transforms as the engine does, before the mocks and the pack see a
  registration: the resource's own (``ResourceOptions(transforms=...)``), then each
  ancestor's, then the stack's (``register_resource_transform``), calling them through the
  SDK's callback server on the program's loop; the options they return (protect,
  ignore_changes, aliases, provider, depends_on ...) replace the registration's, and the pack
  sees them (``RecordedResource.protect`` etc.); invoke transforms likewise;
- an input the program does not know (unknown in a preview, or a value only the cloud knows in
  either mode, ``offline.unknowns``) stays unknown in the outputs, and a string holding the
  unknown sentinel (text built from an unknown) is unknown; a method call of a component
  (``pulumi.runtime.call``) answers unknown;
- it does not offer resource references to the SDK, so a resource passed where an id/ARN is
  expected (``role=lambda_role``) travels as that resource's id (a component's URN), which is
  what the engine hands to providers and policy packs;
- a remote (multi-language) component cannot be expanded offline (its children are built by
  its plugin): it is recorded with ``remote=True`` and its outputs are unknown, in both modes,
  so the program runs on and the report can say which subtrees were not checked.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime._callbacks import _CallbackServicer
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs
from pulumi.runtime.proto import provider_pb2, resource_pb2
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from ..rules.values import UNKNOWN, UNKNOWN_SENTINELS, UNKNOWN_STRING_SENTINEL, is_unknown
from . import typed
from .project import STACK_TYPE


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
    remote: bool = False  # a multi-language component: not expanded offline
    # Resource options a policy pack sees (after transforms), as the engine passes them.
    protect: bool = False
    ignore_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool | None = None  # None: not set
    additional_secret_outputs: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)  # alias URNs
    custom_timeouts: dict[str, str] = field(default_factory=dict)  # create/update/delete

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


def _waiting_program_line(program_dir: Path) -> tuple[str | None, int | None]:
    """The line of the user's program blocked on a plain (non-Output) invoke: the innermost
    frame inside `program_dir` on any thread's stack (the SDK answers invokes on a worker)."""
    root = str(program_dir) + os.sep
    for frame in sys._current_frames().values():
        current: Any = frame
        while current is not None:
            file = current.f_code.co_filename
            if file.startswith(root) and "site-packages" not in file:
                return file, current.f_lineno
            current = current.f_back
    return None, None


def _contains_sentinel(value: struct_pb2.Value) -> bool:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return UNKNOWN_STRING_SENTINEL in value.string_value or value.string_value in (
            UNKNOWN_SENTINELS
        )
    if kind == "struct_value":
        return any(_contains_sentinel(v) for v in value.struct_value.fields.values())
    if kind == "list_value":
        return any(_contains_sentinel(v) for v in value.list_value.values)
    return False


def _collapse_value(value: struct_pb2.Value) -> None:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        if UNKNOWN_STRING_SENTINEL in value.string_value:
            value.string_value = UNKNOWN_STRING_SENTINEL
    elif kind == "struct_value":
        collapse_unknown_strings(value.struct_value)
    elif kind == "list_value":
        for item in value.list_value.values:
            _collapse_value(item)


def collapse_unknown_strings(struct: struct_pb2.Struct) -> None:
    """A string built from an unknown (an f-string around a value only the cloud knows) holds
    the unknown sentinel in its text: it is unknown, as the engine treats an Output built
    from an unknown."""
    for value in struct.fields.values():
        _collapse_value(value)


def overlay_unknowns(outputs: struct_pb2.Struct, inputs: struct_pb2.Struct) -> None:
    """Inputs the program did not know stay unknown in the outputs (nested maps merged)."""
    for key, value in inputs.fields.items():
        if not _contains_sentinel(value):
            continue
        current = outputs.fields.get(key)
        if (
            current is not None
            and value.WhichOneof("kind") == "struct_value"
            and current.WhichOneof("kind") == "struct_value"
        ):
            overlay_unknowns(current.struct_value, value.struct_value)
        else:
            outputs.fields[key].CopyFrom(value)


def restore_unknowns(new: struct_pb2.Struct, old: struct_pb2.Struct) -> None:
    """A transform's callback decodes unknowns as None at `up` (the SDK does outside a
    preview) and drops them on re-encoding: put back the unknowns it did not replace."""
    for key, value in old.fields.items():
        if not _contains_sentinel(value):
            continue
        current = new.fields.get(key)
        if current is None:
            new.fields[key].CopyFrom(value)
        elif (
            value.WhichOneof("kind") == "struct_value"
            and current.WhichOneof("kind") == "struct_value"
        ):
            restore_unknowns(current.struct_value, value.struct_value)


def _transform_options(request: Any) -> Any:
    """The options a transform sees, as the engine builds them from the registration."""
    opts = resource_pb2.TransformResourceOptions(
        depends_on=list(request.dependencies),
        ignore_changes=list(request.ignoreChanges),
        replace_on_changes=list(request.replaceOnChanges),
        version=request.version,
        aliases=list(request.aliases),
        provider=request.provider,
        plugin_download_url=request.pluginDownloadURL,
        deleted_with=request.deletedWith,
        additional_secret_outputs=list(request.additionalSecretOutputs),
        providers=dict(request.providers),
    )
    if request.HasField("protect"):
        opts.protect = request.protect
    if request.HasField("retainOnDelete"):
        opts.retain_on_delete = request.retainOnDelete
    if request.deleteBeforeReplaceDefined:
        opts.delete_before_replace = request.deleteBeforeReplace
    if request.HasField("customTimeouts"):
        opts.custom_timeouts.CopyFrom(request.customTimeouts)
    if request.importId:
        setattr(opts, "import", request.importId)
    return opts


def _apply_transform_options(request: Any, opts: Any) -> None:
    """The registration as the transformed options say (the parent cannot change)."""
    property_deps = {u for deps in request.propertyDependencies.values() for u in deps.urns}
    del request.dependencies[:]
    request.dependencies.extend(dict.fromkeys([*opts.depends_on, *sorted(property_deps)]))
    for repeated, values in (
        (request.ignoreChanges, opts.ignore_changes),
        (request.replaceOnChanges, opts.replace_on_changes),
        (request.additionalSecretOutputs, opts.additional_secret_outputs),
    ):
        del repeated[:]
        repeated.extend(values)
    del request.aliases[:]
    request.aliases.extend(opts.aliases)
    request.version = opts.version
    request.provider = opts.provider
    request.pluginDownloadURL = opts.plugin_download_url
    request.deletedWith = opts.deleted_with
    request.providers.clear()
    request.providers.update(dict(opts.providers))
    if opts.HasField("protect"):
        request.protect = opts.protect
    else:
        request.ClearField("protect")
    if opts.HasField("retain_on_delete"):
        request.retainOnDelete = opts.retain_on_delete
    if opts.HasField("delete_before_replace"):
        request.deleteBeforeReplace = opts.delete_before_replace
        request.deleteBeforeReplaceDefined = True
    if opts.HasField("custom_timeouts"):
        request.customTimeouts.CopyFrom(opts.custom_timeouts)
    else:
        request.ClearField("customTimeouts")
    request.importId = getattr(opts, "import")
    for key in [k for k in request.propertyDependencies if k not in request.object.fields]:
        del request.propertyDependencies[key]


class ProgramCallbackError(Exception):
    """A callback of the user's program (a transform) raised: the program failed there."""

    def __init__(self, what: str, position: tuple[str | None, int | None], cause: Exception):
        file, line = position
        self.where = f"{file}:{line}" if file else None
        at = f" (declared at {self.where})" if self.where else ""
        super().__init__(f"{what}{at} raised {type(cause).__name__}: {cause}")


class EngineCallError(Exception):
    """A mock failed while answering a registration or an invoke of the user's program."""

    def __init__(self, what: str, position: tuple[str | None, int | None], cause: Exception):
        file, line = position
        self.where = f"{file}:{line}" if file else None
        self.cause = cause  # kept: the SDK re-chains the exceptions it re-raises
        at = f" (declared at {self.where})" if self.where else ""
        super().__init__(
            f"{what}{at} failed in the offline engine: {type(cause).__name__}: {cause}"
        )


class RecordingMonitor(MockMonitor):
    """MockMonitor that keeps every registration request (MockResourceArgs has no parent,
    dependencies or source position; the request does)."""

    def __init__(self, mocks: pulumi.runtime.Mocks, *, preview: bool = False) -> None:
        super().__init__(mocks)
        self.preview = preview
        # The user's program directory: names the line of a failing invoke.
        self.program_dir: Path | None = None
        self.recorded: list[RecordedResource] = []
        self.stack_outputs: dict[str, Any] = {}
        # URN -> what a component passed to `register_outputs`, in wire form.
        self.component_outputs: dict[str, struct_pb2.Struct] = {}
        # Transforms, as the engine keeps them: each resource's own (its children run them
        # too), its parent, and the stack's (resource and invoke) in registration order.
        self._own_transforms: dict[str, list[Any]] = {}
        self._parent_of: dict[str, str] = {}
        self._stack_transforms_cb: list[Any] = []
        self._stack_invoke_transforms_cb: list[Any] = []

    def GetDeploymentInfo(self, request: Any) -> Any:
        info = super().GetDeploymentInfo(request)
        features = [
            f
            for f in info.supportedFeatures
            if f != resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES
        ]
        return resource_pb2.DeploymentInfo(supportedFeatures=features)

    def SupportsFeature(self, request: Any) -> Any:
        supported = request.id not in ("outputValues", "resourceReferences")
        return type("SupportsFeatureResponse", (object,), {"hasSupport": supported})

    def _record(self, request: Any, response: Any, *, read: bool, remote: bool = False) -> None:
        file, line = _source_of(request)
        inputs = struct_pb2.Struct()
        inputs.CopyFrom(request.properties if read else request.object)
        collapse_unknown_strings(inputs)
        urn = response.urn
        resource_id = self.resources[urn].id if urn in self.resources else ""
        custom = True if read else bool(request.custom)
        outputs = struct_pb2.Struct()
        if remote:
            outputs.CopyFrom(response.object)
        elif self.preview and custom and not read:
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
            if typed.PLACEHOLDERS_KEY in outputs.fields:
                for key in list(outputs[typed.PLACEHOLDERS_KEY]):
                    if key in outputs.fields:
                        del outputs[key]
                del outputs[typed.PLACEHOLDERS_KEY]
        if typed.UNKNOWN_FIELDS_KEY in outputs.fields:
            # Fields the offline engine cannot know (another stack's outputs): unknown, as the
            # program saw them.
            spec = json_format.MessageToDict(outputs[typed.UNKNOWN_FIELDS_KEY])
            for key in spec.get("fields") or {}:
                outputs[key] = UNKNOWN_STRING_SENTINEL
            del outputs[typed.UNKNOWN_FIELDS_KEY]
        collapse_unknown_strings(outputs)
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
                remote=remote,
                **({} if read else self._options_of(request, urn)),
            )
        )

    def _options_of(self, request: Any, urn: str) -> dict[str, Any]:
        timeouts = request.customTimeouts if request.HasField("customTimeouts") else None
        return {
            "protect": bool(request.protect) if request.HasField("protect") else False,
            "ignore_changes": list(request.ignoreChanges),
            "delete_before_replace": request.deleteBeforeReplace
            if request.deleteBeforeReplaceDefined
            else None,
            "additional_secret_outputs": list(request.additionalSecretOutputs),
            "aliases": self._alias_urns(request, urn),
            "custom_timeouts": {
                k: getattr(timeouts, k)
                for k in ("create", "update", "delete")
                if timeouts and getattr(timeouts, k)
            },
        }

    def _alias_urns(self, request: Any, urn: str) -> list[str]:
        """The URNs the resource's aliases name, as the engine computes them from alias specs
        (a spec's unset parts are the resource's own)."""
        out = list(request.aliasURNs)
        stack, project = urn.split("::")[0].split(":")[-1], urn.split("::")[1]
        for alias in request.aliases:
            if alias.HasField("urn"):
                out.append(alias.urn)
                continue
            spec = alias.spec
            parent = "" if spec.noParent else (spec.parentUrn or request.parent)
            typ = spec.type or request.type
            if parent:
                parent_type = parent.split("::")[2]
                typ = f"{parent_type}${typ}"
            out.append(
                f"urn:pulumi:{spec.stack or stack}::{spec.project or project}::{typ}::"
                f"{spec.name or request.name}"
            )
        return out

    def Invoke(self, request: Any) -> Any:
        try:
            request = self._transform_invoke(request)
            if request.tok == "pulumi:pulumi:getResource":
                return super().Invoke(request)
            return self._invoke(request)
        except ProgramCallbackError:
            raise
        except Exception as exc:
            position = _source_of(request)
            if position[0] is None and self.program_dir is not None:
                position = _waiting_program_line(self.program_dir)
            raise EngineCallError(f"invoke {request.tok}", position, exc) from exc

    def _invoke(self, request: Any) -> Any:
        """MockMonitor.Invoke, with the mocks seeing unknown arguments as unknown in both modes
        (the SDK sends them only for a plain invoke over a value only the cloud knows)."""
        _ensure_event_loop()
        args = rpc.deserialize_properties(request.args, keep_unknowns=True)
        answer = self.mocks.call(
            MockCallArgs(token=request.tok, args=args, provider=request.provider)
        )
        ret, failures = (answer, None) if isinstance(answer, dict) else answer
        ret_proto = _sync_await(rpc.serialize_properties(ret, {}))
        return resource_pb2.ResourceInvokeResponse(
            failures=[provider_pb2.CheckFailure(property=p, reason=r) for p, r in failures or []],
            **{"return": ret_proto},
        )

    def Call(self, request: Any) -> Any:
        """A method of a (remote) component: its provider would compute the result; offline it
        is unknown, in both modes (the SDK makes the method's Output unknown)."""
        result = struct_pb2.Struct()
        result[typed.UNKNOWN_FIELDS_KEY] = {"token": request.tok, "fields": {"result": "unknown"}}
        return provider_pb2.CallResponse(**{"return": result})

    def RegisterStackTransform(self, request: Any) -> Any:
        self._stack_transforms_cb.append(request)
        return super().RegisterStackTransform(request)

    def RegisterStackInvokeTransform(self, request: Any) -> Any:
        self._stack_invoke_transforms_cb.append(request)
        return super().RegisterStackInvokeTransform(request)

    def RegisterResource(self, request: Any) -> Any:
        try:
            return self._register(request)
        except (EngineCallError, ProgramCallbackError):
            raise
        except Exception as exc:
            what = f"registering {request.type} '{request.name}'"
            raise EngineCallError(what, _source_of(request), exc) from exc

    def _register(self, request: Any) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        own = list(request.transforms)
        request = self._transform_resource(request)
        self._own_transforms[urn] = own
        self._parent_of[urn] = request.parent
        collapse_unknown_strings(request.object)
        if request.remote:
            response = self._register_remote_component(request)
            self._record(request, response, read=False, remote=True)
            return response
        response = self._register_mocked(request, urn)
        self._record(request, response, read=False)
        return response

    def _register_mocked(self, request: Any, urn: str) -> Any:
        """MockMonitor.RegisterResource, with the mocks seeing unknown inputs as unknown in both
        modes, and (at `up`) the response keeping them unknown: the engine would not turn an
        input the program did not know into a known output."""
        if request.type == STACK_TYPE:
            return resource_pb2.RegisterResourceResponse(urn=urn)
        _ensure_event_loop()
        inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
        resource_args = MockResourceArgs(
            typ=request.type,
            name=request.name,
            inputs=inputs,
            provider=request.provider,
            resource_id=request.importId,
            custom=request.custom or False,
        )
        id_, state = self.mocks.new_resource(resource_args)
        obj_proto = _sync_await(rpc.serialize_properties(state, {}))
        collapse_unknown_strings(obj_proto)
        if not self.preview:
            overlay_unknowns(obj_proto, request.object)
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, id_ or "", state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_ or "", object=obj_proto)

    # --- transforms, run as the engine runs them ---------------------------------------------

    def _transform_resource(self, request: Any) -> Any:
        """Apply the resource's own transforms, then each ancestor's, then the stack's
        (registered before it), as the engine does before anything sees the inputs."""
        chain = list(request.transforms)
        parent = request.parent
        while parent:
            chain += self._own_transforms.get(parent, [])
            parent = self._parent_of.get(parent, "")
        chain += list(self._stack_transforms_cb)
        if not chain or request.type == STACK_TYPE:
            return request
        props = struct_pb2.Struct()
        props.CopyFrom(request.object)
        opts = _transform_options(request)
        for callback in chain:
            transform_request = resource_pb2.TransformRequest(
                type=request.type,
                name=request.name,
                custom=request.custom,
                parent=request.parent,
                properties=props,
                options=opts,
            )
            response = self._callback(
                callback,
                transform_request,
                f"a transform of {request.type} '{request.name}'",
                _source_of(request),
            )
            if response.HasField("properties"):
                new_props = struct_pb2.Struct()
                new_props.CopyFrom(response.properties)
                restore_unknowns(new_props, props)
                props = new_props
            if response.HasField("options"):
                opts = response.options
        transformed = resource_pb2.RegisterResourceRequest()
        transformed.CopyFrom(request)
        transformed.object.Clear()
        transformed.object.CopyFrom(props)
        _apply_transform_options(transformed, opts)
        return transformed

    def _transform_invoke(self, request: Any) -> Any:
        if not self._stack_invoke_transforms_cb:
            return request
        args = struct_pb2.Struct()
        args.CopyFrom(request.args)
        opts = resource_pb2.TransformInvokeOptions(
            provider=request.provider,
            plugin_download_url=request.pluginDownloadURL,
            version=request.version,
        )
        for callback in self._stack_invoke_transforms_cb:
            response = self._callback(
                callback,
                resource_pb2.TransformInvokeRequest(token=request.tok, args=args, options=opts),
                f"an invoke transform of {request.tok}",
                _source_of(request),
            )
            if response.HasField("args"):
                args = response.args
            if response.HasField("options"):
                opts = response.options
        transformed = resource_pb2.ResourceInvokeRequest()
        transformed.CopyFrom(request)
        transformed.args.Clear()
        transformed.args.CopyFrom(args)
        transformed.provider = opts.provider
        transformed.version = opts.version
        transformed.pluginDownloadURL = opts.plugin_download_url
        return transformed

    def _callback(
        self, callback: Any, request: Any, what: str, position: tuple[str | None, int | None]
    ) -> Any:
        """Run a program callback (a transform) registered with the SDK's callback server, on
        the program's event loop, as the engine would call it over gRPC."""
        for servicer in list(_CallbackServicer._servicers):
            function = servicer._callbacks.get(callback.token)
            if function is None:
                continue
            coroutine: Any = function(request.SerializeToString())
            future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(
                coroutine, servicer._loop
            )
            try:
                return future.result()
            except Exception as exc:
                raise ProgramCallbackError(what, position, exc) from exc
        raise EngineCallError(
            what, position, LookupError(f"no registered callback {callback.token}")
        )

    def _register_remote_component(self, request: Any) -> Any:
        """Its plugin would build the children and compute the outputs; offline every output
        the component's SDK class declares is unknown (so `up` mode never sees a missing
        output as None), and its inputs are kept for the report."""
        urn = self.make_urn(request.parent, request.type, request.name)
        outputs = struct_pb2.Struct()
        outputs.CopyFrom(request.object)
        cls = typed.resource_class(request.type)
        for wire, prop in (typed.typed_properties(cls) if cls is not None else {}).items():
            # Generated SDKs map wire names to Python names by type metadata; an SDK that
            # passes a plain dict of Python names expects those back: give both.
            for key in {wire, prop.python_name or wire}:
                if key not in outputs.fields:
                    outputs[key] = UNKNOWN_STRING_SENTINEL
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, "", {})
        return resource_pb2.RegisterResourceResponse(urn=urn, id="", object=outputs)

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)
        self._record(request, response, read=True)
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if request.urn.split("::")[2:3] == [STACK_TYPE]:
            self.stack_outputs.update(struct_to_plain(request.outputs))
        else:
            outputs = struct_pb2.Struct()
            outputs.CopyFrom(request.outputs)
            self.component_outputs[request.urn] = outputs
        return super().RegisterResourceOutputs(request)
