"""A command that keeps an emulator running in a process of its own (`make demo KEEP=1`,
`idempotent-messaging-local run --keep`), driven as a user's terminal drives it: wait for the
line saying it keeps running, use it, Ctrl-C, read everything it printed.

Readiness is the process's own line, not a deadline: on a loaded machine the deploy and the
scenario before it take what they take. The only bound is a hang guard (HANG_GUARD_S, over 10x
the slowest run measured on a loaded 2-core machine), which fails the test with the output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import IO

import pytest

# About 30 s wall measured for the demo's scenario on a loaded machine; a run that has not
# said it keeps running after this long is hung.
HANG_GUARD_S = 600.0


class KeptProcess:
    """``argv`` started with its stdout and stderr read line by line by threads: merged into
    ``output``, or with ``separate_stderr`` kept apart (``output`` and ``errors``)."""

    def __init__(
        self, argv: list[str], cwd: Path, env: dict[str, str], *, separate_stderr: bool = False
    ) -> None:
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if separate_stderr else subprocess.STDOUT,
            text=True,
        )
        self._lines: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._changed = threading.Condition()
        self._open = 0
        self._readers: list[threading.Thread] = []
        for name, stream in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            if stream is not None:
                self._open += 1
                reader = threading.Thread(target=self._read, args=(name, stream), daemon=True)
                reader.start()
                self._readers.append(reader)

    def _read(self, name: str, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self._lines[name].append(line)
                self._changed.notify_all()
        with self._changed:
            self._open -= 1
            self._changed.notify_all()

    def _join(self) -> None:
        for reader in self._readers:
            reader.join()

    @property
    def output(self) -> str:
        """stdout (with stderr, unless kept apart)."""
        with self._changed:
            return "".join(self._lines["stdout"])

    @property
    def errors(self) -> str:
        with self._changed:
            return "".join(self._lines["stderr"])

    def _printed(self, text: str) -> bool:
        return any(text in line for lines in self._lines.values() for line in lines)

    def wait_for_line(self, text: str) -> None:
        """Until a line holding ``text`` is printed (on either stream); fails if the process
        ends first, or at the hang guard."""
        with self._changed:
            ready = self._changed.wait_for(
                lambda: self._open == 0 or self._printed(text), timeout=HANG_GUARD_S
            )
            found = self._printed(text)
        if not found:
            self.proc.kill()
            self.proc.wait()
            self._join()
            why = "exited" if ready else f"hung for {HANG_GUARD_S:.0f} s"
            pytest.fail(
                f"{why} before printing {text!r} (rc={self.proc.returncode}):\n"
                f"{self.output}{self.errors}"
            )

    def interrupt(self) -> str:
        """Ctrl-C; its whole output once it exited (killed, and the test failed, if it hangs)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # never leave an emulator behind
            self.proc.wait()
            self._join()
            pytest.fail(f"Ctrl-C did not stop it within {HANG_GUARD_S:.0f} s:\n{self.output}")
        self._join()
        return self.output

    def __enter__(self) -> KeptProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.proc.poll() is None:  # a failed test: stop it, never leave it running
            self.proc.kill()
            self.proc.wait()
        self._join()


def environment(state_dir: Path) -> dict[str, str]:
    return {**os.environ, "EMULATOR_STATE_DIR": str(state_dir)}
