"""Every documented install line works as written, pasted into a fresh virtualenv.

The lines are read from the pages themselves (README's sh blocks) and from the requirements
files the Pulumi CLI installs (policy/, components/, examples/*/), then run verbatim by bash
with the variables the docs tell the user to set: REPO_URL (a git URL of this clone), REF (a
commit that exists there), WHEEL (a wheel `make dist` built) and IDEMPOTENT_MESSAGING_SOURCE.

The policy pack's requirements are installed for real and the pack is served from that venv,
as `pulumi preview --policy-pack policy` does; the heavy lines (the `aws` extra: pulumi-aws is
~1 GB unpacked) are resolved with pip's own dry run (PIP_DRY_RUN, the environment form of
`--dry-run`): the git clone, the build and the resolution of every extra are real, the unpack
is skipped. No placeholder (OWNER, a tag that does not exist) survives anywhere.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import grpc
import pytest
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from idempotent_messaging.rules.pack import POLICY_NAMES

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
    """The variables the docs name: a git URL of this clone at its HEAD, and a built wheel."""
    ref = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPOSITORY, check=True, capture_output=True, text=True
    ).stdout.strip()
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), f"git+file://localhost{REPOSITORY}@{ref}"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = out.glob("idempotent_messaging-*.whl")
    # `file://localhost/...`: pip's URL parser refuses `git+file:///...` (no host), as README says.
    return {"REPO_URL": f"file://localhost{REPOSITORY}", "REF": ref, "WHEEL": str(wheel)}


def fresh_venv(root: Path) -> Path:
    """A new venv with the pip the project's own venv runs (`make install` pins it): the one
    `python -m venv` bundles resolves PyPI's large index pages with about 4x the CPU."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    pip = f"pip=={metadata.version('pip')}"
    subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "-qq", pip],
        check=True,
        capture_output=True,
    )
    return root


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
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=full, capture_output=True, text=True, timeout=600
    )


def dry_run(venv: Path, command: str, env: dict[str, str], cwd: Path) -> set[str]:
    """What pip would install for `command`, resolved for real (PIP_DRY_RUN + a JSON report)."""
    report = venv / "report.json"
    done = run_in(venv, command, {**env, "PIP_DRY_RUN": "1", "PIP_REPORT": str(report)}, cwd)
    assert done.returncode == 0, f"`{command}` failed:\n{done.stderr[-3000:]}"
    installed = json.loads(report.read_text())["install"]
    return {re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower() for i in installed}


def test_no_install_line_carries_a_placeholder() -> None:
    pages = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
    pages += [*REQUIREMENTS.values(), *sorted((REPOSITORY / "examples").glob("*/README.md"))]
    for page in pages:
        found = PLACEHOLDERS.findall(page.read_text())
        assert not found, f"{page.relative_to(REPOSITORY)}: placeholder {found}"
    assert shell_lines(REPOSITORY / "README.md"), "the README shows no pip install line"


@pytest.fixture(scope="module")
def dry_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fresh venv for every dry run (a dry run installs nothing into it)."""
    return fresh_venv(tmp_path_factory.mktemp("dry") / "venv")


@pytest.mark.parametrize("line", shell_lines(REPOSITORY / "README.md"))
def test_each_readme_install_line_resolves_as_pasted(
    line: str, sources: dict[str, str], dry_venv: Path, tmp_path: Path
) -> None:
    wanted = dry_run(dry_venv, line, sources, tmp_path)
    assert "idempotent-messaging" in wanted
    expected = AWS if "[aws]" in line else set()
    assert expected <= wanted, f"`{line}` does not bring {expected - wanted}"


@pytest.mark.parametrize("name", sorted(set(REQUIREMENTS) - {"policy"}))
def test_each_requirements_file_resolves_from_a_wheel(
    name: str, sources: dict[str, str], dry_venv: Path, tmp_path: Path
) -> None:
    """From the wheel `make dist` builds (the git form is the README line's, resolved above)."""
    env = {**sources, "IDEMPOTENT_MESSAGING_SOURCE": f"file://{sources['WHEEL']}"}
    wanted = dry_run(dry_venv, f"pip install -r {REQUIREMENTS[name]}", env, tmp_path)
    assert AWS | {"idempotent-messaging"} <= wanted, (name, wanted)


@pytest.fixture(scope="module")
def pack_venv(sources: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """policy/requirements.txt installed for real, as the CLI does, from this checkout's
    directory (what the pull-request workflow sets: the pack judges with the change's rules)."""
    root = tmp_path_factory.mktemp("pack")
    venv = fresh_venv(root / "venv")
    env = {**sources, "IDEMPOTENT_MESSAGING_SOURCE": f"file://{REPOSITORY}"}
    done = run_in(venv, f"pip install -q -r {REQUIREMENTS['policy']}", env, root)
    assert done.returncode == 0, done.stderr[-3000:]
    yield venv
    shutil.rmtree(root, ignore_errors=True)


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
