"""`idempotent-messaging-check --format json|sarif`: the document alone on stdout.

A program may print, log, or start a child process that writes to the descriptor a script
reads (``subprocess.run(["git", "rev-parse", "HEAD"])`` to tag resources): all of it goes to
stderr, so ``idempotent-messaging-check ... --format json | jq`` parses the whole of stdout.
In-process, captured at the file descriptors where a pipe would read them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idempotent_messaging.offline import main
from tests.policy.conftest import GOOD, write_project

pytestmark = pytest.mark.policy

CHATTY = (
    GOOD
    + """
import os
import subprocess
import sys

print("chatty program")
pulumi.log.info("a log line of the program")
os.write(1, b"written to descriptor 1\\n")
subprocess.run([sys.executable, "-c", "print('a child process of the program')"], check=True)
"""
)
CHATTER = (
    "chatty program",
    "written to descriptor 1",
    "a child process of the program",
)


@pytest.fixture(scope="module")
def chatty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("chatty") / "p", CHATTY)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_the_document_is_alone_on_stdout_whatever_the_program_writes(
    chatty: Path, fmt: str, capfd: pytest.CaptureFixture[str]
) -> None:
    code = main(["--project", str(chatty), "--stack", "dev", "--format", fmt])
    out, err = capfd.readouterr()
    assert code == 0, err[-3000:]
    document = json.loads(out)  # the whole of stdout
    assert ("violations" in document) if fmt == "json" else (document["version"] == "2.1.0")
    for line in CHATTER:
        assert line in err and line not in out, line


def test_a_run_without_a_verdict_still_writes_one_document_alone(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    broken = write_project(
        tmp_path / "broken",
        "import os\nos.write(1, b'about to fail\\n')\nraise RuntimeError('boom')\n",
    )
    code = main(["--project", str(broken), "--stack", "dev", "--format", "json"])
    out, err = capfd.readouterr()
    assert code == 2
    assert json.loads(out)["error"]["stage"] == "program"
    assert "about to fail" in err and "about to fail" not in out
