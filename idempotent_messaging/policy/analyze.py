"""Compatibility names for the offline engine's analyzer driver (see ``policy.offline``)."""

from .offline.analyzer import (
    PolicyConfigError,
    RuleError,
    Violation,
    analyze,
    analyze_with_errors,
    effective_config,
    load_config_file,
    make_servicer,
    pack_version,
)

__all__ = [
    "PolicyConfigError",
    "RuleError",
    "Violation",
    "analyze",
    "analyze_with_errors",
    "effective_config",
    "load_config_file",
    "make_servicer",
    "pack_version",
]
