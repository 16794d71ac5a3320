"""Pulumi's input wrappers, seen through: what the emulator creates is the plain value, or nothing.

The Pulumi SDK awaits every Output a program passes (nested in a dict or a list, the result of
``Output.all``/``concat``/``format`` or of an ``apply``) before it registers a resource, and
sends the result on the wire, where two wrappers survive into what the mocks receive
(``pulumi.runtime.rpc.deserialize_properties``):

- a **secret** (``config.require_secret``, ``pulumi.Output.secret``, or any Output derived from
  one) is the dict ``{SECRET_SIG_KEY: SECRET_SIG, "value": <plain>}``, and the SDK pushes the
  secretness up to the enclosing dict or list (``deserialize_property``: "push the secretness
  'up' a level"), so ONE secret variable wraps the whole ``environment.variables`` map;
- an **unknown** (a value the engine does not know) is ``pulumi.output.Unknown`` (the offline
  recorder keeps unknowns in both modes), or a string equal to one of the engine's unknown
  sentinels.

A secret is a property of the value's handling (Pulumi encrypts it in state and masks it in
output), not of the value: AWS receives the plaintext, so the emulator must too. An unknown
has no value to create anything with: the resource is refused, naming the property, instead
of being created with a placeholder the program never meant.
"""

from __future__ import annotations

from typing import Any

from pulumi.output import Unknown

from idempotent_messaging.rules.values import UNKNOWN, UNKNOWN_SENTINELS

SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
"""The key of Pulumi's special-signature dicts (``rpc._special_sig_key``)."""
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
"""The signature of a secret (``rpc._special_secret_sig``)."""


class UnknownInput(ValueError):
    """A resource input whose value the engine does not know; ``path`` names it."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"input {path or '(the whole value)'} is unknown when the emulator creates the "
            "resource (an output no earlier resource of this run produced); the emulator "
            "creates nothing from a placeholder"
        )


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG_KEY) == SECRET_SIG


def _is_unknown(value: Any) -> bool:
    return (
        isinstance(value, Unknown)
        or value is UNKNOWN
        or (isinstance(value, str) and value in UNKNOWN_SENTINELS)
    )


def plain(value: Any, path: str = "") -> Any:
    """``value`` with every secret wrapper removed, at any depth. Raises ``UnknownInput`` at
    the first unknown, with its property path (``environment.variables.API_KEY``)."""
    if is_secret(value):
        return plain(value.get("value"), path)
    if _is_unknown(value):
        raise UnknownInput(path)
    if isinstance(value, dict):
        return {k: plain(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def plain_outputs(outputs: dict[str, Any]) -> dict[str, Any]:
    """Stack outputs as ``pulumi stack output --json --show-secrets`` prints them: secrets as
    their values; an output the run never knew is None (there is no value to show)."""
    shown: dict[str, Any] = {}
    for key, value in outputs.items():
        try:
            shown[key] = plain(value, key)
        except UnknownInput:
            shown[key] = None
    return shown
