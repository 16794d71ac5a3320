"""Compatibility names for the offline engine's runner (see ``policy.offline``)."""

from .offline.errors import MissingPackageError, ProgramError
from .offline.mocks import AwsMocks, policy_document_from_args
from .offline.project import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_REGION,
    SECRET_PLACEHOLDER,
    STACK_TYPE,
    ProjectSpec,
    StackConfig,
    load_project,
    load_stack_config,
)
from .offline.recorder import RecordedResource, RecordingMonitor, struct_to_plain
from .offline.runner import ProgramRun, run_program

__all__ = [
    "DEFAULT_ACCOUNT_ID",
    "DEFAULT_REGION",
    "SECRET_PLACEHOLDER",
    "STACK_TYPE",
    "AwsMocks",
    "MissingPackageError",
    "ProgramError",
    "ProgramRun",
    "ProjectSpec",
    "RecordedResource",
    "RecordingMonitor",
    "StackConfig",
    "load_project",
    "load_stack_config",
    "policy_document_from_args",
    "run_program",
    "struct_to_plain",
]
