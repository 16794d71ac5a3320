"""Every documented install line works as written, pasted into a fresh virtualenv.

The lines are read from the pages themselves (README's sh blocks) and from the requirements
files the Pulumi CLI installs (policy/, components/, examples/*/), then run verbatim by bash
with the variables the docs tell the user to set: REPO_URL (a git URL of this clone), REF (a
commit that exists there), WHEEL (a wheel `make dist` built) and IDEMPOTENT_MESSAGING_SOURCE.

The policy pack's requirements are installed for real and the pack is served from that venv,
as `pulumi preview --policy-pack policy` does; the heavy lines (the `aws` extra: pulumi-aws is
~1 GB unpacked) are resolved with pip's own dry run (PIP_DRY_RUN, the environment form of
`--dry-run`): the git clone, the build and the resolution of every extra are real, the unpack
is skipped; lines that request exactly the same distribution, extras and dependency metadata
share one resolution (`resolved`). No placeholder (OWNER, a tag that does not exist) survives
anywhere.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from idempotent_messaging.rules.pack import POLICY_NAMES
from tests.e2e.packaging import build_once, built_wheel, compute_once, make_venv

REPOSITORY = Path(__file__).resolve().parents[2]
REQUIREMENTS = {
    "policy": REPOSITORY / "policy" / "requirements.txt",
    "components": REPOSITORY / "components" / "requirements.txt",
    **{
        f"examples/{p.parent.name}": p
        for p in sorted((REPOSITORY / "examples").glob("*/requirements.txt"))
    },
}
PLACEHOLDERS = re.compile(r"\bOWNER\b|@v\d+\.\d+\.\d+\b")
# The distributions each form must bring: no extra is the pack's light set; `aws` the rest.
LIGHT = {"pulumi", "pulumi-policy", "idempotent-messaging"}
AWS = {"pulumi-aws", "boto3", "aws-lambda-powertools", "pyyaml"}


def shell_lines(page: Path) -> list[str]:
    """The `pip install` lines of a page's sh blocks, verbatim."""
    lines, inside = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() in {"```sh", "```bash"}
            continue
        if inside and re.match(r"\s*pip install ", line):
            lines.append(line.split("#", 1)[0].strip())
    return lines


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The variables the docs name: a git URL of this clone at its HEAD, and the wheel `make
    dist` builds (the run's one, tests/e2e/packaging.py; the examples install it too)."""
    ref = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPOSITORY, check=True, capture_output=True, text=True
    ).stdout.strip()
    wheel = built_wheel(tmp_path_factory)
    # `file://localhost/...`: pip's URL parser refuses `git+file:///...` (no host), as README says.
    return {"REPO_URL": f"file://localhost{REPOSITORY}", "REF": ref, "WHEEL": str(wheel)}


def run_in(
    venv: Path, command: str, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`command` exactly as pasted, with the venv's bin first on PATH (its `pip`)."""
    full = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))
        },
        **env,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
    }
    # A hang guard, not a budget: a full resolution measured about 45 s here on a loaded
    # machine; pip's own network timeout (PIP_DEFAULT_TIMEOUT) fails a stalled download first.
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=full, capture_output=True, text=True, timeout=3600
    )


def dry_run(
    venv: Path, command: str, env: dict[str, str], cwd: Path, *, deps: bool = True
) -> list[dict[str, Any]]:
    """What pip would install for `command`, resolved for real (PIP_DRY_RUN + a JSON report):
    the report's `install` entries. Without ``deps`` (PIP_NO_DEPS) only what the line itself
    names: its distribution, extras and metadata, built from its source (a git clone, a wheel)
    as the full run builds it."""
    report = cwd / f"report-{len(list(cwd.glob('report-*.json')))}.json"
    variables = {"PIP_DRY_RUN": "1", "PIP_REPORT": str(report)}
    if not deps:
        variables["PIP_NO_DEPS"] = "1"
    done = run_in(venv, command, {**env, **variables}, cwd)
    assert done.returncode == 0, f"`{command}` failed:\n{done.stderr[-3000:]}"
    installed: list[dict[str, Any]] = json.loads(report.read_text())["install"]
    return installed


def names(installed: list[dict[str, Any]]) -> set[str]:
    return {canonical(i["metadata"]["name"]) for i in installed}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requested(installed: list[dict[str, Any]]) -> list[Any]:
    """What a resolution of these requests depends on: each requested distribution's name,
    extras, dependencies and Python requirement (not its source or version: the same metadata
    from a git build or a wheel resolves the same)."""
    return sorted(
        [
            canonical(i["metadata"]["name"]),
            sorted(i.get("requested_extras") or []),
            sorted(i["metadata"].get("requires_dist") or []),
            i["metadata"].get("requires_python") or "",
        ]
        for i in installed
        if i.get("requested")
    )


def test_no_install_line_carries_a_placeholder() -> None:
    pages = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
    pages += [*REQUIREMENTS.values(), *sorted((REPOSITORY / "examples").glob("*/README.md"))]
    for page in pages:
        found = PLACEHOLDERS.findall(page.read_text())
        assert not found, f"{page.relative_to(REPOSITORY)}: placeholder {found}"
    assert shell_lines(REPOSITORY / "README.md"), "the README shows no pip install line"


def install_lines(sources: dict[str, str]) -> dict[str, tuple[str, dict[str, str]]]:
    """Every install line of the docs and requirement files, keyed by the README line or the
    file's name: (the command as pasted, the variables it reads). A requirement file resolves
    from the wheel `make dist` builds (the git form is the README line's)."""
    lines = {line: (line, sources) for line in shell_lines(REPOSITORY / "README.md")}
    from_wheel = {**sources, "IDEMPOTENT_MESSAGING_SOURCE": f"file://{sources['WHEEL']}"}
    for name in sorted(set(REQUIREMENTS) - {"policy"}):
        lines[name] = (f"pip install -r {REQUIREMENTS[name]}", from_wheel)
    return lines


@pytest.fixture(scope="module")
def resolved(
    sources: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """Every install line run by pip as pasted, in ONE fresh venv (a dry run installs nothing),
    once per test run (tests/e2e/packaging.py).

    Each line is first resolved without its dependencies (PIP_NO_DEPS): pip parses it, fetches
    or builds what it names (the git clone and build included) and reports the distribution,
    extras and dependency metadata it requests. The first line requesting a given set resolves
    its dependencies for real; a later line requesting exactly the same set (README's wheel
    line and the requirement files naming the package with the same extra) has the same
    resolution, and takes it instead of repeating a resolution that costs tens of CPU-seconds
    (PyPI's index pages of botocore or pulumi-aws hold tens of thousands of files).
    """

    def compute(directory: Path) -> dict[str, dict[str, Any]]:
        venv = make_venv(directory / "venv")
        # PIP_DRY_RUN also reaches the pip that installs the build requirements of a source
        # (setuptools, in an isolated build env), so a git source cannot be built under a dry
        # run: it is built first for real, as a real install would, and pip's wheel cache
        # (keyed by the commit) hands that build to the git line's dry runs.
        git = f"git+{sources['REPO_URL']}@{sources['REF']}"
        done = run_in(venv, f"pip wheel -q --no-deps -w {directory / 'git'} {git}", {}, directory)
        assert done.returncode == 0, done.stderr[-3000:]
        by_request: dict[str, tuple[str, list[str]]] = {}
        out: dict[str, dict[str, Any]] = {}
        # The git line last: its own build is then the only one (its request matches a wheel's).
        ordered = sorted(install_lines(sources).items(), key=lambda kv: "git+" in kv[1][0])
        for number, (key, (command, env)) in enumerate(ordered):
            cwd = directory / f"line-{number}"
            cwd.mkdir()
            own = dry_run(venv, command, env, cwd, deps=False)
            request = json.dumps(requested(own))
            if request not in by_request:
                by_request[request] = (key, sorted(names(dry_run(venv, command, env, cwd))))
            resolved_by, wanted = by_request[request]
            out[key] = {
                "names": sorted(names(own)),
                "extras": sorted({e for i in own for e in i.get("requested_extras") or []}),
                "wanted": wanted,
                "resolved_by": resolved_by,
            }
        return out

    result: dict[str, dict[str, Any]] = compute_once(tmp_path_factory, "install-lines", compute)
    return result


@pytest.mark.parametrize("line", shell_lines(REPOSITORY / "README.md"))
def test_each_readme_install_line_resolves_as_pasted(
    line: str, resolved: dict[str, dict[str, Any]]
) -> None:
    run = resolved[line]
    assert run["names"] == ["idempotent-messaging"], run  # what the line itself names
    wanted = set(run["wanted"])
    assert "idempotent-messaging" in wanted
    expected = AWS if "[aws]" in line else set()
    assert (["aws"] if expected else []) == run["extras"]
    assert expected <= wanted, f"`{line}` does not bring {expected - wanted} ({run})"


@pytest.mark.parametrize("name", sorted(set(REQUIREMENTS) - {"policy"}))
def test_each_requirements_file_resolves_from_a_wheel(
    name: str, resolved: dict[str, dict[str, Any]]
) -> None:
    """From the wheel `make dist` builds (the git form is the README line's, resolved above)."""
    run = resolved[name]
    assert run["names"] == ["idempotent-messaging"], run
    wanted = set(run["wanted"])
    assert AWS | {"idempotent-messaging"} <= wanted, (name, run)


@pytest.fixture(scope="module")
def pack_venv(sources: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """policy/requirements.txt installed for real, as the CLI does, from this checkout's
    directory (what the pull-request workflow sets: the pack judges with the change's rules);
    once per test run (tests/e2e/packaging.py)."""

    def build(root: Path) -> None:
        venv = make_venv(root / "venv")
        env = {**sources, "IDEMPOTENT_MESSAGING_SOURCE": f"file://{REPOSITORY}"}
        done = run_in(venv, f"pip install -q -r {REQUIREMENTS['policy']}", env, root)
        assert done.returncode == 0, done.stderr[-3000:]

    return build_once(tmp_path_factory, "pack-venv", build) / "venv"


def test_the_pack_requirements_install_only_the_light_set(pack_venv: Path) -> None:
    listed = subprocess.run(
        [str(pack_venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    names = {re.sub(r"[-_.]+", "-", d["name"]).lower() for d in json.loads(listed)}
    assert names >= LIGHT
    assert not names & AWS - {"pyyaml"}  # pyyaml comes with pulumi itself


def test_the_pack_serves_every_policy_from_its_own_venv(pack_venv: Path, tmp_path: Path) -> None:
    copy = tmp_path / "team-pack"
    shutil.copytree(
        REPOSITORY / "policy", copy, ignore=shutil.ignore_patterns("venv", "__pycache__")
    )
    # The CLI's Python host runs plugins unbuffered; pulumi-policy writes its port unflushed.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.Popen(
        [str(pack_venv / "bin" / "python"), str(copy)],
        cwd=tmp_path,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        port = int(proc.stdout.readline().decode().strip() or "0") if ready else 0
        if port <= 0:
            proc.kill()
            assert port > 0, proc.stderr.read().decode() if proc.stderr else "no port"
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        info = analyzer_pb2_grpc.AnalyzerStub(channel).GetAnalyzerInfo(empty_pb2.Empty())
        channel.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert [p.name for p in info.policies] == POLICY_NAMES
