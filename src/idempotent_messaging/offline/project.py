"""Read a Pulumi project the way the CLI does: `Pulumi.yaml`, `Pulumi.<stack>.yaml`, its venv.

``load_project(dir)`` parses ``name``, ``main`` (a file or a directory holding ``__main__.py``),
the project-level ``config:`` defaults and the Python runtime's ``virtualenv`` option (the
program's own packages, e.g. a provider SDK this checker does not ship).
``load_stack_config(project, stack)`` merges the defaults with the stack file's ``config:``
(keys without a namespace belong to the project; structured values are JSON-encoded as the CLI
hands them to programs; ``secure:`` values cannot be decrypted offline, so they become
``SECRET_PLACEHOLDER`` and are marked secret). A key `Pulumi.yaml` declares ``secret: true``
whose value is plaintext (in the stack file, or a project default) is refused as the Pulumi CLI
refuses it ("Stack '<stack>' with configuration key '<key>' must be encrypted as it's
secret", pulumi/sdk `workspace` config validation): `ConfigRefusedError`, exit 3, naming the
key and never the value.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .config_lines import SECRET_SHOWN, locate
from .errors import ConfigRefusedError, ProgramError

SECRET_PLACEHOLDER = "[secret: encrypted in the stack file, not decrypted offline]"
DEFAULT_ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"
STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class ProjectSpec:
    directory: Path
    name: str
    main: Path  # the __main__.py (or main file) to execute
    config_defaults: dict[str, Any]  # fully qualified key -> default value
    # site-packages of the program's own virtualenv (Pulumi.yaml `runtime.options.virtualenv`,
    # else a `venv/` or `.venv/` beside Pulumi.yaml): searched after the checker's own packages.
    package_paths: list[Path] = field(default_factory=list)
    # Fully qualified keys `Pulumi.yaml` declares `secret: true`: their value must be encrypted.
    secret_declared: frozenset[str] = frozenset()


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
    secret: set[str] = set()
    schema = doc.get("config") or {}
    if not isinstance(schema, dict):
        raise ProgramError(f"{project_file}: `config` must be a mapping")
    for key, spec in schema.items():
        if isinstance(spec, dict) and ("default" in spec or "value" in spec):
            defaults[_qualify(key, name)] = spec.get("default", spec.get("value"))
        elif not isinstance(spec, dict):
            defaults[_qualify(key, name)] = spec  # short form `key: value`
        if isinstance(spec, dict) and spec.get("secret") is True:
            secret.add(_qualify(key, name))
    options = runtime.get("options") if isinstance(runtime, dict) else None
    venv_option = options.get("virtualenv") if isinstance(options, dict) else None
    return ProjectSpec(
        directory,
        name,
        main,
        defaults,
        _venv_site_packages(directory, venv_option),
        frozenset(secret),
    )


def _venv_site_packages(directory: Path, venv_option: Any) -> list[Path]:
    candidates = (
        [directory / str(venv_option)] if venv_option else [directory / "venv", directory / ".venv"]
    )
    found: list[Path] = []
    for venv in candidates:
        found += sorted(venv.glob("lib/python3*/site-packages")) + sorted(
            venv.glob("Lib/site-packages")
        )
    return found


def load_stack_config(project: ProjectSpec, stack: str) -> StackConfig:
    """The stack's configuration as the CLI hands it to the program; raises ConfigRefusedError
    for a plaintext value of a key `Pulumi.yaml` declares secret, as the CLI refuses it."""
    values = {k: _config_string(v) for k, v in project.config_defaults.items()}
    plaintext = {k for k in project.config_defaults if k in project.secret_declared}
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
                plaintext.discard(qualified)
            else:
                values[qualified] = _config_string(value)
                if qualified in project.secret_declared:
                    plaintext.add(qualified)
    if plaintext:
        _refuse_plaintext_secret(project, stack, sorted(plaintext)[0], stack_file)
    return StackConfig(values, secret_keys)


def _refuse_plaintext_secret(project: ProjectSpec, stack: str, key: str, stack_file: Path) -> None:
    """The CLI's refusal of a plaintext value for a key declared secret, located at the key's
    line in the stack file (else at its default in `Pulumi.yaml`); the value is never shown."""
    local = key.split(":", 1)[1] if key.startswith(f"{project.name}:") else key
    file, line = locate(project.directory, project.name, stack, key)
    raise ConfigRefusedError(
        key,
        SECRET_SHOWN,
        f"Stack '{stack}' with configuration key '{local}' must be encrypted as it's secret "
        f"(Pulumi.yaml declares it `secret: true`): set it with `pulumi config set --secret "
        f"{local} <value>`, which writes a `secure:` value to {stack_file.name}",
        file=file,
        line=line,
        stack=stack,
    )
