"""policy.program: any Pulumi Python project runs in-process under mocks and is recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.offline import (
    SECRET_PLACEHOLDER,
    MissingPackageError,
    ProgramError,
    run_program,
)
from idempotent_messaging.rules.values import UNKNOWN
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


# --- the constructs real programs use (corpus programs in tests/policy/programs) ------------

PROGRAMS = Path(__file__).parent / "programs"
RESOURCE_REFERENCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"  # Pulumi's wire signature
SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"


def corpus(name: str, *, preview: bool = False, **kwargs: Any) -> Any:
    return run_program(PROGRAMS / name, "test", preview=preview, **kwargs)


def one(run: Any, typ: str, name: str | None = None) -> Any:
    found = [r for r in run.resources if r.type == typ and (name is None or r.name == name)]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


@pytest.mark.parametrize("preview", [False, True])
def test_resource_objects_as_inputs_reach_the_pack_as_ids(preview):
    # The engine hands providers and policy packs a resource's id where a program passed the
    # resource object (`function_name=fn`, `role=role`), never a resource reference.
    run = corpus("sqs_lambda_resource_refs", preview=preview)
    for r in run.resources:
        assert RESOURCE_REFERENCE_SIG not in str(r.inputs) + str(r.outputs), r.name
    esm = one(run, "aws:lambda/eventSourceMapping:EventSourceMapping")
    fn = one(run, "aws:lambda/function:Function")
    attachment = one(run, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    role = one(run, "aws:iam/role:Role")
    if preview:  # the id of a resource not created yet is unknown, as in a real preview
        assert esm.inputs["functionName"] is UNKNOWN and attachment.inputs["role"] is UNKNOWN
    else:
        assert esm.inputs["functionName"] == fn.id == fn.outputs["name"]
        assert attachment.inputs["role"] == role.id == role.outputs["name"]


def test_computed_outputs_have_the_types_and_shapes_the_sdk_declares():
    # Up mode: what the cloud computes comes back typed from the resource classes'
    # output properties (strings, maps with the documented keys, lists of objects).
    rest = corpus("apigw_rest_lambda")
    api = one(rest, "aws:apigateway/restApi:RestApi")
    assert isinstance(api.outputs["executionArn"], str)
    assert isinstance(api.outputs["rootResourceId"], str)
    assert rest.stack_outputs["url"].startswith("https://") and rest.stack_outputs["url"].endswith(
        "/hello"
    )
    permission = one(rest, "aws:lambda/permission:Permission")
    assert permission.inputs["sourceArn"] == api.outputs["executionArn"] + "/*/*"

    graphql = one(corpus("appsync_graphql"), "aws:appsync/graphQLApi:GraphQLApi")
    assert set(graphql.outputs["uris"]) >= {"GRAPHQL"}  # `uris["GRAPHQL"]`, as documented

    acm = corpus("acm_dns_validation")
    cert = one(acm, "aws:acm/certificate:Certificate")
    option = cert.outputs["domainValidationOptions"][0]
    assert {"resourceRecordName", "resourceRecordType", "resourceRecordValue"} <= set(option)
    record = one(acm, "aws:route53/record:Record")
    assert record.inputs["name"] == option["resourceRecordName"]

    eks = corpus("eks_cluster")
    cluster = one(eks, "aws:eks/cluster:Cluster")
    assert isinstance(cluster.outputs["certificateAuthority"]["data"], str)
    kubeconfig = json.loads(eks.stack_outputs["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == cluster.outputs["endpoint"]
    assert kubeconfig["current-context"] == cluster.outputs["name"]  # auto-named, not None


def test_an_unset_input_is_never_filled_with_a_placeholder():
    # An input left unset means the AWS default applies; the rules read it as absent.
    queue = one(corpus("multi_region_queues"), "aws:sqs/queue:Queue", "home")
    assert "visibilityTimeoutSeconds" not in queue.outputs
    assert "messageRetentionSeconds" not in queue.outputs


def test_secrets_of_unknowns_stay_secret_unknowns_in_preview():
    run = corpus("rds_postgres_random_password", preview=True)
    db = one(run, "aws:rds/instance:Instance")
    version = one(run, "aws:secretsmanager/secretVersion:SecretVersion")
    for value in (db.inputs["password"], version.inputs["secretString"]):
        assert value[SECRET_SIG_KEY] and value["value"] is UNKNOWN
    param = one(corpus("random_provider_secrets", preview=True), "aws:ssm/parameter:Parameter")
    assert param.inputs["value"]["value"] is UNKNOWN


def test_data_sources_answer_from_their_result_types_in_plain_python():
    # `int(get_parameter(...).value)` runs (SSM values are numeric placeholders), the AMI is
    # an id from getAmi's result type, never the arguments echoed back.
    run = corpus("ssm_ami_data_sources")
    instances = [r for r in run.resources if r.type == "aws:ec2/instance:Instance"]
    assert len(instances) == 1
    assert run.stack_outputs["ami"] and "mostRecent" not in str(run.stack_outputs["ami"])
    identity = corpus("caller_identity_kms")
    assert identity.stack_outputs["where"] == "123456789012/ca-central-1"
    # The key an alias targets only AWS knows: unknown, never an invented key ARN.
    assert identity.stack_outputs["managed_sns_key"] is UNKNOWN
    ecr = corpus("ecr_registry_auth")
    assert ecr.stack_outputs["registry_user"] == "AWS"  # the token decodes as `user:password`


def test_an_answers_file_pins_data_source_results(tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "invokes:\n"
        "  - function: aws.ssm.get_parameter\n"
        "    args: {name: /shop/web/instance-count}\n"
        '    result: {value: "3"}\n'
        "  - function: aws:ec2/getAmi:getAmi\n"
        "    result: {id: ami-0123456789abcdef0}\n"
    )
    run = corpus("ssm_ami_data_sources", answers=answers)
    instances = sorted(
        (r for r in run.resources if r.type == "aws:ec2/instance:Instance"), key=lambda r: r.name
    )
    assert [r.name for r in instances] == ["web-0", "web-1", "web-2"]
    assert instances[1].inputs["ami"] == "ami-0123456789abcdef0"
    assert run.stack_outputs["ami"] == "ami-0123456789abcdef0"


def test_a_malformed_answers_file_names_the_entry(tmp_path):
    from idempotent_messaging.offline.answers import AnswersError

    answers = tmp_path / "answers.yaml"
    answers.write_text("invokes:\n  - function: aws.ssm.get_parameter\n    result: 3\n")
    with pytest.raises(AnswersError, match=r"invokes\[0\]: `result` must be a mapping"):
        corpus("ssm_ami_data_sources", answers=answers)


@pytest.mark.parametrize("preview", [False, True])
def test_remote_components_are_recorded_unexpanded_with_unknown_outputs(preview):
    run = corpus("remote_component_vpc", preview=preview)
    vpc = one(run, "netkit:ec2:Vpc")
    assert vpc.remote and not vpc.custom
    assert vpc.outputs["vpcId"] is UNKNOWN and vpc.outputs["privateSubnetIds"] is UNKNOWN
    assert run.stack_outputs["first_private_subnet"] is UNKNOWN  # never None at `up`
    assert not [r for r in run.resources if r.parent == vpc.urn]


def test_arns_name_each_resources_own_region():
    # pulumi-aws v7: a resource's `region` argument wins over its provider's region, which
    # wins over the stack's `aws:region`.
    out = corpus("multi_region_queues").stack_outputs
    assert out["home_arn"].startswith("arn:aws:sqs:us-east-2:")
    assert out["europe_arn"].startswith("arn:aws:sqs:eu-west-1:")
    assert out["sydney_arn"].startswith("arn:aws:sqs:ap-southeast-2:")
    assert out["sydney_url"].startswith("https://sqs.ap-southeast-2.amazonaws.com/")
    assert out["topic_arn"].startswith("arn:aws:sns:ap-southeast-2:")
    assert out["europe_region"] == "eu-west-1"  # invokes through a provider use its region
    cdn = corpus("cloudfront_s3_oac").stack_outputs
    assert cdn["cert_region"] == "us-east-1"  # the certificate's explicit provider


def test_queue_regions_are_reported_in_preview_too():
    run = corpus("multi_region_queues", preview=True)
    regions = {r.name: r.outputs.get("region") for r in run.resources if r.type.endswith("Queue")}
    assert regions == {"home": "us-east-2", "europe": "eu-west-1", "sydney": "ap-southeast-2"}


MISSING = 'import pulumi_eks as eks\n\neks.Cluster("cluster")\n'


def test_a_missing_provider_package_names_the_module_and_how_to_add_it(tmp_path):

    project = write_project(tmp_path / "missing", MISSING)
    with pytest.raises(MissingPackageError, match="pulumi_eks") as raised:
        run_program(project, "dev")
    assert raised.value.module == "pulumi_eks"
    message = str(raised.value)
    assert "pip install pulumi-eks" in message and "--package-path" in message
    assert "__main__.py:5" in message  # where the user's program imports it


FAKE_EKS = (
    "import pulumi\n\n"
    "class Cluster(pulumi.ComponentResource):\n"
    "    def __init__(self, name, opts=None):\n"
    "        super().__init__('eks:index:Cluster', name, {}, opts, remote=True)\n"
)


def test_the_programs_own_virtualenv_and_package_paths_are_searched(tmp_path):
    project = write_project(tmp_path / "venv-project", MISSING)
    site = project / "venv" / "lib" / "python3.11" / "site-packages" / "pulumi_eks"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(FAKE_EKS)
    assert one(run_program(project, "dev"), "eks:index:Cluster").remote

    bare = write_project(tmp_path / "bare", MISSING)
    extra = tmp_path / "extra" / "pulumi_eks"
    extra.mkdir(parents=True)
    (extra / "__init__.py").write_text(FAKE_EKS)
    run = run_program(bare, "dev", package_paths=[tmp_path / "extra"])
    assert one(run, "eks:index:Cluster").remote

    # What only those runs could import is forgotten: a project without the package, checked
    # next in this process, still misses it (as its own `pulumi` process would).
    without = write_project(tmp_path / "without", MISSING)
    with pytest.raises(MissingPackageError, match="pulumi_eks"):
        run_program(without, "dev")


@pytest.mark.parametrize("preview", [False, True])
def test_stack_reference_outputs_are_unknown_in_both_modes_unless_an_answers_file_pins_them(
    preview: bool,
):
    # Another stack's values are not this stack's: unknown at `up` as in a preview (never None,
    # which the rules would read as absent and judge SQS's or Lambda's default instead), so a
    # callback that indexes one (`settings["worker"]["timeout"]`) does not run either.
    run = corpus("stack_reference_consumer", preview=preview)
    assert run.stack_outputs_unknown
    assert one(run, "aws:lambda/function:Function").inputs["timeout"] is UNKNOWN
    # An answers file beside the program pins the outputs it names, in both modes; what it
    # does not name stays unknown.
    held = Path(__file__).parent / "fixtures" / "heldout_like" / "cross_stack_refs"
    pinned = run_program(held, "dev", preview=preview)
    assert not pinned.stack_outputs_unknown
    signups = one(pinned, "aws:sqs/queue:Queue", "signups")
    redrive = json.loads(signups.inputs["redrivePolicy"])
    assert redrive == {
        "deadLetterTargetArn": "arn:aws:sqs:eu-west-1:123456789012:platform-shared-dlq",
        "maxReceiveCount": 1,
    }


@pytest.mark.parametrize("preview", [False, True])
def test_awsx_components_stay_unexpanded_and_the_plain_resources_are_recorded(preview):
    run = corpus("awsx_fargate_web", preview=preview)
    remote = sorted(r.type for r in run.resources if r.remote)
    assert remote == [
        "awsx:ec2:Vpc",
        "awsx:ecr:Image",
        "awsx:ecr:Repository",
        "awsx:ecs:FargateService",
        "awsx:lb:ApplicationLoadBalancer",
    ]
    assert run.stack_outputs["url"] is UNKNOWN  # `lb.load_balancer.dns_name`, never None
    assert run.stack_outputs["first_private_subnet"] is UNKNOWN
    assert one(run, "aws:sqs/queue:Queue", "jobs").inputs["visibilityTimeoutSeconds"] == 30


def test_unset_inputs_have_values_for_the_program_but_stay_absent_for_the_pack(tmp_path):
    # AWS computes many optional inputs it is not given (an instance's private IP and zone);
    # programs read them at `up`. The pack must still see them unset (the AWS default).
    project = write_project(
        tmp_path / "unset",
        "vpc = aws.ec2.get_vpc(default=True)\n"
        "import ipaddress\n"
        "first = next(ipaddress.ip_network(vpc.cidr_block).subnets(new_prefix=24))\n"
        'inst = aws.ec2.Instance("web", ami="ami-0123456789abcdef0", instance_type="t3.micro")\n'
        'q = aws.sqs.Queue("jobs")\n'
        'pulumi.export("ssh", pulumi.Output.concat("ssh ec2-user@", inst.private_ip))\n'
        'pulumi.export("zone", inst.availability_zone.apply(lambda z: z[:-1]))\n'
        'pulumi.export("visibility", q.visibility_timeout_seconds.apply(lambda v: v * 2))\n'
        'pulumi.export("subnet", str(first))\n',
    )
    run = run_program(project, "dev")
    assert run.stack_outputs["ssh"] == "ssh ec2-user@10.0.0.10"
    assert isinstance(run.stack_outputs["zone"], str)
    assert isinstance(run.stack_outputs["visibility"], int)
    assert run.stack_outputs["subnet"] == "10.0.0.0/24"
    instance = one(run, "aws:ec2/instance:Instance")
    queue = one(run, "aws:sqs/queue:Queue")
    assert "privateIp" not in instance.outputs and "availabilityZone" not in instance.outputs
    assert "visibilityTimeoutSeconds" not in queue.outputs
    assert "__offlinePlaceholders" not in queue.outputs
