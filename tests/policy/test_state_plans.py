"""The plan corpus: `pulumi preview --json` documents of one small stack, checked with --state.

Every `tests/policy/plans/*.json` is a preview digest in the Pulumi CLI's JSON format
(`display.PreviewDigest`: `config`, `steps[]` of `{op, urn, provider, oldState, newState,
diffReasons, replaceReasons}` with `ResourceV3` states, `changeSummary`), of stack `prod` of
project `shop`: a queue `orders` with its DLQ, an idempotency table `processed` (named by
the consumer's IDEMPOTENCY_TABLE), a business table `order-records`, the consumer, its mapping
and a DLQ alarm (the `rename-*` documents: the same pipeline as a component `orders` whose
children carry the components' `idempotent-messaging:role` tags). `stack-export.json` is that
stack as `pulumi stack export` writes it, before any of the plans.

`plans/generate.py` writes them (a test checks it still does). `PLANS` below is the
expectation of each: the exit code and the mandatory (policy, name) pairs, with the Pulumi/AWS
fact the document encodes beside it.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from idempotent_messaging.offline import main
from idempotent_messaging.offline.plan import PLAN_POLICY

pytestmark = pytest.mark.policy

PLANS_DIR = Path(__file__).parent / "plans"
P = PLAN_POLICY

PLANS: dict[str, tuple[int, set[tuple[str, str]]]] = {
    # An in-place update (Lambda memorySize is updatable without replacement) next to `same`
    # steps for every unchanged resource (`--show-sames`): nothing holding data is touched.
    "clean-update.json": (0, set()),
    # SQS cannot turn a standard queue into a FIFO queue (FifoQueue is set at CreateQueue only,
    # and a FIFO name must end in `.fifo`): the provider plans a REPLACE of both queues (the
    # mapping's eventSourceArn changes too: also replaced; the alarm's dimension: updated).
    "fifo-flip-replace.json": (1, {(P, "orders"), (P, "orders-dlq")}),
    # The same plan with `--show-replacement-steps`: each replaced resource is listed three
    # times (create-replacement, replace, delete-replaced): one finding per resource.
    "fifo-flip-replacement-steps.json": (1, {(P, "orders"), (P, "orders-dlq")}),
    # The same replacement of queues tagged idempotent-messaging:disposable=true: declared
    # disposable, no finding.
    "fifo-flip-disposable.json": (0, set()),
    # protect_data turned off on a component's stage (docs/deploy-safety.md, "tearing down on
    # purpose"): its queues and tables lose protect and retainOnDelete and gain the tag
    # idempotent-messaging:disposable=true. The tag counts only from the state before the plan
    # (oldState). One `pulumi up` that turns it off AND flips the queues to FIFO: Pulumi applies
    # the new `protect` before it replaces, so it would empty both queues; the tag is only in
    # the newState: still two findings.
    "disposable-tag-and-replace-at-once.json": (1, {(P, "orders"), (P, "orders-dlq")}),
    # Step 1 of two: the deploy that only turns protect_data off (tags updated in place).
    "disposable-tag-first.json": (0, set()),
    # Step 2: the FIFO flip once the stack has recorded the tag (in every oldState): none.
    "disposable-replace-after-tag.json": (0, set()),
    # DynamoDB cannot change a table's key schema (KeySchema is set at CreateTable only): a new
    # hashKey is a REPLACE of the idempotency table, i.e. every claim is lost.
    "table-key-replace.json": (1, {(P, "processed")}),
    # The redrive moves to a new DLQ and the old one leaves the program: a DELETE of the old DLQ
    # (SQS DeleteQueue deletes the messages in it) - its dead letters were awaiting a redrive.
    "dlq-delete.json": (1, {(P, "orders-dlq")}),
    # `pulumi destroy --preview-only --json`: only `delete` steps, the root stack included; no
    # `same` step, yet complete. Every queue and table holding data is lost.
    "destroy.json": (
        1,
        {(P, "orders"), (P, "orders-dlq"), (P, "processed"), (P, "order-records")},
    ),
    # A component renamed (orders -> checkout) without an alias: its URN and its children's
    # change, so the engine plans a DELETE of every old child and a CREATE of empty new ones.
    "rename-without-alias.json": (
        1,
        {(P, "orders-queue"), (P, "orders-dlq"), (P, "orders-state")},
    ),
    # The same rename with `aliases=[pulumi.Alias(name="orders")]` on the component: children
    # whose names start with the parent's inherit the alias, so the engine matches the old
    # states: `same` steps under the new URNs (oldState keeps the old URN). Nothing is lost.
    "rename-with-alias.json": (0, set()),
    # `pulumi preview --json` without `--show-sames`: only the function's `update` step; the
    # changeSummary still counts the 10 unchanged resources. Cannot judge: exit 2.
    "no-sames.json": (2, set()),
}


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_every_plan_document_has_an_expectation():
    documents = {p.name for p in PLANS_DIR.glob("*.json")} - {"stack-export.json"}
    assert documents == set(PLANS)


def test_the_documents_are_what_the_generator_writes():
    # plans/generate.py writes them; edit it (not the JSON) and rerun it to change a document.
    spec = importlib.util.spec_from_file_location("plans_generate", PLANS_DIR / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build()
    assert set(built) == {p.name for p in PLANS_DIR.glob("*.json")}
    for name, text in built.items():
        assert (PLANS_DIR / name).read_text() == text, f"rerun plans/generate.py: {name}"


@pytest.mark.parametrize("name", sorted(PLANS))
def test_plan_document_findings_and_exit_code(name, capsys):
    expected_code, expected = PLANS[name]
    code, report = run_json(capsys, "--state", str(PLANS_DIR / name))
    assert code == expected_code, report
    if code == 2:
        assert report["verdict"] == "no-verdict"
        assert report["error"]["stage"] == "partial-document"
        assert "--show-sames" in report["error"]["message"]
        return
    mandatory = {
        (v["policy"], v["name"]) for v in report["violations"] if v["enforcement"] == "mandatory"
    }
    assert mandatory == expected
    assert report["verdict"] == ("findings" if expected else "clean")
    plan = [v for v in report["violations"] if v["policy"] == PLAN_POLICY]
    assert len(plan) == len({v["urn"] for v in plan})  # once per resource, whatever the steps
    for v in plan:
        assert "Data at risk:" in v["message"] and "Way out:" in v["message"]
        assert "idempotent-messaging:disposable=true" in v["message"]
        assert v["file"].endswith("__main__.py") and v["line"]


def test_the_messages_name_the_data_at_risk(capsys):
    _, report = run_json(capsys, "--state", str(PLANS_DIR / "destroy.json"))
    by_name = {v["name"]: v["message"] for v in report["violations"] if v["policy"] == P}
    assert "in-flight messages" in by_name["orders"]
    assert "dead letters awaiting redrive" in by_name["orders-dlq"]
    assert "every idempotency claim" in by_name["processed"]
    assert "apply their effects twice" in by_name["processed"]
    assert "rows" in by_name["order-records"]
    assert report["resources"] == 0 and report["plan"]["destroy"] is True
    assert {c["op"] for c in report["plan"]["changes"]} == {"delete"}
    _, report = run_json(capsys, "--state", str(PLANS_DIR / "fifo-flip-replace.json"))
    message = next(v["message"] for v in report["violations"] if v["name"] == "orders")
    assert "REPLACES" in message and "fifoQueue and name" in message
    _, report = run_json(capsys, "--state", str(PLANS_DIR / "rename-without-alias.json"))
    message = next(v["message"] for v in report["violations"] if v["name"] == "orders-queue")
    assert "DELETES" in message and "alias" in message


def test_the_disposable_tag_counts_only_from_the_state_before_the_plan(capsys):
    _, report = run_json(
        capsys, "--state", str(PLANS_DIR / "disposable-tag-and-replace-at-once.json")
    )
    by_name = {v["name"]: v["message"] for v in report["violations"] if v["policy"] == P}
    for message in by_name.values():
        assert "REPLACES" in message and "deploy the tag on its own first" in message
        # the same up unprotects (newState has no `protect`): the engine will not refuse it
        assert "it is protected" not in message
        assert "retainOnDelete keeps the old one" in message  # the oldState retained it
    # The same replacement once the tag is recorded passes; so does recording it.
    for name in ("disposable-tag-first.json", "disposable-replace-after-tag.json"):
        code, report = run_json(capsys, "--state", str(PLANS_DIR / name))
        assert code == 0 and not [v for v in report["violations"] if v["policy"] == P], name
    # Without the tag in either state, the way out says to deploy the tag first.
    _, report = run_json(capsys, "--state", str(PLANS_DIR / "fifo-flip-replace.json"))
    message = next(v["message"] for v in report["violations"] if v["name"] == "orders")
    assert "tag it `idempotent-messaging:disposable=true`" in message
    assert "in a deploy of its own" in message


def test_replacement_steps_are_loaded_once_per_urn(capsys):
    _, plain = run_json(capsys, "--state", str(PLANS_DIR / "fifo-flip-replace.json"))
    _, steps = run_json(capsys, "--state", str(PLANS_DIR / "fifo-flip-replacement-steps.json"))
    assert plain["resources"] == steps["resources"] == 10
    ops = {c["name"]: c["ops"] for c in steps["plan"]["changes"]}
    assert ops["orders"] == ["create-replacement", "replace", "delete-replaced"]
    assert {c["name"]: c["op"] for c in steps["plan"]["changes"]}["orders"] == "replace"

    def found(report: dict) -> list[tuple[str, str, str]]:
        return [(v["policy"], v["enforcement"], v["name"]) for v in report["violations"]]

    assert found(plain) == found(steps)
    message = next(v["message"] for v in steps["violations"] if v["name"] == "orders")
    assert "[steps: create-replacement, replace, delete-replaced]" in message


def test_a_preview_without_sames_is_judged_with_the_stack_export(capsys):
    code, report = run_json(
        capsys,
        "--state",
        str(PLANS_DIR / "no-sames.json"),
        "--state",
        str(PLANS_DIR / "stack-export.json"),
    )
    assert code == 0 and report["verdict"] == "clean"
    assert report["mode"] == "preview" and report["resources"] == 10
    assert [c["op"] for c in report["plan"]["changes"]] == ["update"]
    # The order of the two files does not matter.
    code, again = run_json(
        capsys,
        "--state",
        str(PLANS_DIR / "stack-export.json"),
        "--state",
        str(PLANS_DIR / "no-sames.json"),
    )
    assert code == 0 and again["violations"] == report["violations"]


def test_sarif_of_a_plan_points_at_the_program_given_with_project(tmp_path, capsys):
    project = tmp_path / "shop"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: shop\nruntime: python\n")
    out = tmp_path / "plan.sarif"
    code = main(
        [
            "--state",
            str(PLANS_DIR / "table-key-replace.json"),
            "--project",
            str(project),
            "--format",
            "sarif",
            "--output",
            str(out),
        ]
    )
    assert code == 1
    run = json.loads(out.read_text())["runs"][0]
    assert P in {r["id"] for r in run["tool"]["driver"]["rules"]}
    [result] = [r for r in run["results"] if r["ruleId"] == P]
    assert result["level"] == "error"
    location = result["locations"][0]["physicalLocation"]
    # `project:///__main__.py#17,1` resolved against --project (repository-relative there)
    assert location["artifactLocation"]["uri"] == "__main__.py"
    assert location["region"]["startLine"] == 17
