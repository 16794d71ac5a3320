"""Record what a program registers, with the wire data the engine would hold.

``RecordingMonitor`` is a ``MockMonitor`` that keeps every ``RegisterResource`` /
``ReadResource`` request (``MockResourceArgs`` has no parent, dependencies or source position;
the request does) as a ``RecordedResource``: type, logical name, URN, id, parent,
dependencies, property dependencies, provider, inputs and outputs in the protobuf ``Struct``
form an analyzer receives (unknowns as Pulumi's sentinels), and the source position.

It also plays two parts of the engine the plain mock monitor does not:
- it does not offer resource references to the SDK, so a resource passed where an id/ARN is
  expected (``role=lambda_role``) travels as that resource's id (a component's URN), which is
  what the engine hands to providers and policy packs;
- a remote (multi-language) component cannot be expanded offline (its children are built by
  its plugin): it is recorded with ``remote=True`` and its outputs are unknown, in both modes,
  so the program runs on and the report can say which subtrees were not checked.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.proto import resource_pb2

from ..rules.values import UNKNOWN, UNKNOWN_STRING_SENTINEL, is_unknown
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


class EngineCallError(Exception):
    """A mock failed while answering a registration or an invoke of the user's program."""

    def __init__(self, what: str, position: tuple[str | None, int | None], cause: Exception):
        file, line = position
        self.where = f"{file}:{line}" if file else None
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
            )
        )

    def Invoke(self, request: Any) -> Any:
        try:
            return super().Invoke(request)
        except Exception as exc:
            position = _source_of(request)
            if position[0] is None and self.program_dir is not None:
                position = _waiting_program_line(self.program_dir)
            raise EngineCallError(f"invoke {request.tok}", position, exc) from exc

    def RegisterResource(self, request: Any) -> Any:
        try:
            return self._register(request)
        except EngineCallError:
            raise
        except Exception as exc:
            what = f"registering {request.type} '{request.name}'"
            raise EngineCallError(what, _source_of(request), exc) from exc

    def _register(self, request: Any) -> Any:
        if request.remote:
            response = self._register_remote_component(request)
            self._record(request, response, read=False, remote=True)
            return response
        response = super().RegisterResource(request)
        self._record(request, response, read=False)
        return response

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
