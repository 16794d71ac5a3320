"""Where a finding is shown: every finding gets a file and a line, in every format.

A finding names the program line that declared its resource (the recorder's, or a state
document's `sourcePosition`). A resource without one (a stack export or `pulumi preview --json`
of a program in another language, or of a CLI that records no source positions; the stack
itself) is shown, in this order, at the `config:` line of the stack file `Pulumi.<stack>.yaml`,
at the first line of `Pulumi.yaml`, or at the line of the state document where its URN first
appears: a place a reviewer can open, and that SARIF can carry as `region.startLine` so that a
code-scanning upload annotates it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from .analyzer import Violation


def _line_of(path: Path, needle: str) -> int | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if needle in text:
                    return number
    except OSError:
        return None
    return None


def _config_files(directory: Path, stack: str) -> list[tuple[Path, int]]:
    """(file, line) of the stack file's `config:` (else its first line), then Pulumi.yaml's."""
    out: list[tuple[Path, int]] = []
    stack_file = directory / f"Pulumi.{stack}.yaml"
    if stack_file.is_file():
        out.append((stack_file, _line_of(stack_file, "config:") or 1))
    for name in ("Pulumi.yaml", "Pulumi.yml"):
        if (directory / name).is_file():
            out.append((directory / name, 1))
            break
    return out


def place(
    violations: Iterable[Violation],
    directory: Path,
    stack: str,
    documents: Sequence[Path] = (),
) -> None:
    """Give every violation without a file and line the best place there is (in place)."""
    configured = _config_files(directory, stack)
    for v in violations:
        if v.file and v.line:
            continue
        if configured:
            file, line = configured[0]
            v.file, v.line = str(file), line
            continue
        for document in documents:
            found = _line_of(document, v.urn)
            if found is not None:
                v.file, v.line = str(document), found
                break
