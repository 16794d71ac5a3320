"""The emulator sees through Pulumi's wire wrappers: a secret is its value, an unknown refuses.

What the mocks receive is `pulumi.runtime.rpc.deserialize_properties` of the registration:
a secret is ``{SIG_KEY: SECRET_SIG, "value": ...}`` with its secretness pushed up to the
enclosing dict or list (rpc.deserialize_property), an unknown is ``pulumi.output.Unknown``
(the recorder deserialises with ``keep_unknowns=True``). These tests build the wrappers with
the SDK's own functions, so they break if the SDK's wire form changes.
"""

from __future__ import annotations

import pytest
from google.protobuf import struct_pb2
from pulumi.output import Unknown
from pulumi.runtime import rpc

from idempotent_messaging.local.unwrap import SECRET_SIG, SECRET_SIG_KEY, UnknownInput, plain
from idempotent_messaging.rules.values import UNKNOWN_STRING_SENTINEL

pytestmark = pytest.mark.unit


def test_the_signature_is_the_sdks_own() -> None:
    assert rpc.wrap_rpc_secret("x") == {SECRET_SIG_KEY: SECRET_SIG, "value": "x"}


def test_one_secret_variable_wraps_the_whole_map_on_the_wire_and_plain_sees_through_it() -> None:
    """The SDK pushes secretness up: `environment.variables` with ONE secret arrives as a
    secret of the whole map (what left the consumer of issue 34 with an empty environment)."""
    struct = struct_pb2.Struct()
    struct.update(
        {
            "environment": {
                "variables": {
                    "IDEMPOTENCY_STATE_TABLE": "state",
                    "API_KEY": {SECRET_SIG_KEY: SECRET_SIG, "value": "ak-1"},
                }
            }
        }
    )
    wire = rpc.deserialize_properties(struct, keep_unknowns=True)
    assert rpc.is_rpc_secret(wire["environment"])  # the SDK's own projection
    assert wire["environment"].get("variables") is None  # what the old code read: nothing
    assert plain(wire) == {
        "environment": {"variables": {"IDEMPOTENCY_STATE_TABLE": "state", "API_KEY": "ak-1"}}
    }


def test_secrets_are_unwrapped_at_any_depth_in_dicts_and_lists() -> None:
    wrapped = {
        "tags": rpc.wrap_rpc_secret({"owner": rpc.wrap_rpc_secret("team")}),
        "alarmActions": rpc.wrap_rpc_secret(["arn:a", rpc.wrap_rpc_secret("arn:b")]),
        "layers": ("arn:l1",),
        "timeout": 10.0,
    }
    assert plain(wrapped) == {
        "tags": {"owner": "team"},
        "alarmActions": ["arn:a", "arn:b"],
        "layers": ["arn:l1"],
        "timeout": 10.0,
    }


@pytest.mark.parametrize(
    ("inputs", "path"),
    [
        ({"environment": {"variables": {"TABLE": Unknown()}}}, "environment.variables.TABLE"),
        ({"alarmActions": ["arn:a", UNKNOWN_STRING_SENTINEL]}, "alarmActions[1]"),
        ({"policy": rpc.wrap_rpc_secret(Unknown())}, "policy"),
    ],
    ids=["sdk-unknown", "wire-sentinel", "secret-of-an-unknown"],
)
def test_an_unknown_is_refused_naming_its_property_path(inputs: object, path: str) -> None:
    with pytest.raises(UnknownInput) as refused:
        plain(inputs)
    assert refused.value.path == path
    assert f"input {path} is unknown when the emulator creates the resource" in str(refused.value)
    assert isinstance(refused.value, ValueError)  # the materialiser's refusal path catches it
