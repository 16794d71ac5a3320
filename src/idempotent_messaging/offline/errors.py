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


class MissingConfigError(ProgramError):
    """The program requires a configuration value the stack does not set (`config.require`):
    the Pulumi CLI refuses the stack, with this same message ("Missing required configuration
    variable 'proj:key'" and how to set it). `key` is the fully qualified key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class RuleFailureError(OfflineCheckError):
    """A mandatory rule raised: its verdict is unknown, so the check fails closed."""


class PartialDocumentError(OfflineCheckError):
    """A `pulumi preview --json` document lacks resources a rule needs (unchanged resources
    are omitted unless `--show-sames`): no verdict. `missing` names what it lacks."""

    def __init__(self, message: str, missing: list[str] | None = None) -> None:
        super().__init__(message)
        self.missing = list(missing or [])


class ConfigRefusedError(OfflineCheckError):
    """The program refused its configuration, as `pulumi preview` would refuse it: a
    component's ArgumentError, a `pulumi.RunError` the program raised, a missing
    `config.require` value. Not an engine fault and not a policy verdict (exit 3).

    ``path`` is the key path the value sits at (``consumers.orders.visibilityTimeoutSeconds``,
    ``proj:key``; None when the program named none), ``value`` the offending value (None when
    absent; ``"[secret]"`` for a secret), ``rule`` what it breaks and how to fix it; ``file`` and
    ``line`` locate it (the key's line in ``Pulumi.<stack>.yaml`` when it is there, else where
    the program raised)."""

    def __init__(
        self,
        path: str | None,
        value: object,
        rule: str,
        *,
        file: str | None = None,
        line: int | None = None,
        stack: str | None = None,
        absent: bool = False,
        program_file: str | None = None,
        program_line: int | None = None,
    ) -> None:
        self.path, self.value, self.rule = path, value, rule
        self.file, self.line, self.stack = file, line, stack
        self.absent = absent  # the key is not set at all (the rule says so)
        # Where the program raised (the line that read or checked the value), when known.
        self.program_file, self.program_line = program_file, program_line
        super().__init__(self.summary)

    def __str__(self) -> str:
        return self.summary

    @property
    def summary(self) -> str:
        """One line: key path, value and rule (where, when known)."""
        if self.path and not self.absent:
            what = f"{self.path}={self.value!r}: {self.rule}"
        else:
            what = self.rule
        where = f" ({self.file}:{self.line})" if self.file and self.line else ""
        where = where or (f" ({self.file})" if self.file else "")
        return f"configuration refused: {what}{where}"
