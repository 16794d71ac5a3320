"""policy.program: any Pulumi Python project runs in-process under mocks and is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy.program import SECRET_PLACEHOLDER, ProgramError, run_program
from policy.values import UNKNOWN
from tests.policy.conftest import write_project

pytestmark = pytest.mark.policy

COMPONENT = """
class Pipeline(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("acme:index:Pipeline", name, None, opts)
        self.queue = aws.sqs.Queue(f"{name}-queue", opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({})


cfg = pulumi.Config()
pipe = Pipeline("billing")
aws.sqs.Queue("named", name=cfg.require("queueName"), visibility_timeout_seconds=cfg.get_int("vis"))
pulumi.export("region", aws.config.region)
pulumi.export("token", cfg.get_secret("token"))
pulumi.export("queue_url", pipe.queue.url)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_project(
        tmp_path_factory.mktemp("prog") / "proj",
        COMPONENT,
        name="acme",
        stack_yaml="""
        config:
          aws:region: eu-west-1
          acme:queueName: jobs
          acme:token:
            secure: AAABADQXFm0xZk8=
        """,
    )
    (root / "Pulumi.yaml").write_text(
        "name: acme\nruntime:\n  name: python\n  options:\n    toolchain: pip\n"
        "config:\n  vis:\n    type: integer\n    default: 90\n"
    )
    return root


def test_records_resources_with_config_defaults_provider_region_and_tolerated_secrets(project):
    run = run_program(project, "dev")
    named = next(r for r in run.resources if r.name == "named")
    assert named.outputs["name"] == "jobs"
    assert named.outputs["visibilityTimeoutSeconds"] == 90  # Pulumi.yaml schema default
    assert named.outputs["arn"] == "arn:aws:sqs:eu-west-1:123456789012:jobs"
    assert run.stack_outputs["region"] == "eu-west-1"
    assert run.stack_outputs["token"] == SECRET_PLACEHOLDER
    queue = next(r for r in run.resources if r.name == "billing-queue")
    assert run.stack_outputs["queue_url"] == queue.outputs["url"]
    assert queue.outputs["name"].startswith("billing-queue-")  # provider-style auto-name


def test_source_positions_and_component_instantiation_line(project):
    run = run_program(project, "dev")
    main = str(project / "__main__.py")
    queue = next(r for r in run.resources if r.name == "billing-queue")
    component = next(r for r in run.resources if r.name == "billing")
    assert (queue.source_file, queue.source_line) == (main, 9)
    assert (queue.component_file, queue.component_line) == (main, 14)
    assert (component.source_file, component.source_line) == (main, 14)
    assert queue.parent == component.urn


def test_preview_makes_computed_outputs_unknown_but_keeps_inputs_and_auto_names(project):
    run = run_program(project, "dev", preview=True)
    named = next(r for r in run.resources if r.name == "named")
    assert named.outputs["arn"] is UNKNOWN and named.outputs["url"] is UNKNOWN
    assert named.outputs["name"] == "jobs"
    assert run.stack_outputs["queue_url"] is UNKNOWN


def test_new_resource_hook_replaces_outputs(project):
    def hook(args, default):
        if args.typ == "aws:sqs/queue:Queue":
            return "real-id", {**default, "url": f"http://127.0.0.1/{args.name}"}
        return None

    run = run_program(project, "dev", new_resource=hook)
    named = next(r for r in run.resources if r.name == "named")
    assert named.id == "real-id" and named.outputs["url"] == "http://127.0.0.1/named"


def test_property_dependencies_are_recorded(tmp_path):
    project = write_project(
        tmp_path / "deps",
        'd = aws.sqs.Queue("d")\n'
        'q = aws.sqs.Queue("q", redrive_policy=d.arn.apply(lambda a: json.dumps({"a": a})))\n',
    )
    run = run_program(project, "dev")
    q, d = (next(r for r in run.resources if r.name == n) for n in ("q", "d"))
    assert q.property_dependencies["redrivePolicy"] == [d.urn]


def test_failing_program_raises_program_error_naming_the_cause(tmp_path):
    project = write_project(tmp_path / "fail", 'pulumi.Config().require("missing")\n')
    with pytest.raises(ProgramError, match="missing"):
        run_program(project, "dev")


def test_missing_main_is_a_clear_error(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: x\nruntime: python\nmain: src/\n")
    with pytest.raises(ProgramError, match="does not exist"):
        run_program(tmp_path, "dev")
