"""Resource transforms run before the pack sees the inputs, as the Pulumi engine runs them.

Pulumi facts (docs, "Resource option: transforms"; the engine's `RegisterResource` in
pkg/resource/deploy/source_eval.go): a transform is a callback the ENGINE invokes through the
SDK's callback server; `ResourceOptions(transforms=[...])` applies to the resource and all its
children; `pulumi.runtime.register_resource_transform` to every resource registered after it;
for each registration the engine runs the resource's own transforms, then its parent's (and
the parent's parent's ...), then the stack's, each seeing the previous one's result; the
result's options (protect, ignore_changes, aliases, provider, depends_on ...) replace the
registration's. `register_invoke_transform` does the same for invokes. Before this class of
defect was fixed the offline engine's mock monitor stored transforms and never ran them.
"""

from __future__ import annotations

import pytest

from idempotent_messaging.offline import ProgramError, analyze, run_program
from idempotent_messaging.rules.values import UNKNOWN
from tests.policy.conftest import GOOD, pairs, write_project

pytestmark = pytest.mark.policy

ENCRYPT_ALL = """
def encrypt_queues(args):
    if args.type_ == "aws:sqs/queue:Queue":
        return pulumi.ResourceTransformResult({**args.props, "sqsManagedSseEnabled": True},
                                              args.opts)
    return None


pulumi.runtime.register_resource_transform(encrypt_queues)
"""


def one(run, name: str):
    found = [r for r in run.resources if r.name == name]
    assert len(found) == 1, [r.name for r in run.resources]
    return found[0]


@pytest.mark.parametrize("preview", [False, True])
def test_a_stack_transform_applies_before_the_pack_sees_the_inputs(tmp_path, preview):
    body = ENCRYPT_ALL + GOOD.replace(", sqs_managed_sse_enabled=True", "").replace(
        "    sqs_managed_sse_enabled=True,\n", ""
    )
    run = run_program(write_project(tmp_path / "stack", body), "dev", preview=preview)
    for name in ("orders", "orders-dlq"):
        assert one(run, name).inputs["sqsManagedSseEnabled"] is True
    assert ("sqs-queue-encrypted", "orders") not in pairs(analyze(run))


ORDER = """
def setter(label):
    def transform(args):
        if args.type_ == "aws:sqs/queue:Queue":
            seen = list(args.props.get("tags") or {})
            return pulumi.ResourceTransformResult(
                {**args.props, "tags": {**(args.props.get("tags") or {}), label: str(len(seen))}},
                args.opts,
            )
        return None
    return transform


class Pipeline(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("acme:index:Pipeline", name, None, opts)
        inner = Stage(f"{name}-stage", opts=pulumi.ResourceOptions(parent=self,
                                                                  transforms=[setter("stage")]))
        self.queue = inner.queue
        self.register_outputs({})


class Stage(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("acme:index:Stage", name, None, opts)
        self.queue = aws.sqs.Queue(f"{name}-q", opts=pulumi.ResourceOptions(
            parent=self, transforms=[setter("own")]))
        self.register_outputs({})


early = aws.sqs.Queue("early")
pulumi.runtime.register_resource_transform(setter("stack"))
Pipeline("orders", opts=pulumi.ResourceOptions(transforms=[setter("pipeline")]))
aws.sqs.Queue("sibling")
"""


@pytest.mark.parametrize("preview", [False, True])
def test_own_then_each_ancestors_then_the_stacks_transforms_run_in_order(tmp_path, preview):
    run = run_program(write_project(tmp_path / "order", ORDER), "dev", preview=preview)
    # Each transform records how many tags it saw: own (0), stage (1), pipeline (2), stack (3).
    assert one(run, "orders-stage-q").inputs["tags"] == {
        "own": "0",
        "stage": "1",
        "pipeline": "2",
        "stack": "3",
    }
    assert one(run, "sibling").inputs["tags"] == {"stack": "0"}  # not the component's
    assert "tags" not in one(run, "early").inputs  # registered before the stack transform


PROTECT = """
def protect_tables(args):
    if args.type_ == "aws:dynamodb/table:Table":
        return pulumi.ResourceTransformResult(args.props, pulumi.ResourceOptions.merge(
            args.opts, pulumi.ResourceOptions(protect=True, ignore_changes=["tags"],
                                              aliases=[pulumi.Alias(name="old-processed")])))
    return None


pulumi.runtime.register_resource_transform(protect_tables)
"""


def test_a_transform_changes_the_options_the_pack_sees(tmp_path):
    run = run_program(write_project(tmp_path / "opts", PROTECT + GOOD), "dev")
    table = one(run, "processed")
    assert table.protect is True and table.ignore_changes == ["tags"]
    # The alias URN as this engine forms URNs (the mock monitor's parent-type prefix).
    assert table.aliases == [table.urn.replace("::processed", "::old-processed")]
    assert one(run, "orders").protect is False


def test_an_invoke_transform_rewrites_the_arguments(tmp_path):
    project = write_project(
        tmp_path / "invoke",
        """
        def rename(args):
            if args.token == "aws:sqs/getQueue:getQueue":
                renamed = {**args.args, "name": "prod-" + args.args["name"]}
                return pulumi.InvokeTransformResult(renamed, args.opts)
            return None

        pulumi.runtime.register_invoke_transform(rename)
        pulumi.export("arn", aws.sqs.get_queue(name="events").arn)
        """,
    )
    run = run_program(project, "dev")
    assert run.stack_outputs["arn"] == "arn:aws:sqs:us-east-1:123456789012:prod-events"


def test_legacy_transformations_run_in_the_sdk_as_before(tmp_path):
    project = write_project(
        tmp_path / "legacy",
        """
        def visibility(args):
            if args.type_ == "aws:sqs/queue:Queue":
                args.props["visibility_timeout_seconds"] = 400
                return pulumi.ResourceTransformationResult(args.props, args.opts)
            return None

        pulumi.runtime.register_stack_transformation(visibility)
        aws.sqs.Queue("q")
        """,
    )
    assert one(run_program(project, "dev"), "q").inputs["visibilityTimeoutSeconds"] == 400


def test_a_transform_keeps_the_unknowns_it_does_not_replace_at_up(tmp_path):
    # The SDK decodes an unknown as None outside a preview; the transform's result must not
    # turn "unknown" into "absent" (which the pack reads as the AWS default).
    project = write_project(
        tmp_path / "unknown",
        ENCRYPT_ALL
        + 'vis = int(aws.ssm.get_parameter(name="/v").value)\n'
        + 'aws.sqs.Queue("q", visibility_timeout_seconds=vis, tags={"team": "a", "x": str(vis)})\n',
    )
    q = one(run_program(project, "dev"), "q")
    assert q.inputs["visibilityTimeoutSeconds"] is UNKNOWN
    assert q.inputs["tags"] == {"team": "a", "x": UNKNOWN}
    assert q.inputs["sqsManagedSseEnabled"] is True


def test_a_transform_that_raises_fails_the_program_naming_the_resource(tmp_path):
    project = write_project(
        tmp_path / "raises",
        """
        def broken(args):
            raise ValueError("no tags allowed")

        pulumi.runtime.register_resource_transform(broken)
        aws.sqs.Queue("q")
        """,
    )
    with pytest.raises(ProgramError, match=r"aws:sqs/queue:Queue 'q'.*no tags allowed"):
        run_program(project, "dev")
