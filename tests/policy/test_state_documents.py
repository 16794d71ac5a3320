"""Reading `pulumi preview --json` (and `pulumi stack export`) documents: every step kind once
per URN, removals from oldState, partial documents refused, a preview merged with the export,
and the plan check's edges (retainOnDelete, role tags, disposable, its policy-config level)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.offline import main
from idempotent_messaging.offline.errors import PartialDocumentError
from idempotent_messaging.offline.plan import PLAN_POLICY
from idempotent_messaging.offline.statefile import StateFileError, load_documents, load_state

pytestmark = pytest.mark.policy

PLANS = Path(__file__).parent / "plans"
PFX = "urn:pulumi:dev::proj::"
STACK = f"{PFX}pulumi:pulumi:Stack::proj-dev"
QUEUE_TYPE = "aws:sqs/queue:Queue"


def state(name: str, typ: str = QUEUE_TYPE, **extra: Any) -> dict[str, Any]:
    props = extra.pop("props", {})
    return {
        "urn": f"{PFX}{typ}::{name}",
        "custom": True,
        "type": typ,
        "inputs": dict(props),
        "outputs": dict(props),
        "parent": STACK,
        **extra,
    }


def stack() -> dict[str, Any]:
    return {"urn": STACK, "custom": False, "type": "pulumi:pulumi:Stack"}


def step(op: str, old: dict | None = None, new: dict | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"op": op, "urn": (new or old or {})["urn"]}
    if old is not None:
        out["oldState"] = old
    if new is not None:
        out["newState"] = new
    return out


def write(tmp_path: Path, doc: dict[str, Any], name: str = "preview.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_every_step_kind_is_read_once_per_urn_from_the_right_state(tmp_path):
    old_q, new_q = state("q", props={"v": 1}), state("q", props={"v": 2})
    gone = state("gone", props={"v": 9})
    read = state("existing", external=True, props={"v": 3})
    steps = [
        step("same", stack(), stack()),
        step("create", None, state("new")),
        step("update", state("upd", props={"v": 1}), state("upd", props={"v": 2})),
        step("create-replacement", old_q, new_q),
        step("replace", old_q, new_q),
        step("read", None, read),
        step("import", None, state("imported")),
        step("refresh", state("refreshed"), state("refreshed")),
        step("discard", state("was-read", external=True)),
        step("delete", gone),
        step("delete-replaced", old_q),
    ]
    document = load_documents([write(tmp_path, {"steps": steps})])
    ops = {c.resource.name: (c.op, c.ops) for c in document.changes}
    assert ops["q"] == ("replace", ["create-replacement", "replace", "delete-replaced"])
    assert ops["gone"] == ("delete", ["delete"]) and ops["was-read"][0] == "discard"
    assert [c.resource.name for c in document.changes].count("q") == 1
    names = [r.name for r in document.run.resources]
    # Removed resources are not part of the stack the rules check; all others are, once.
    assert sorted(names) == sorted(
        ["proj-dev", "new", "upd", "q", "existing", "imported", "refreshed"]
    )
    by_name = {r.name: r for r in document.run.resources}
    assert by_name["q"].outputs["v"] == 2 and by_name["upd"].outputs["v"] == 2  # newState
    removed = {r.name: r for r in document.removed}
    assert set(removed) == {"gone", "was-read"} and removed["gone"].outputs["v"] == 9  # oldState
    assert by_name["existing"].read  # a read resource stays a read resource


def test_a_destroy_preview_gets_a_verdict(capsys):
    code, report = run_json(capsys, "--state", str(PLANS / "destroy.json"))
    assert code == 1 and report["verdict"] == "findings"
    assert report["resources"] == 0
    assert {v["policy"] for v in report["violations"]} == {PLAN_POLICY}


def test_a_destroy_preview_of_nothing_stateful_is_clean(tmp_path, capsys):
    doc = {
        "steps": [step("delete", state("topic", "aws:sns/topic:Topic")), step("delete", stack())]
    }
    code, report = run_json(capsys, "--state", str(write(tmp_path, doc)))
    assert code == 0 and report["plan"]["destroy"] is True


def test_a_preview_of_an_existing_stack_without_sames_is_partial(tmp_path):
    doc = {"steps": [step("update", state("q", props={"v": 1}), state("q", props={"v": 2}))]}
    with pytest.raises(PartialDocumentError, match="--show-sames") as raised:
        load_documents([write(tmp_path, doc)])
    assert "--state preview.json --state stack-export.json" in str(raised.value)
    assert "no unchanged (`same`) resource" in str(raised.value)


def test_a_dangling_reference_makes_a_preview_partial(tmp_path, capsys):
    fn = state(
        "fn",
        "aws:lambda/function:Function",
        dependencies=[f"{PFX}{QUEUE_TYPE}::absent"],
    )
    doc = {
        "steps": [
            step("same", stack(), stack()),
            step("update", fn, fn),
        ]
    }
    code, report = run_json(capsys, "--state", str(write(tmp_path, doc)))
    assert code == 2 and report["error"]["stage"] == "partial-document"
    assert report["error"]["missing"] == [f"{PFX}{QUEUE_TYPE}::absent"]
    assert "pulumi preview --json --show-sames" in report["error"]["message"]


def test_a_property_naming_an_absent_urn_is_dangling_too(tmp_path):
    fn = state("fn", "aws:lambda/function:Function", props={"ref": f"{PFX}{QUEUE_TYPE}::absent"})
    doc = {"steps": [step("same", stack(), stack()), step("create", None, fn)]}
    with pytest.raises(PartialDocumentError, match="1 resource"):
        load_documents([write(tmp_path, doc)])


def test_a_summary_counting_more_sames_than_listed_is_partial(tmp_path):
    doc = {"changeSummary": {"same": 12}}  # `steps` is omitempty: nothing changes
    with pytest.raises(PartialDocumentError, match="12 unchanged"):
        load_documents([write(tmp_path, doc)])


def test_a_new_stack_needs_no_sames(tmp_path):
    doc = {"steps": [step("create", None, stack()), step("create", None, state("q"))]}
    document = load_documents([write(tmp_path, doc)])
    assert document.is_preview and not document.destroy
    assert [r.name for r in document.run.resources] == ["proj-dev", "q"]


def test_the_export_fills_in_what_a_preview_leaves_out(tmp_path):
    document = load_documents([PLANS / "no-sames.json", PLANS / "stack-export.json"])
    assert len(document.run.resources) == 11  # the stack, the provider, 9 resources
    assert [c.op for c in document.changes if c.op != "same"] == ["update"]
    consumer = next(r for r in document.run.resources if r.name == "consumer")
    assert consumer.outputs["memorySize"] == 1024  # the planned state wins over the export


def test_an_export_of_another_stack_is_refused(tmp_path):
    export = json.loads((PLANS / "stack-export.json").read_text())
    text = json.dumps(export).replace("urn:pulumi:prod::", "urn:pulumi:staging::")
    other = tmp_path / "export.json"
    other.write_text(text)
    with pytest.raises(StateFileError, match="stack staging"):
        load_documents([PLANS / "no-sames.json", other])


def test_two_previews_are_refused(capsys):
    code, report = run_json(
        capsys,
        "--state",
        str(PLANS / "clean-update.json"),
        "--state",
        str(PLANS / "dlq-delete.json"),
    )
    assert code == 2 and report["error"]["stage"] == "state-file"


def test_load_state_still_returns_the_run():
    run = load_state(PLANS / "destroy.json")
    assert run.preview and run.stack == "prod" and run.resources == []


# --- the plan check's edges --------------------------------------------------------------------


def _dlq_delete(tmp_path: Path, mutate: Any = None) -> Path:
    doc = json.loads((PLANS / "dlq-delete.json").read_text())
    if mutate is not None:
        for s in doc["steps"]:
            if s["op"] == "delete" and s["oldState"]["type"] == QUEUE_TYPE:
                mutate(s["oldState"])
    return write(tmp_path, doc)


def test_a_retained_delete_is_no_finding(tmp_path, capsys):
    path = _dlq_delete(tmp_path, lambda old: old.update(retainOnDelete=True))
    code, report = run_json(capsys, "--state", str(path))
    assert code == 0 and not [v for v in report["violations"] if v["policy"] == PLAN_POLICY]


def test_a_queue_tagged_disposable_before_the_plan_is_no_finding(tmp_path, capsys):
    def tag(old: dict[str, Any]) -> None:
        old["outputs"]["tags"] = {"idempotent-messaging:disposable": "true"}

    code, _ = run_json(capsys, "--state", str(_dlq_delete(tmp_path, tag)))
    assert code == 0


def test_the_components_role_tag_alone_names_the_data(tmp_path, capsys):
    # A control DLQ no redrive in the document names: its data role tag says what it holds.
    dlq = state(
        "control-dlq",
        props={"name": "c-dlq", "tags": {"idempotent-messaging:role": "control-dead-letter-queue"}},
    )
    doc = {"steps": [step("same", stack(), stack()), step("delete", dlq)]}
    code, report = run_json(capsys, "--state", str(write(tmp_path, doc)))
    assert code == 1
    [v] = report["violations"]
    assert v["policy"] == PLAN_POLICY and "continuations that failed" in v["message"]


def test_a_queue_nothing_reads_or_redrives_to_is_no_finding(tmp_path, capsys):
    doc = {"steps": [step("same", stack(), stack()), step("delete", state("scratch"))]}
    code, _ = run_json(capsys, "--state", str(write(tmp_path, doc)))
    assert code == 0


@pytest.mark.parametrize(
    ("config", "code", "level"),
    [
        ({PLAN_POLICY: "advisory"}, 0, "advisory"),
        ({PLAN_POLICY: {"enforcementLevel": "disabled"}}, 0, None),
        ({"all": "advisory"}, 0, "advisory"),
        ({}, 1, "mandatory"),
    ],
)
def test_the_plan_check_takes_its_level_from_the_policy_config(
    config, code, level, tmp_path, capsys
):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    got, report = run_json(
        capsys, "--state", str(PLANS / "table-key-replace.json"), "--config", str(path)
    )
    assert got == code
    levels = {v["enforcement"] for v in report["violations"] if v["policy"] == PLAN_POLICY}
    assert levels == ({level} if level else set())


def test_the_plan_policy_is_in_every_sarif_rule_list(capsys):
    assert main(["--state", str(PLANS / "clean-update.json"), "--format", "sarif"]) == 0
    sarif = json.loads(capsys.readouterr().out)
    ids = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {PLAN_POLICY, "stack-config-refused"} <= ids


def test_a_document_is_not_modified_by_loading(tmp_path):
    doc = json.loads((PLANS / "fifo-flip-replace.json").read_text())
    before = copy.deepcopy(doc)
    load_documents([write(tmp_path, doc)])
    assert json.loads((tmp_path / "preview.json").read_text()) == before


def test_a_finding_without_a_source_position_is_placed_at_the_first_line_of_pulumi_yaml(
    tmp_path, capsys
):
    doc = json.loads((PLANS / "dlq-delete.json").read_text())
    for s in doc["steps"]:
        for key in ("oldState", "newState"):
            if key in s:
                s[key].pop("sourcePosition", None)
    project = tmp_path / "program"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: shop\nruntime: nodejs\n")
    path = write(tmp_path, doc)
    assert main(["--state", str(path), "--project", str(project), "--format", "sarif"]) == 1
    [sarif_run] = json.loads(capsys.readouterr().out)["runs"]
    # The plan check's own code-scanning category: never replaces the program check's upload.
    assert sarif_run["automationDetails"]["id"] == "policy/prod/plan/"
    [plan] = [r for r in sarif_run["results"] if r["ruleId"] == PLAN_POLICY]
    location = plan["locations"][0]["physicalLocation"]
    # Every finding has a place GitHub annotates: a file AND a line (`region.startLine`).
    assert location["artifactLocation"]["uri"] == "Pulumi.yaml"
    assert location["region"] == {"startLine": 1}


def test_the_resource_options_of_a_state_reach_the_pack(tmp_path):
    export = json.loads((PLANS / "stack-export.json").read_text())
    for r in export["deployment"]["resources"]:
        if r["type"] == QUEUE_TYPE:
            r.update(protect=True, aliases=[f"{r['urn']}-old"], ignoreChanges=["tags"])
    run = load_state(write(tmp_path, export, "export.json"))
    queues = [r for r in run.resources if r.type == QUEUE_TYPE]
    assert queues and all(q.protect and q.ignore_changes == ["tags"] for q in queues)
    assert all(q.aliases == [f"{q.urn}-old"] for q in queues)
    assert not any(r.protect for r in run.resources if r.type != QUEUE_TYPE)
