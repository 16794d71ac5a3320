"""Every invoke and SDK feature the offline engine claims to support, one test each.

docs/offline-engine.md tabulates them with their treatment; this file is that table's proof.
The facts each expectation rests on are Pulumi's and the AWS provider's (named per test):
a data source runs for real during a preview, so what only the cloud knows is unknown offline
(never invented), while what follows from the configuration and the arguments is exact.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from idempotent_messaging.offline import ProgramError, main, run_program
from idempotent_messaging.offline.errors import MissingConfigError
from idempotent_messaging.offline.unknowns import UnsupportedError
from idempotent_messaging.rules.values import UNKNOWN
from tests.policy.conftest import write_project

pytestmark = pytest.mark.policy


def run(
    tmp_path: Path,
    body: str,
    *,
    preview: bool = False,
    stack_yaml: str | None = None,
    **kwargs: Any,
) -> Any:
    project = write_project(tmp_path / "p", body, stack_yaml=stack_yaml)
    return run_program(project, "dev", preview=preview, **kwargs)


def one(result: Any, name: str) -> Any:
    found = [r for r in result.resources if r.name == name]
    assert len(found) == 1, [r.name for r in result.resources]
    return found[0]


# --- invokes whose answer follows from the configuration and the arguments ------------------


@pytest.mark.parametrize("preview", [False, True])
def test_identity_region_partition_and_zones_are_exact(tmp_path, preview):
    out = run(
        tmp_path,
        """
        me = aws.get_caller_identity()
        eu = aws.Provider("eu", region="eu-west-1")
        pulumi.export("account", me.account_id)
        pulumi.export("region", aws.get_region().region)
        pulumi.export("eu", aws.get_region(opts=pulumi.InvokeOptions(provider=eu)).region)
        pulumi.export("partition", aws.get_partition().partition)
        pulumi.export("suffix", aws.get_partition().dns_suffix)
        pulumi.export("zones", aws.get_availability_zones(state="available").names)
        pulumi.export("out", aws.get_caller_identity_output().account_id)
        """,
        preview=preview,
    ).stack_outputs
    assert out["account"] == out["out"] == "123456789012"  # the offline account of every ARN
    assert (out["region"], out["eu"]) == ("us-east-1", "eu-west-1")
    assert (out["partition"], out["suffix"]) == ("aws", "amazonaws.com")
    assert out["zones"] == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_get_arn_parses_the_arn(tmp_path):
    out = run(
        tmp_path,
        'a = aws.get_arn(arn="arn:aws:sqs:eu-west-1:210987654321:orders")\n'
        'pulumi.export("parts", [a.partition, a.service, a.region, a.account, a.resource])\n',
    ).stack_outputs
    assert out["parts"] == ["aws", "sqs", "eu-west-1", "210987654321", "orders"]


@pytest.mark.parametrize("preview", [False, True])
def test_a_lookup_by_name_knows_the_arn_the_name_gives_and_nothing_else(tmp_path, preview):
    out = run(
        tmp_path,
        """
        fn = aws.lambda_.get_function(function_name="billing")
        role = aws.iam.get_role(name="billing")
        assert isinstance(fn.timeout, int)  # typed as the SDK's result class declares
        pulumi.export("fn_arn", fn.arn)
        pulumi.export("fn_timeout", fn.timeout)
        pulumi.export("role_arn", role.arn)
        pulumi.export("role_id", role.unique_id)
        pulumi.export("topic", aws.sns.get_topic(name="alerts").arn)
        """,
        preview=preview,
    ).stack_outputs
    assert out["fn_arn"] == "arn:aws:lambda:us-east-1:123456789012:function:billing"
    assert out["role_arn"] == "arn:aws:iam::123456789012:role/billing"
    assert out["topic"] == "arn:aws:sns:us-east-1:123456789012:alerts"
    assert out["fn_timeout"] is UNKNOWN and out["role_id"] is UNKNOWN


# --- data sources only the cloud can answer: typed, unknown, never a crash ------------------


def test_typed_results_the_sdk_checks_and_programs_parse(tmp_path):
    # The SDK's result classes raise TypeError on a field of another type; programs decode
    # the ECR token (base64 of `user:password`, the ECR API's documented format) and carve
    # subnets out of a VPC's CIDR.
    out = run(
        tmp_path,
        """
        import base64
        import ipaddress

        ami = aws.ec2.get_ami(most_recent=True, owners=["amazon"],
                              filters=[{"name": "name", "values": ["al2023-ami-*"]}])
        assert ami.most_recent is True
        token = aws.ecr.get_authorization_token()
        user, password = base64.b64decode(token.authorization_token).decode().split(":", 1)
        vpc = aws.ec2.get_vpc(default=True)
        first = next(ipaddress.ip_network(vpc.cidr_block).subnets(new_prefix=24))
        association = vpc.cidr_block_associations[0]  # a typed Sequence of result objects
        pulumi.export("user", user)
        pulumi.export("ami", ami.id)
        pulumi.export("subnet", str(first))
        pulumi.export("association", association.cidr_block)
        """,
    ).stack_outputs
    assert out["user"] == "AWS"
    assert out["ami"] is UNKNOWN and out["association"] is UNKNOWN
    assert out["subnet"] == "10.0.0.0/24"  # parsed from the placeholder: see the docs


@pytest.mark.parametrize("preview", [False, True])
def test_output_form_invokes_are_unknown_where_the_cloud_decides(tmp_path, preview):
    out = run(
        tmp_path,
        """
        param = aws.ssm.get_parameter_output(name="/orders/batch")
        pulumi.export("value", param.value)
        pulumi.export("name", param.name)
        pulumi.export("doubled", param.value.apply(lambda v: int(v) * 2))
        """,
        preview=preview,
    ).stack_outputs
    assert out["value"] is UNKNOWN and out["doubled"] is UNKNOWN
    # The whole result Output holds an unknown field, and its attributes are lifted from it.
    assert out["name"] == "/orders/batch"


def test_an_invoke_no_installed_sdk_types_fails_closed_naming_it(tmp_path):
    body = 'pulumi.export("x", pulumi.runtime.invoke("acme:index:getThing", {}).value)\n'
    with pytest.raises(UnsupportedError, match=r"cannot answer invoke acme:index:getThing") as e:
        run(tmp_path, body)
    assert e.value.feature == "acme:index:getThing" and "--answers" in str(e.value)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--project", str(tmp_path / "p"), "--stack", "dev", "--format", "json"])
    assert code == 2 and "acme:index:getThing" in json.loads(out.getvalue())["error"]["message"]


def test_an_answers_file_makes_an_untyped_invoke_answerable(tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text("invokes:\n  - function: acme:index:getThing\n    result: {size: 3}\n")
    body = 'pulumi.export("x", pulumi.runtime.invoke("acme:index:getThing", {}).value["size"])\n'
    assert run(tmp_path, body, answers=answers).stack_outputs["x"] == 3


def test_a_method_of_a_remote_component_is_unknown(tmp_path):
    out = run(
        tmp_path,
        """
        class Cluster(pulumi.ComponentResource):
            def __init__(self, name, opts=None):
                super().__init__("eks:index:Cluster", name, {}, opts, remote=True)

            def kubeconfig(self):
                return pulumi.runtime.call("eks:index:Cluster/getKubeconfig", {}, self)

        pulumi.export("kubeconfig", Cluster("c").kubeconfig())
        """,
    ).stack_outputs
    assert out["kubeconfig"] is UNKNOWN


# --- aws.iam.get_policy_document, as the provider renders it --------------------------------


def document(tmp_path: Path, args: str) -> Any:
    out = run(
        tmp_path,
        f"doc = aws.iam.get_policy_document({args})\n"
        'pulumi.export("json", doc.json)\npulumi.export("min", doc.minified_json)\n'
        'pulumi.export("id", doc.id)\n',
    ).stack_outputs
    assert json.loads(out["min"]) == json.loads(out["json"])
    return out


def test_policy_document_principals_sets_conditions_and_not_elements(tmp_path):
    out = document(
        tmp_path,
        """statements=[
            {"sid": "Public", "principals": [{"type": "*", "identifiers": ["*"]}],
             "actions": ["sqs:SendMessage"], "resources": ["arn:aws:sqs:us-east-1:1:q"],
             "conditions": [
                 {"test": "ArnEquals", "variable": "aws:SourceArn", "values": ["b", "a"]},
                 {"test": "ArnEquals", "variable": "aws:SourceArn", "values": ["c"]},
                 {"test": "Bool", "variable": "aws:SecureTransport", "values": ["true"]}]},
            {"effect": "Deny", "principals": [{"type": "AWS", "identifiers": ["*"]}],
             "not_actions": ["sqs:ReceiveMessage", "sqs:DeleteMessage",
                             "sqs:ChangeMessageVisibility"],
             "not_resources": ["arn:aws:s3:::&{aws:username}/*"]},
            {"principals": [{"type": "Service", "identifiers": ["sns.amazonaws.com"]},
                            {"type": "Service",
                             "identifiers": ["events.amazonaws.com", "s3.amazonaws.com"]},
                            {"type": "AWS", "identifiers": ["arn:aws:iam::1:root"]}],
             "actions": ["kms:Decrypt", "kms:GenerateDataKey*", "kms:Decrypt"], "resources": ["*"]},
        ]""",
    )
    assert out["json"] == textwrap.dedent(
        """\
        {
          "Version": "2012-10-17",
          "Statement": [
            {
              "Sid": "Public",
              "Effect": "Allow",
              "Action": "sqs:SendMessage",
              "Resource": "arn:aws:sqs:us-east-1:1:q",
              "Principal": "*",
              "Condition": {
                "ArnEquals": {
                  "aws:SourceArn": [
                    "b",
                    "a",
                    "c"
                  ]
                },
                "Bool": {
                  "aws:SecureTransport": "true"
                }
              }
            },
            {
              "Effect": "Deny",
              "NotAction": [
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:ChangeMessageVisibility"
              ],
              "NotResource": "arn:aws:s3:::${aws:username}/*",
              "Principal": {
                "AWS": "*"
              }
            },
            {
              "Effect": "Allow",
              "Action": [
                "kms:GenerateDataKey*",
                "kms:Decrypt"
              ],
              "Resource": "*",
              "Principal": {
                "AWS": "arn:aws:iam::1:root",
                "Service": [
                  "sns.amazonaws.com",
                  "s3.amazonaws.com",
                  "events.amazonaws.com"
                ]
              }
            }
          ]
        }"""
    )
    assert out["min"].startswith('{"Version":"2012-10-17","Statement":[{"Sid":"Public"')
    import zlib

    assert out["id"] == str(zlib.crc32(out["json"].encode()))


def test_policy_document_merges_source_and_override_documents_by_sid(tmp_path):
    source = {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Read", "Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": "*"},
            {"Sid": "Send", "Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"},
            {"Effect": "Allow", "Action": "sqs:GetQueueUrl", "Resource": "*", "Principal": "*"},
        ],
    }
    override = {
        "Statement": [
            {"Sid": "Read", "Effect": "Deny", "Action": "sqs:*", "Resource": "*"},
            {"Effect": "Allow", "Action": "sqs:ListQueues", "Resource": "*"},
        ]
    }
    out = document(
        tmp_path,
        f"""source_policy_documents=[{json.dumps(json.dumps(source))}],
        override_policy_documents=[{json.dumps(json.dumps(override))}],
        statements=[{{"sid": "Send", "actions": ["sqs:SendMessageBatch"], "resources": ["*"]}}]""",
    )
    statements = json.loads(out["json"])["Statement"]
    assert [(s.get("Sid"), s["Effect"], s["Action"]) for s in statements] == [
        ("Read", "Deny", "sqs:*"),  # the override replaced the source's statement in place
        ("Send", "Allow", "sqs:SendMessageBatch"),  # the document's own replaced the source's
        (None, "Allow", "sqs:GetQueueUrl"),
        (None, "Allow", "sqs:ListQueues"),  # no Sid: appended
    ]
    assert statements[2]["Principal"] == "*"


def test_policy_document_duplicate_sids_fail_as_the_provider_refuses_them(tmp_path):
    with pytest.raises(ProgramError, match=r"duplicate Sid \(A\)"):
        run(
            tmp_path,
            'aws.iam.get_policy_document(statements=[{"sid": "A", "actions": ["s3:*"]},\n'
            '                                         {"sid": "A", "actions": ["sqs:*"]}])\n',
        )


def test_policy_document_over_an_unknown_is_unknown(tmp_path):
    out = run(
        tmp_path,
        'arn = aws.ssm.get_parameter(name="/q").value\n'
        'doc = aws.iam.get_policy_document(statements=[{"actions": ["sqs:*"], '
        '"resources": [arn]}])\npulumi.export("json", doc.json)\n',
    ).stack_outputs
    assert out["json"] is UNKNOWN


# --- SDK features -------------------------------------------------------------------------


def test_config_require_of_an_absent_key_is_refused_as_the_cli_refuses_it(tmp_path):
    with pytest.raises(MissingConfigError) as raised:
        run(tmp_path, 'pulumi.Config().require("queueName")\n')
    assert raised.value.key == "fixture:queueName"
    assert str(raised.value).startswith(
        "Missing required configuration variable 'fixture:queueName'\n\t"
        "please set a value using the command `pulumi config set fixture:queueName <value>`"
    )
    assert isinstance(raised.value, ProgramError)


def test_config_values_types_and_secrets(tmp_path):
    out = run(
        tmp_path,
        """
        cfg = pulumi.Config()
        pulumi.export("size", cfg.require_int("size"))
        pulumi.export("flags", cfg.require_object("flags"))
        pulumi.export("token", cfg.require_secret("token"))
        pulumi.export("absent", cfg.get("absent"))
        """,
        stack_yaml="""
        config:
          fixture:size: 10
          fixture:flags: {a: true}
          fixture:token:
            secure: AAABAGZvbw==
        """,
    ).stack_outputs
    assert out["size"] == 10 and out["flags"] == {"a": True} and out["absent"] is None
    assert out["token"].startswith("[secret:")  # encrypted in the stack file: not decrypted


@pytest.mark.parametrize("preview", [False, True])
def test_output_combinators(tmp_path, preview):
    out = run(
        tmp_path,
        """
        q = aws.sqs.Queue("q", name="jobs")
        pulumi.export("all", pulumi.Output.all(q.name, 2).apply(lambda a: f"{a[0]}x{a[1]}"))
        pulumi.export("concat", pulumi.Output.concat("queue/", q.name))
        pulumi.export("format", pulumi.Output.format("{0}!", q.name))
        pulumi.export("json", pulumi.Output.json_dumps({"n": q.name}))
        pulumi.export("arn", q.arn)
        """,
        preview=preview,
    ).stack_outputs
    assert out["all"] == "jobsx2" and out["concat"] == "queue/jobs" and out["format"] == "jobs!"
    assert json.loads(out["json"]) == {"n": "jobs"}
    assert (out["arn"] is UNKNOWN) == preview  # a computed output: unknown in a preview only


def test_secrets_reach_the_pack_as_secrets(tmp_path):
    result = run(
        tmp_path, 'aws.ssm.Parameter("p", type="SecureString", value=pulumi.Output.secret("s"))\n'
    )
    assert one(result, "p").inputs["value"]["value"] == "s"
    assert one(result, "p").inputs["value"]["4dabf18193072939515e22adb298388d"]


def test_components_parent_their_children_and_name_the_instantiating_line(tmp_path):
    result = run(
        tmp_path,
        """
        class Pipe(pulumi.ComponentResource):
            def __init__(self, name, opts=None):
                super().__init__("acme:index:Pipe", name, None, opts)
                aws.sqs.Queue(f"{name}-q", opts=pulumi.ResourceOptions(parent=self))
                self.register_outputs({})

        Pipe("orders")
        """,
    )
    queue, pipe = one(result, "orders-q"), one(result, "orders")
    assert queue.parent == pipe.urn and not pipe.custom
    assert (queue.component_file, queue.component_line) == (pipe.source_file, pipe.source_line)


@pytest.mark.parametrize("preview", [False, True])
def test_stack_references_are_unknown(tmp_path, preview):
    out = run(
        tmp_path,
        'ref = pulumi.StackReference("acme/network/prod")\n'
        'pulumi.export("vpc", ref.get_output("vpcId"))\n'
        'pulumi.export("id", ref.require_output("queueArn").apply(lambda a: a.upper()))\n',
        preview=preview,
    ).stack_outputs
    assert out["vpc"] in (UNKNOWN, None) and out["id"] is UNKNOWN


def test_explicit_providers_and_per_resource_regions(tmp_path):
    result = run(
        tmp_path,
        """
        eu = aws.Provider("eu", region="eu-west-1")
        aws.sqs.Queue("home")
        aws.sqs.Queue("europe", opts=pulumi.ResourceOptions(provider=eu))
        aws.sqs.Queue("sydney", region="ap-southeast-2")
        """,
    )
    arns = {n: one(result, n).outputs["arn"].split(":")[3] for n in ("home", "europe", "sydney")}
    assert arns == {"home": "us-east-1", "europe": "eu-west-1", "sydney": "ap-southeast-2"}


def test_aliases_reach_the_pack_as_urns(tmp_path):
    result = run(
        tmp_path,
        'aws.sqs.Queue("orders",\n'
        '              opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name="jobs")]))\n',
    )
    queue = one(result, "orders")
    assert queue.aliases == [queue.urn.replace("::orders", "::jobs")]


def test_existing_and_imported_resources(tmp_path):
    result = run(
        tmp_path,
        """
        old = aws.sqs.Queue.get("old", "https://sqs.us-east-1.amazonaws.com/123456789012/old")
        aws.sqs.Queue("adopted", opts=pulumi.ResourceOptions(import_="https://sqs/adopted"))
        pulumi.export("old", old.visibility_timeout_seconds)
        """,
    )
    old = one(result, "old")
    assert old.read and old.outputs["visibilityTimeoutSeconds"] is UNKNOWN  # only AWS knows
    assert one(result, "adopted").id == "https://sqs/adopted"


def test_resource_hooks_do_not_run_offline(tmp_path):
    result = run(
        tmp_path,
        """
        calls = []
        hook = pulumi.ResourceHook("note", lambda args: calls.append(args.urn))
        aws.sqs.Queue("q", opts=pulumi.ResourceOptions(
            hooks=pulumi.ResourceHookBinding(before_create=[hook])))
        pulumi.export("calls", pulumi.Output.from_input(0).apply(lambda _: len(calls)))
        """,
    )
    assert result.stack_outputs["calls"] == 0  # nothing is created offline
    assert one(result, "q").type == "aws:sqs/queue:Queue"


def test_base64_placeholders_decode_as_the_sdk_documents():
    # The ECR token's SDK description says base64 of `user:password`: the placeholder is that.
    from idempotent_messaging.offline import typed

    ctx = typed.Context("ecr", "offline", "us-east-1", "123456789012")
    text = typed.invoke_placeholders("aws:ecr/getAuthorizationToken:getAuthorizationToken", ctx)
    assert text is not None
    assert base64.b64decode(text["authorizationToken"]).decode().startswith("AWS:")


def test_a_dynamic_providers_create_does_not_run_and_its_outputs_are_its_inputs(tmp_path):
    result = run(
        tmp_path,
        """
        from pulumi.dynamic import Resource, ResourceProvider

        class Provider(ResourceProvider):
            def create(self, props):
                raise RuntimeError("create ran offline")

        class Thing(Resource):
            size: pulumi.Output[int]

            def __init__(self, name, size, opts=None):
                super().__init__(Provider(), name, {"size": size}, opts)

        pulumi.export("size", Thing("thing", 3).size)
        """,
    )
    assert result.stack_outputs["size"] == 3
    assert one(result, "thing").type == "pulumi-python:dynamic:Resource"


def test_every_test_the_feature_table_names_exists():
    import re

    root = Path(__file__).resolve().parents[2]
    table = (root / "docs" / "offline-engine.md").read_text()
    named = set(re.findall(r"`(?:[\w.]+::)?(test_\w+?)(?:_\*)?`", table))
    sources = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    defined = set(re.findall(r"^def (test_\w+)", sources, re.M))
    prefixes = set(re.findall(r"`(test_\w+)_\*`", table))
    missing = {n for n in named - defined if n not in prefixes}
    missing |= {p for p in prefixes if not any(d.startswith(p) for d in defined)}
    assert not missing, sorted(missing)
    assert len(named) >= 25
