"""docs/recipes.md, followed to the letter on a fresh copy of the repository.

Each test copies the files git tracks or would track (``git ls-files --cached --others
--exclude-standard``: the working tree without what .gitignore excludes, so a new module
counts before it is committed) into a temporary directory, applies the
recipe's blocks exactly as the document states them (new files, keys merged into a stack file,
console commands whose listed output must appear), and then checks independently that the
recipe did what it promises: the new consumer's resources carry the declared settings and its
function, called as the stack configures it on moto, writes one row for an event delivered
twice; the new rule is discovered, reports its corpus program and is in the generated rule
table of docs/policy.md; the new stage is a stage everywhere.
Commands run with the shared interpreter (``.venv`` in the copy is a link to it, never a copy)
and with the copy as working directory and the copy's root and ``src/`` on PYTHONPATH (ahead
of this checkout's editable install), so nothing comes from this checkout.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.infra

# Every repository path and module name these checks rely on, in one place (the recipes name
# their own files in docs/recipes.md).
REPO = Path(__file__).resolve().parents[2]
RECIPES = REPO / "docs" / "recipes.md"
HANDLERS_DIR = "handlers"
RULES_DIR = "src/idempotent_messaging/rules"
RULE_TESTS_DIR = "tests/policy"
CORPUS_DIR = "tests/policy/corpus"
CHECK_MODULE = "idempotent_messaging.offline"
PROGRAM_RUNNER_MODULE = "idempotent_messaging.offline.runner"
CATALOGUE_MODULE = "idempotent_messaging.rules.catalogue"
POLICY_DOC = "docs/policy.md"
SOURCE_DIR = "src"  # the installable namespace's root (pyproject: packages.find where)
STAGES_MODULE = "tests.stages"
STACK_FILE = "Pulumi.{stage}.yaml"
CONSUMERS_KEY = "idempotent-messaging:consumers"

# A hang guard, not a budget: the slowest command (the corpus run of "Add a policy rule", about
# 35 CPU-s) measured 120 s wall on a loaded 2-core machine, and a loaded CI machine must not
# fail it; a command still running after this is hung.
COMMAND_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Block:
    """One fenced block of a recipe: a new file, keys to merge into a file, or commands."""

    language: str
    path: str | None  # title="..."
    merge: bool
    text: str


_FENCE = re.compile(r"^```(\S+)([^\n]*)\n(.*?)^```$", re.M | re.S)


def recipe_blocks(title: str) -> list[Block]:
    """The fenced blocks under ``## <title>`` in docs/recipes.md, in document order."""
    sections = re.split(r"^## ", RECIPES.read_text(), flags=re.M)
    section = next((s for s in sections if s.startswith(title + "\n")), None)
    assert section is not None, f"docs/recipes.md has no section '## {title}'"
    blocks = []
    for match in _FENCE.finditer(section):
        language, attributes, text = match.groups()
        path = re.search(r'title="([^"]+)"', attributes)
        blocks.append(
            Block(
                language,
                path.group(1) if path else None,
                "merge" in attributes.split(),
                text,
            )
        )
    assert blocks, f"section '## {title}' has no code blocks"
    return blocks


def copy_repository(target: Path) -> Path:
    """The checkout's files (tracked, or untracked and not ignored), copied; ``.venv`` links
    to the shared interpreter."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    assert listed.returncode == 0, (
        f"the recipes are followed on a copy of the checkout's files, but `git ls-files` "
        f"failed in {REPO}: {listed.stderr.decode(errors='replace')}"
    )
    for name in listed.stdout.decode().split("\0"):
        source = REPO / name
        if not name or not source.is_file():  # deleted in the working tree
            continue
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(source.read_bytes())
    (target / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return target


def environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join((str(root), str(root / SOURCE_DIR)))
    env.pop("UPDATE_POLICY_DOCS", None)
    return env


def deep_merge(base: dict[str, Any], added: Mapping[str, Any], path: str = "") -> None:
    for key, value in added.items():
        where = f"{path}.{key}" if path else str(key)
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            deep_merge(base[key], value, where)
        else:
            assert key not in base, f"the recipe adds {where}, which the file already sets"
            base[key] = value


def expected_line(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("...")))


def run_console(root: Path, block: Block) -> None:
    """Each ``$`` line runs in the copy; the lines under it must appear in order in its output."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif line.strip():
            assert steps, f"output line before any command: {line!r}"
            steps[-1][1].append(line)
    for command, expected in steps:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=root,
            env=environment(root),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{output}"
        lines = output.splitlines()
        position = 0
        for want in expected:
            pattern = expected_line(want)
            while position < len(lines) and not pattern.fullmatch(lines[position]):
                position += 1
            assert position < len(lines), f"`{command}` printed no {want!r} (in order):\n{output}"
            position += 1


def follow(title: str, root: Path) -> tuple[list[str], list[str]]:
    """Apply the recipe to the copy. Returns (files created, files changed)."""
    created: list[str] = []
    changed: list[str] = []
    for block in recipe_blocks(title):
        if block.language == "console":
            run_console(root, block)
            continue
        assert block.path, f"a {block.language} block without title= in '{title}'"
        target = root / block.path
        if block.merge:
            assert target.is_file(), f"the recipe merges into {block.path}, which does not exist"
            document = yaml.safe_load(target.read_text())
            deep_merge(document, yaml.safe_load(block.text))
            target.write_text(yaml.safe_dump(document, sort_keys=False))
            changed.append(block.path)
        else:
            assert not target.exists(), f"the recipe creates {block.path}, which already exists"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            created.append(block.path)
            if target.suffix == ".py":  # the suite lints every file of the repository
                ruff(root, block.path)
    return created, changed


def ruff(root: Path, path: str) -> None:
    for args in (["check"], ["format", "--check"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *args, path],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        assert done.returncode == 0, f"ruff {' '.join(args)} {path}:\n{done.stdout}{done.stderr}"


def python(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=root,
        env=environment(root),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )


def offline_check(root: Path, project: Path, stack: str, preview: bool) -> dict[str, Any]:
    mode = ["--preview"] if preview else []
    args = ["-m", CHECK_MODULE, "--project", str(project), "--stack", stack, "--format", "json"]
    done = python(root, *args, *mode)
    assert done.returncode in (0, 1), f"{shlex.join(args)} failed:\n{done.stdout}{done.stderr}"
    report: dict[str, Any] = json.loads(done.stdout)
    report["exit_code"] = done.returncode
    return report


_DUMP_RESOURCES = f"""
import json, sys
from {PROGRAM_RUNNER_MODULE} import run_program
run = run_program(".", sys.argv[1])
print(json.dumps([{{"type": r.type, "name": r.name, "inputs": r.inputs}} for r in run.resources],
                 default=str))
"""


def program_resources(root: Path, stack: str) -> list[dict[str, Any]]:
    """The resources the copy's program registers for a stack, under the offline mocks."""
    done = python(root, "-c", _DUMP_RESOURCES, stack)
    assert done.returncode == 0, done.stderr
    resources: list[dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])
    return resources


# One message of the recipe consumer's documented body (docs/recipes.md, handlers/invoices.py).
SAMPLE_MESSAGE = {"event_id": "evt-1", "invoice": {"invoice_id": "inv-1", "amount": 1200}}

_DRIVE_ON_MOTO = """
import hashlib, importlib, json, os, sys, time
import boto3
from moto import mock_aws

from idempotent_messaging.local import moto_patches

moto_patches.install()  # what moto lacks for the runtime's PartiQL status write
resources, function_name, body = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
(fn,) = [r["inputs"] for r in resources if r["type"] == "aws:lambda/function:Function"
         and r["inputs"].get("name") == function_name]
env = fn["environment"]["variables"]
os.environ.update(env)
with mock_aws():
    dynamodb, sns, sqs = boto3.client("dynamodb"), boto3.client("sns"), boto3.client("sqs")
    for r in resources:
        t = r["inputs"]
        if r["type"] == "aws:dynamodb/table:Table" and t["name"] in env.values():
            keys = [(t["hashKey"], "HASH")]
            keys += [(t["rangeKey"], "RANGE")] if t.get("rangeKey") else []
            dynamodb.create_table(
                TableName=t["name"], BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": k, "KeyType": kind} for k, kind in keys],
                AttributeDefinitions=[{"AttributeName": a["name"], "AttributeType": a["type"]}
                                      for a in t["attributes"]])
    sns.create_topic(Name=env["NOTIFICATION_TOPIC_ARN"].rsplit(":", 1)[1])
    sqs.create_queue(QueueName=env["DLQ_URL"].rsplit("/", 1)[1])
    module, attribute = fn["handler"].rsplit(".", 1)
    handler = getattr(importlib.import_module(module), attribute)

    def record(message_id):
        return {"messageId": message_id, "receiptHandle": message_id, "body": body,
                "attributes": {"ApproximateReceiveCount": "1",
                               "SentTimestamp": str(int(time.time() * 1000))},
                "messageAttributes": {}, "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
                "eventSource": "aws:sqs", "awsRegion": os.environ["AWS_REGION"],
                "eventSourceARN": "arn:aws:sqs:ap-northeast-1:123456789012:source"}

    # The producer sends the same event twice (two SQS messages, one event id).
    answers = [handler({"Records": [record(m)]}, None) for m in ("m-1", "m-2")]
    rows = dynamodb.scan(TableName=env["BUSINESS_TABLE"])["Items"]
    claims = dynamodb.scan(TableName=env["IDEMPOTENCY_STATE_TABLE"])["Items"]
    print(json.dumps({"answers": answers, "rows": rows, "claims": claims}))
"""


def drive_on_moto(
    root: Path, resources: list[dict[str, Any]], function_name: str, body: str
) -> dict[str, Any]:
    """The function as the stack configures it (handler string, environment), called
    in-process on moto with two deliveries of one event."""
    dumped = root / "resources.json"
    dumped.write_text(json.dumps(resources))
    done = python(root, "-c", _DRIVE_ON_MOTO, str(dumped), function_name, body)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def one(resources: list[dict[str, Any]], type_: str, physical_name: str) -> dict[str, Any]:
    found = [r["inputs"] for r in resources if r["type"] == type_ and r["inputs"].get("name")]
    named = [inputs for inputs in found if inputs["name"] == physical_name]
    assert len(named) == 1, f"{type_} {physical_name!r}: found {[i['name'] for i in found]}"
    return named[0]


def test_add_a_consumer_is_one_handler_module_and_one_config_entry(tmp_path: Path) -> None:
    root = copy_repository(tmp_path)
    created, changed = follow("Add a consumer", root)

    stack_file = STACK_FILE.format(stage="dev")
    assert changed == [stack_file]
    assert len(created) == 1 and created[0].startswith(f"{HANDLERS_DIR}/"), created
    after = yaml.safe_load((root / stack_file).read_text())["config"][CONSUMERS_KEY]
    before = yaml.safe_load((REPO / stack_file).read_text())["config"][CONSUMERS_KEY]
    assert len(set(after) - set(before)) == 1, sorted(after)
    (name,) = set(after) - set(before)
    declared = after[name]
    resources = program_resources(root, "dev")
    timeout = declared["functionTimeoutSeconds"]
    function = one(resources, "aws:lambda/function:Function", f"{name}-dev-consumer")
    assert function["handler"] == declared["handler"]
    assert function["timeout"] == timeout
    queue = one(resources, "aws:sqs/queue:Queue", f"{name}-dev")
    # AWS advises a visibility timeout of at least 6 x the function timeout for a Lambda
    # consumer (plus the batching window, 0 here): a slow batch must not reappear mid-run.
    assert queue["visibilityTimeoutSeconds"] == 6 * timeout
    redrive = json.loads(queue["redrivePolicy"])
    assert redrive["maxReceiveCount"] == declared["maxReceiveCount"]
    assert redrive["deadLetterTargetArn"].endswith(f":{name}-dev-dlq")
    table = declared["businessTable"]
    business = one(resources, "aws:dynamodb/table:Table", f"{name}-dev-{table['name']}")
    assert business["hashKey"] == table["hashKey"]
    one(resources, "aws:dynamodb/table:Table", f"{name}-dev-idempotency-state")
    one(resources, "aws:sns/topic:Topic", f"{name}-dev-notifications")
    # Deployed as configured, the handler writes one row for an event delivered twice.
    result = drive_on_moto(root, resources, f"{name}-dev-consumer", json.dumps(SAMPLE_MESSAGE))
    assert result["answers"] == [{"batchItemFailures": []}] * 2, result
    assert len(result["rows"]) == 1, result
    # One claim, and the batch's publish receipt listing it (claims.Receipts: the claim stays
    # `pending` and its receipt says the notification went out).
    receipts = [i for i in result["claims"] if i["event_id"]["S"].startswith("receipt#")]
    (claim,) = [i for i in result["claims"] if i not in receipts]
    (receipt,) = [r for r in receipts if r["event_id"] == claim["receipt"]]
    assert claim["event_id"]["S"] in receipt["published"]["SS"], result
    # The recipe checks `pulumi up`; a preview (outputs unknown) must pass too.
    report = offline_check(root, root, "dev", preview=True)
    assert report["exit_code"] == 0 and report["violations"] == [], report


def test_add_a_policy_rule_is_one_module_one_test_and_one_corpus_program(
    tmp_path: Path,
) -> None:
    root = copy_repository(tmp_path)
    created, changed = follow("Add a policy rule", root)

    assert changed == []
    rule_modules = [p for p in created if p.startswith(f"{RULES_DIR}/")]
    tests = [p for p in created if p.startswith(f"{RULE_TESTS_DIR}/test_")]
    programs = [p for p in created if p.startswith(f"{CORPUS_DIR}/")]
    assert (len(rule_modules), len(tests), len(programs)) == (1, 1, 1), created
    rule = re.search(r'_rule\(\s*"([a-z0-9-]+)"', (root / rule_modules[0]).read_text())
    assert rule is not None, "the rule module declares no rule"
    # The corpus program, as its own project, through the real CLI: the pack discovered the
    # rule and reports it on the program that breaks it, in both modes, advisory (exit 0).
    project = tmp_path / "violating"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: violating\nruntime: python\n")
    (project / "Pulumi.dev.yaml").write_text("config:\n  aws:region: eu-west-1\n")
    (project / "__main__.py").write_text((root / programs[0]).read_text())
    for preview in (False, True):
        report = offline_check(root, project, "dev", preview)
        found = {(v["policy"], v["enforcement"]) for v in report["violations"]}
        assert found == {(rule.group(1), "advisory")}, report
        assert report["exit_code"] == 0
    # The recipe regenerated the rule table: the copy's docs/policy.md is current (what the
    # docs test demands) and lists the new rule.
    check = python(root, "-m", CATALOGUE_MODULE, "--check", POLICY_DOC)
    assert check.returncode == 0, check.stderr
    assert f"| `{rule.group(1)}` | advisory |" in (root / POLICY_DOC).read_text()


def test_add_a_stage_is_one_stack_file(tmp_path: Path) -> None:
    root = copy_repository(tmp_path)
    before = python(root, "-c", f"from {STAGES_MODULE} import STAGES; print(*STAGES)")
    created, changed = follow("Add a stage", root)

    assert changed == []
    assert len(created) == 1, created
    stage = created[0].removeprefix("Pulumi.").removesuffix(".yaml")
    assert created == [STACK_FILE.format(stage=stage)]
    made = subprocess.run(
        ["make", "-s", "--no-print-directory", "stacks"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    listed = python(root, "-c", f"from {STAGES_MODULE} import STAGES; print(*STAGES)")
    assert stage not in before.stdout.split()
    assert stage in made and made == listed.stdout.split()


def console(text: str) -> Block:
    return Block("console", None, False, text)


def test_a_console_block_fails_when_a_listed_line_is_missing_or_out_of_order(
    tmp_path: Path,
) -> None:
    run_console(tmp_path, console("$ printf 'a 1 b\\nc\\n'\na ... b\nc\n"))
    with pytest.raises(AssertionError, match=re.escape("printed no 'c'")):
        run_console(tmp_path, console("$ printf 'c\\na 1 b\\n'\na ... b\nc\n"))
    with pytest.raises(AssertionError, match=re.escape("printed no 'a ... d'")):
        run_console(tmp_path, console("$ printf 'a 1 b\\n'\na ... d\n"))
    with pytest.raises(AssertionError, match="exited 3"):
        run_console(tmp_path, console("$ exit 3\n"))


def test_a_merge_block_only_adds_keys() -> None:
    document: dict[str, Any] = {"config": {"consumers": {"orders": {}}}}
    deep_merge(document, {"config": {"consumers": {"invoices": {"batchSize": 5}}}})
    assert document == {"config": {"consumers": {"orders": {}, "invoices": {"batchSize": 5}}}}
    with pytest.raises(AssertionError, match=re.escape("config.consumers.orders")):
        deep_merge(document, {"config": {"consumers": {"orders": "replaced"}}})
