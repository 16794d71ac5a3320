"""What can go wrong in an offline check, each a distinct exit-2 cause with a message to act on."""

from __future__ import annotations


class OfflineCheckError(Exception):
    """The check could not produce a verdict; the message says what failed and what to do."""


class ProgramError(OfflineCheckError):
    """The project is malformed or its program raised; the message says which and why."""


class MissingPackageError(ProgramError):
    """The program imports a module that is not installed where the checker runs."""

    def __init__(self, module: str, message: str) -> None:
        super().__init__(message)
        self.module = module


class RuleFailureError(OfflineCheckError):
    """A mandatory rule raised: its verdict is unknown, so the check fails closed."""
