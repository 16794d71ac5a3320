"""``deploy_stage()``: a whole config-driven program in one call, the reference one included.

A project's ``__main__.py``::

    from idempotent_messaging.stage import deploy_stage

    deploy_stage()

deploys every consumer and fan-out its stack file declares under ``<project>:consumers`` and
``<project>:fanouts`` (one object per instance, any plain field of the component's args in
camelCase: ``handler``, ``codePath``, ``businessTable``, the billing source of a fan-out ...), one
stack-wide alarm topic, and exports every instance's outputs (``<name>_<output>``, ``-`` as
``_``). The reference ``__main__.py`` is the same call with its own defaults and code.

Before any resource exists it refuses, with ONE line that names the stack-file key path, the
value, the rule and the fix in stack-file (camelCase) terms:
- a key in the project's namespace that is neither a stage setting (``StageConfig``) nor
  declared in the project's own ``Pulumi.yaml`` ``config:`` block, with a did-you-mean
  (``payments:consumer`` -> ``payments:consumers``);
- every value a component refuses (``payments:consumers.payments.visibilityTimeoutSeconds``).

The refusal is a ``StageConfigError``: an ``ArgumentError`` and a ``pulumi.RunError``, which the
Pulumi CLI prints as its message alone, without a traceback. A value of a secret key
(``pulumi config set --secret``) never appears in it.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pulumi
import pulumi.runtime
import yaml

from idempotent_messaging.components import (
    CONSUMER_OUTPUTS,
    FANOUT_OUTPUTS,
    BusinessTableArgs,
    IdempotentQueueConsumer,
    IdempotentQueueConsumerArgs,
    MonthlyFanout,
    MonthlyFanoutArgs,
    alarms,
)
from idempotent_messaging.components.convert import args_from_mapping
from idempotent_messaging.components.errors import ArgumentError, camel

from .config import CONSUMERS_KEY, FANOUTS_KEY, StageConfig, config_path

__all__ = ["DeployedStage", "StageConfigError", "deploy_stage"]

PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")
SECRET = "[secret]"
"""What an error shows instead of a value held by a secret config key."""
NOT_SHARED = frozenset({CONSUMERS_KEY, FANOUTS_KEY, "alarm_emails"})
"""StageConfig fields that are not handed to every instance: the instances themselves, and the
emails (they subscribe to the ONE stack-wide alarm topic, not to one topic per instance)."""
ARGS_NOUNS: Mapping[str, str] = {
    IdempotentQueueConsumerArgs.__name__: "consumer",
    MonthlyFanoutArgs.__name__: "fan-out",
    BusinessTableArgs.__name__: "businessTable",
}
"""Python class names a rule may quote, in the stack file's words."""

A = TypeVar("A")


class StageConfigError(ArgumentError, pulumi.RunError):
    """A refused stage configuration: ``<project>:<key path>=<value>: <rule>``. A RunError, so
    ``pulumi preview``/``up`` print this one line without a traceback."""


@dataclasses.dataclass(frozen=True)
class DeployedStage:
    """What ``deploy_stage`` created."""

    stage: StageConfig
    """The stage settings as read (stack-wide keys plus every instance's object)."""
    consumers: Mapping[str, IdempotentQueueConsumer]
    """Consumer name -> the component."""
    fanouts: Mapping[str, MonthlyFanout]
    """Fan-out name -> the component."""
    alarm_topic_arn: pulumi.Output[str] | None
    """The stack's one alarm topic (None when the stack declares no instance)."""


def deploy_stage(
    *,
    defaults: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    code: pulumi.Archive | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    export: bool = True,
) -> DeployedStage:
    """Deploy every consumer and fan-out the stack's config declares.

    ``defaults``: per instance, values the program supplies and the stack file may override,
    shaped like the config: ``{"consumers": {"orders": {"handler": ..., "business_table":
    BusinessTableArgs(...)}}, "fanouts": {...}}`` (field names in snake_case or camelCase;
    Python values such as Outputs and archives allowed). Only instances the config names are
    deployed. ``code``: the code of every instance that names neither ``codePath`` nor ``code``
    (``consumerCodePath``/``consumerCode`` for a fan-out). ``project_dir``: where Pulumi.yaml is
    (default: found from the working directory up, as the Pulumi CLI runs programs there);
    a relative ``codePath`` is relative to it. ``export``: export every output.

    Raises ``StageConfigError`` (one line, see the module docstring) before any resource exists.
    """
    project, stack = pulumi.get_project(), pulumi.get_stack()
    found = _project_file(project, project_dir)
    refusal = _Refusal(project, stack, found)
    by_kind = _checked_defaults(defaults)
    with refusal.translating():
        if found is not None:
            _check_keys(project, found, refusal.secrets)
        stage = refusal.stage = StageConfig.from_pulumi_config(pulumi.Config())
        root = found.parent if found is not None else Path.cwd()
        consumers = {
            name: _instance_args(
                IdempotentQueueConsumerArgs,
                CONSUMERS_KEY,
                name,
                settings,
                by_kind[CONSUMERS_KEY].get(name, {}),
                stage,
                code,
                root,
            )
            for name, settings in sorted(stage.consumers.items())
        }
        fanouts = {
            name: _instance_args(
                MonthlyFanoutArgs,
                FANOUTS_KEY,
                name,
                settings,
                by_kind[FANOUTS_KEY].get(name, {}),
                stage,
                code,
                root,
            )
            for name, settings in sorted(stage.fanouts.items())
        }
        if not consumers and not fanouts:
            return DeployedStage(stage, {}, {}, None)
        # One alarm topic for the whole stack: on-call confirms one subscription per address
        # instead of one per component (each component would otherwise create its own topic).
        topic = alarms.create_stack_alarm_topic(
            "alarms", topic_name=f"{project}-{stack}-alarms", emails=stage.alarm_emails
        )
        alarm_topic_arn = topic.topic.arn
        if export:
            pulumi.export("alarm_topic_arn", alarm_topic_arn)
        created: dict[str, IdempotentQueueConsumer] = {}
        for name, args in consumers.items():
            with config_path(f"{CONSUMERS_KEY}.{name}"):
                consumer = IdempotentQueueConsumer(name, _with_topic(args, alarm_topic_arn))
            created[name] = consumer
            if export:
                _export(export_name(name), consumer, CONSUMER_OUTPUTS)
        made: dict[str, MonthlyFanout] = {}
        for name, f_args in fanouts.items():
            with config_path(f"{FANOUTS_KEY}.{name}"):
                fanout = MonthlyFanout(name, _with_topic(f_args, alarm_topic_arn))
            made[name] = fanout
            if export:
                _export(export_name(name), fanout, FANOUT_OUTPUTS)
                _export(f"{export_name(name)}_consumer", fanout.consumer, CONSUMER_OUTPUTS)
    return DeployedStage(stage, created, made, alarm_topic_arn)


def export_name(name: str) -> str:
    """Stack output prefix of an instance: ``monthly-charge`` -> ``monthly_charge``."""
    return name.replace("-", "_")


def _export(prefix: str, component: Any, outputs: Iterable[str]) -> None:
    for output in outputs:
        pulumi.export(f"{prefix}_{output}", getattr(component, output))


def _with_topic(args: A, alarm_topic_arn: pulumi.Input[str]) -> A:
    """The stack's alarm topic, unless the instance names its own topic or emails (emails
    subscribe to a topic the component creates for itself)."""
    emails: tuple[str, ...] = tuple(getattr(args, "alarm_emails", ()))
    if getattr(args, "alarm_topic_arn", None) is not None or emails:
        return args
    replaced: A = dataclasses.replace(args, alarm_topic_arn=alarm_topic_arn)  # type: ignore[type-var]
    return replaced


def _checked_defaults(
    defaults: Mapping[str, Mapping[str, Mapping[str, Any]]] | None,
) -> dict[str, Mapping[str, Mapping[str, Any]]]:
    """The program's defaults by kind; a misshapen argument is the program's own TypeError."""
    by_kind: dict[str, Mapping[str, Mapping[str, Any]]] = {CONSUMERS_KEY: {}, FANOUTS_KEY: {}}
    for kind, instances in (defaults or {}).items():
        if kind not in by_kind:
            raise TypeError(
                f"deploy_stage(defaults=...): key {kind!r} is neither {CONSUMERS_KEY!r} nor "
                f"{FANOUTS_KEY!r}"
            )
        if not isinstance(instances, Mapping) or not all(
            isinstance(v, Mapping) for v in instances.values()
        ):
            raise TypeError(
                f"deploy_stage(defaults=...)[{kind!r}] must map instance names to mappings"
            )
        by_kind[kind] = instances
    return by_kind


def _instance_args(
    args_type: type[A],
    kind: str,
    name: str,
    settings: Mapping[str, Any],
    program_defaults: Mapping[str, Any],
    stage: StageConfig,
    code: pulumi.Archive | None,
    root: Path,
) -> A:
    """One instance's args: the config object over the stack-wide settings over the program's
    defaults; the program's code unless the instance names its own; ``codePath`` from root."""
    fields = {f.name for f in dataclasses.fields(args_type)}  # type: ignore[arg-type]
    by_key = {camel(f): f for f in fields} | {f: f for f in fields}
    base = {by_key.get(k, k): v for k, v in program_defaults.items()}
    shared = {
        f.name: getattr(stage, f.name)
        for f in dataclasses.fields(StageConfig)
        if f.name not in NOT_SHARED and f.name in fields
    }
    args = args_from_mapping(args_type, settings, f"{kind}.{name}", defaults={**base, **shared})
    prefix = "consumer_" if args_type is MonthlyFanoutArgs else ""
    path_field, code_field = f"{prefix}code_path", f"{prefix}code"
    code_path = getattr(args, path_field)
    if code_path is not None and not Path(code_path).is_absolute():
        args = dataclasses.replace(args, **{path_field: str(root / code_path)})  # type: ignore[type-var]
    elif code_path is None and getattr(args, code_field) is None and code is not None:
        args = dataclasses.replace(args, **{code_field: code})  # type: ignore[type-var]
    return args


# --- Keys of the project's namespace -----------------------------------------------------------


def _project_file(project: str, project_dir: str | os.PathLike[str] | None) -> Path | None:
    """This project's Pulumi.yaml: in ``project_dir``, else the first one from the working
    directory up whose ``name`` is the project (another project's file says nothing here)."""
    start = Path(project_dir) if project_dir is not None else Path.cwd()
    for directory in [start, *start.resolve().parents]:
        for name in PROJECT_FILES:
            candidate = directory / name
            if candidate.is_file():
                if _yaml(candidate).get("name") == project:
                    return candidate
                if project_dir is not None:
                    return None
        if project_dir is not None:
            return None
    return None


def _yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def stage_keys() -> set[str]:
    """The keys StageConfig reads (``logLevel``, ``consumers``, ...), in the project namespace."""
    return {camel(f.name) for f in dataclasses.fields(StageConfig)}


def declared_keys(project: str, project_file: Path) -> set[str]:
    """Keys of the project's namespace that its Pulumi.yaml ``config:`` block declares."""
    declared: set[str] = set()
    block = _yaml(project_file).get("config")
    for key in block if isinstance(block, dict) else ():
        namespace, _, bare = str(key).rpartition(":")
        if namespace in ("", project):
            declared.add(bare)
    return declared


def config_values(project: str) -> dict[str, Any]:
    """Every config value the engine passed in the project's namespace: bare key -> value."""
    values = {**pulumi.runtime.get_config_env(), **pulumi.runtime.config.CONFIG.get()}
    prefix = f"{project}:"
    return {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}


def _check_keys(project: str, project_file: Path, secrets: Mapping[str, Any]) -> None:
    ours, declared = stage_keys(), declared_keys(project, project_file)
    unknown = sorted(set(config_values(project)) - ours - declared)
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(key, sorted(ours | declared), n=1)
    hint = (
        f"did you mean {project}:{close[0]}?"
        if close
        else (
            f"the stage settings are {', '.join(sorted(ours))}; to keep a setting of your own, "
            f"declare it in {project_file.name}: config: {key}: {{type: string}}"
        )
    )
    more = f" ({len(unknown) - 1} more unknown: {', '.join(unknown[1:])})" if unknown[1:] else ""
    value = config_values(project)[key]
    raise ArgumentError(
        key,
        SecretValue() if f"{project}:{key}" in secrets else _shown(value),
        f"is neither a stage setting of idempotent-messaging nor declared in "
        f"{project_file.name}'s config block; {hint}{more}",
    )


def _shown(raw: Any) -> Any:
    """A config value as the stack file holds it (the engine passes structured ones as JSON)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _yaml_repr(value: Any) -> str:
    """A value as YAML (flow style) would show it; strings quoted, as Python shows them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, default=str, separators=(", ", ": "))
    return repr(value)


class SecretValue:
    """Stands for a secret in an error: its repr is ``[secret]``."""

    def __repr__(self) -> str:
        return SECRET


# --- Refusals in the stack file's words --------------------------------------------------------

_ASSIGNED_CONSTANT = re.compile(r"\b([a-z][a-z0-9_]*)=(True|False|None)\b")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_YAML_CONSTANTS = {"True": "true", "False": "false", "None": "null"}


def _field_names() -> set[str]:
    names: set[str] = set()
    for cls in (IdempotentQueueConsumerArgs, MonthlyFanoutArgs, BusinessTableArgs, StageConfig):
        names.update(f.name for f in dataclasses.fields(cls))
    return names


def in_stack_file_words(rule: str) -> str:
    """A rule written for Python callers, in the stack file's words: field names in camelCase,
    ``x_y=True`` as ``xY: true``, Python constants as YAML's, args classes as what they
    configure (``IdempotentQueueConsumerArgs`` -> consumer)."""
    fields = _field_names()
    text = rule.replace("leave it None", "leave it out")
    text = _ASSIGNED_CONSTANT.sub(
        lambda m: (
            f"{camel(m.group(1))}: {_YAML_CONSTANTS[m.group(2)]}"
            if m.group(1) in fields
            else m.group(0)
        ),
        text,
    )
    text = _SNAKE.sub(lambda m: camel(m.group(0)) if m.group(0) in fields else m.group(0), text)
    for python, word in _YAML_CONSTANTS.items():
        text = re.sub(rf"\b{python}\b", word, text)
    for cls, noun in ARGS_NOUNS.items():
        text = text.replace(f"is not a field of {cls}", f"is not a {noun} setting")
        text = text.replace(f"is required by {cls}", f"is required for a {noun}")
        text = text.replace(
            f"must be an object of {cls} fields", f"must be an object of {noun} settings"
        )
        text = text.replace(cls, noun)
    return text.replace("; its fields: ", "; its settings: ")


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif value is not None:
        yield str(value)


class _Refusal:
    """Turns an ArgumentError (or a config type error) into the one-line StageConfigError."""

    def __init__(self, project: str, stack: str, project_file: Path | None) -> None:
        self.project, self.stack, self.project_file = project, stack, project_file
        self.stage: StageConfig | None = None
        self.secrets: dict[str, Any] = {
            f"{project}:{k}": _shown(v)
            for k, v in config_values(project).items()
            if pulumi.runtime.is_config_secret(f"{project}:{k}")
        }

    @contextmanager
    def translating(self) -> Iterator[None]:
        try:
            yield
        except StageConfigError:
            raise
        except pulumi.ConfigTypeError as exc:
            bare = exc.key.split(":", 1)[-1]
            raise self.error(bare, exc.value, f"must be a {exc.expect_type}") from None
        except ArgumentError as exc:
            raise self.error(exc.path, exc.value, exc.rule) from None

    def error(self, path: str, value: Any, rule: str) -> StageConfigError:
        path, origin = self._origin(path)
        key = f"{self.project}:{path}"
        top = f"{self.project}:{path.split('.', 1)[0]}"
        words = in_stack_file_words(rule)
        if top in self.secrets:
            value = SecretValue()
            for leaf in sorted(set(_leaves(self.secrets[top])), key=len, reverse=True):
                if len(leaf) >= 3:
                    words = words.replace(leaf, SECRET)
        rule_line = f"{words} ({origin or self._where(path)})"
        error = StageConfigError(key, value, rule_line)
        # ONE line whatever a value holds (a multi-line string in the stack file), the value
        # as the stack file spells it.
        error.args = (" ".join(f"{key}={_yaml_repr(value)}: {rule_line}".split()),)
        return error

    def _origin(self, path: str) -> tuple[str, str]:
        """Where an instance's refused value came from when its object does not set it: the
        stack-wide key (``logRetentionDays``) it inherits, or the program's own default."""
        kind, _, rest = path.partition(".")
        name, _, field = rest.partition(".")
        field = re.split(r"[.\[]", field, maxsplit=1)[0]
        if self.stage is None or kind not in (CONSUMERS_KEY, FANOUTS_KEY) or not field:
            return path, ""
        settings = getattr(self.stage, kind).get(name)
        if not isinstance(settings, Mapping) or field in settings:
            return path, ""
        snake = {camel(f.name): f.name for f in dataclasses.fields(StageConfig)}
        if field in snake and snake[field] not in NOT_SHARED and snake[field] not in settings:
            return field + path.split(field, 1)[1], f"a stack-wide setting; {self._where(field)}"
        stack_file = f"Pulumi.{self.stack}.yaml"
        return path, f"the program's default; override it in {stack_file} under {kind}.{name}"

    def _where(self, path: str) -> str:
        """Which file sets the top-level key: the stack file, Pulumi.yaml's default, or the
        program (a default deploy_stage was given)."""
        top = path.split(".", 1)[0]
        stack_file = f"Pulumi.{self.stack}.yaml"
        if self.project_file is not None:
            config = _yaml(self.project_file.parent / stack_file).get("config")
            if isinstance(config, dict) and (top in config or f"{self.project}:{top}" in config):
                return f"set in {stack_file}"
            if top in declared_keys(self.project, self.project_file):
                return f"from the default in {self.project_file.name}; override it in {stack_file}"
        return f"fix it in {stack_file}"
