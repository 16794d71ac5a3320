"""The workflows pin every action to a full commit SHA with its release in a trailing comment
(GitHub's "Security hardening for GitHub Actions": a SHA is the only immutable reference; zizmor's
``unpinned-uses``, which ``make lint`` runs with actionlint), on a major that runs on Node 24:
GitHub deprecated the Node 20 runtime of JavaScript actions (GitHub changelog 2025-09-19,
"Deprecation of Node 20 on GitHub Actions runners")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

WORKFLOWS = sorted((Path(__file__).resolve().parents[2] / ".github" / "workflows").glob("*.yml"))
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<rest>.*)$")
PINNED = re.compile(r"^(?P<action>[\w.-]+/[\w.-]+(?:/[\w./-]+)?)@(?P<sha>[0-9a-f]{40})$")
VERSION_COMMENT = re.compile(r"^\s+# v(?P<major>\d+)\.\d+\.\d+\b")
NODE24_MAJORS = {
    "actions/checkout": 5,  # v5.0.0: runs.using node24
    "actions/setup-python": 6,  # v6.0.0: node24
    "aws-actions/configure-aws-credentials": 5,  # v5.0.0: node24
    "pulumi/actions": 7,  # v7.0.0: "Release v7 with Node 24 support" (pulumi/actions#1407)
    "github/codeql-action": 4,  # v4: node24 (v3 runs node20)
}
"""The first major of each action that declares ``runs.using: node24``."""


def uses_lines() -> list[tuple[str, int, str, str]]:
    found = []
    for path in WORKFLOWS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = USES.match(line)
            if match:
                found.append((path.name, number, match["ref"], match["rest"]))
    return found


def test_the_workflows_use_actions() -> None:
    assert len(uses_lines()) >= 10


@pytest.mark.parametrize(("where", "line", "ref", "rest"), uses_lines())
def test_every_action_is_pinned_to_a_sha_of_a_node24_release_named_in_a_comment(
    where: str, line: int, ref: str, rest: str
) -> None:
    pinned = PINNED.match(ref)
    assert pinned, f"{where}:{line}: {ref} is not <action>@<40-hex commit SHA>"
    comment = VERSION_COMMENT.match(rest)
    assert comment, f"{where}:{line}: {ref} has no '# vX.Y.Z' release comment"
    repository = "/".join(pinned["action"].split("/")[:2])
    assert repository in NODE24_MAJORS, f"{where}:{line}: which major of {repository} is node24?"
    assert int(comment["major"]) >= NODE24_MAJORS[repository], (
        f"{where}:{line}: {repository} v{comment['major']} runs on a deprecated Node runtime"
    )
