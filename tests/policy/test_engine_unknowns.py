"""Values only the cloud knows are unknown offline, never invented, from the invoke to the pack.

During `pulumi preview` a data source runs for real (the engine asks AWS), so a program's
`int(aws.ssm.get_parameter(name=...).value)` is the parameter's value. Offline it cannot be
known; before this class of defect was fixed the engine answered every SSM value with "1", so
an SSM-sourced visibility timeout became 1 s and the mandatory visibility rule blocked a valid
program. Now such a value is unknown, as a preview treats a value it cannot know: rules that
need it stay undecided; `--answers` pins the real value, which is then judged.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from idempotent_messaging.offline import check, run_program
from idempotent_messaging.rules.values import UNKNOWN
from tests.policy.conftest import GOOD, pairs, write_project

pytestmark = pytest.mark.policy

VISIBILITY = "sqs-visibility-timeout-covers-lambda-timeout"
SSM_VISIBILITY = (
    '    visibility_timeout_seconds=int(aws.ssm.get_parameter(name="/orders/visibility").value),'
)


def good_with(line: str) -> str:
    body = GOOD.replace("    visibility_timeout_seconds=360,", line)
    assert body != GOOD
    return body


def one(run, name: str):
    found = [r for r in run.resources if r.name == name]
    assert len(found) == 1, [r.name for r in run.resources]
    return found[0]


@pytest.mark.parametrize("preview", [False, True])
def test_an_ssm_sourced_visibility_timeout_is_unknown_and_never_blocks(tmp_path, preview):
    project = write_project(tmp_path / "ssm", good_with(SSM_VISIBILITY))
    run, violations = check(project, "dev", preview=preview)
    assert one(run, "orders").inputs["visibilityTimeoutSeconds"] is UNKNOWN
    assert one(run, "orders").outputs["visibilityTimeoutSeconds"] is UNKNOWN
    assert not [v for v in violations if v.enforcement == "mandatory"], violations


def test_an_answers_file_pins_the_value_and_then_it_is_judged(tmp_path):
    project = write_project(tmp_path / "pinned", good_with(SSM_VISIBILITY))
    (project / "offline-answers.yaml").write_text(
        "invokes:\n"
        "  - function: aws.ssm.get_parameter\n"
        "    args: {name: /orders/visibility}\n"
        "    result: {value: 20}\n"  # a YAML number for a string field: typed as the SDK says
    )
    run, violations = check(project, "dev")
    assert one(run, "orders").inputs["visibilityTimeoutSeconds"] == 20
    assert (VISIBILITY, "orders") in pairs(violations, "mandatory")


@pytest.mark.parametrize("preview", [False, True])
def test_output_form_invokes_are_unknown_and_their_callbacks_do_not_run(tmp_path, preview):
    project = write_project(
        tmp_path / "output-form",
        good_with(
            "    visibility_timeout_seconds=aws.ssm.get_parameter_output("
            'name="/orders/visibility").value.apply(lambda v: ran.append(v) or int(v)),'
        ).replace("topic = ", "ran = []\ntopic = ", 1)
        + 'pulumi.export("ran", pulumi.Output.from_input(1).apply(lambda _: len(ran)))\n',
    )
    run, violations = check(project, "dev", preview=preview)
    assert one(run, "orders").inputs["visibilityTimeoutSeconds"] is UNKNOWN
    assert run.stack_outputs["ran"] == 0
    assert not [v for v in violations if v.enforcement == "mandatory"]


DERIVED = """
import math
import helpers

value = aws.ssm.get_parameter(name="/orders/visibility").value
aws.sqs.Queue("times", visibility_timeout_seconds=int(value) * 6)
aws.sqs.Queue("floor", visibility_timeout_seconds=max(int(value), 30))
aws.sqs.Queue("ceil", visibility_timeout_seconds=math.ceil(float(value) / 2))
aws.sqs.Queue("named", name=f"orders-{value}")
aws.sqs.Queue("local", visibility_timeout_seconds=helpers.seconds(value))
aws.sqs.Queue(
    "redrive",
    redrive_policy=json.dumps({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:d",
                               "maxReceiveCount": int(value)}),
)
aws.sqs.Queue("concat", kms_master_key_id="alias/" + value.lower())
"""


@pytest.mark.parametrize("preview", [False, True])
def test_values_derived_from_an_unknown_stay_unknown(tmp_path, preview):
    # Arithmetic, int()/float()/max(), math.ceil, f-strings, json.dumps, concatenation and
    # string methods, in the program and in its own modules (helpers.py beside it).
    project = write_project(tmp_path / "derived", DERIVED)
    (project / "helpers.py").write_text("def seconds(v):\n    return int(v) * 6\n")
    run = run_program(project, "dev", preview=preview)
    for name, key in (
        ("times", "visibilityTimeoutSeconds"),
        ("floor", "visibilityTimeoutSeconds"),
        ("ceil", "visibilityTimeoutSeconds"),
        ("named", "name"),
        ("local", "visibilityTimeoutSeconds"),
        ("redrive", "redrivePolicy"),
        ("concat", "kmsMasterKeyId"),
    ):
        assert one(run, name).inputs[key] is UNKNOWN, (name, one(run, name).inputs)
    # A queue named by an unknown has an unknown ARN, not one invented from an auto-name.
    assert one(run, "named").outputs["arn"] is UNKNOWN


def test_builtins_behave_as_builtins_in_the_program(tmp_path):
    project = write_project(
        tmp_path / "builtins",
        """
        import enum

        class Size(int, enum.Enum):
            SMALL = 1

        class Port(int):
            pass

        assert isinstance(5, int) and isinstance(True, int) and issubclass(bool, int)
        assert isinstance(2.5, (str, float)) and int("7") == 7 and float("1.5") == 1.5
        assert int.from_bytes(b"\\x01", "big") == 1 and type(Port(3)) is Port
        assert Size.SMALL == 1 and max([1, 3]) == 3 and min(2, 4) == 2
        count = int(aws.ssm.get_parameter(name="/web/count").value)
        for i in range(count):
            aws.sqs.Queue(f"worker-{i}")
        """,
    )
    run = run_program(project, "dev")
    assert [r.name for r in run.resources if r.type == "aws:sqs/queue:Queue"] == ["worker-0"]


def test_a_conversion_outside_the_programs_own_modules_is_reported(tmp_path, capsys):
    # An installed library calling int() turns the unknown into its placeholder: said so.
    project = write_project(
        tmp_path / "library",
        'import seconds_lib\nvalue = aws.ssm.get_parameter(name="/v").value\n'
        'aws.sqs.Queue("q", visibility_timeout_seconds=seconds_lib.seconds(value))\n',
    )
    lib = tmp_path / "site" / "seconds_lib.py"
    lib.parent.mkdir()
    lib.write_text("def seconds(v):\n    return int(v)\n")
    run = run_program(project, "dev", package_paths=[lib.parent])
    assert one(run, "q").inputs["visibilityTimeoutSeconds"] == 1
    err = capsys.readouterr().err
    assert (
        "seconds_lib.py:2: int() turned the unknown aws:ssm/getParameter:getParameter.value "
        "into its placeholder" in err
    ), err


@pytest.mark.parametrize("preview", [False, True])
def test_lookups_are_unknown_but_what_arguments_and_names_give_is_known(tmp_path, preview):
    project = write_project(
        tmp_path / "lookups",
        """
        vpc = aws.ec2.get_vpc(default=True)
        subnets = aws.ec2.get_subnets(filters=[{"name": "vpc-id", "values": [vpc.id]}])
        aws.ec2.SecurityGroup("sg", vpc_id=vpc.id)
        legacy = aws.sqs.get_queue(name="legacy-events")
        alias = aws.kms.get_alias(name="alias/aws/sns")
        pulumi.export("subnets", subnets.ids)
        pulumi.export("default", vpc.default)
        pulumi.export("legacy_arn", legacy.arn)
        pulumi.export("legacy_url", legacy.url)
        pulumi.export("alias_arn", alias.arn)
        pulumi.export("alias_target", alias.target_key_arn)
        """,
    )
    run = run_program(project, "dev", preview=preview)
    out = run.stack_outputs
    assert one(run, "sg").inputs["vpcId"] is UNKNOWN
    assert out["subnets"] is UNKNOWN  # a plain invoke over an unknown: wholly unknown
    assert out["default"] is True  # the argument it repeats
    assert out["legacy_arn"] == "arn:aws:sqs:us-east-1:123456789012:legacy-events"
    assert out["legacy_url"] == "https://sqs.us-east-1.amazonaws.com/123456789012/legacy-events"
    assert out["alias_arn"] == "arn:aws:kms:us-east-1:123456789012:alias/aws/sns"
    assert out["alias_target"] is UNKNOWN  # only AWS knows which key an alias targets


def test_a_program_that_parses_an_unknown_fails_with_a_hint_to_pin_it(tmp_path):
    from idempotent_messaging.offline import ProgramError

    project = write_project(
        tmp_path / "parses",
        'config = json.loads(aws.ssm.get_parameter(name="/cfg").value)\n'
        'aws.sqs.Queue("q", visibility_timeout_seconds=config["visibility"])\n',
    )
    with pytest.raises(ProgramError) as raised:
        run_program(project, "dev")
    message = str(raised.value)
    assert "aws:ssm/getParameter:getParameter.value" in message and "--answers" in message


def test_placeholders_survive_copies_and_pickling():
    import copy
    import pickle

    from idempotent_messaging.offline.unknowns import UnknownInt, UnknownStr, engine_patches

    text, number = UnknownStr("x", "t.f"), UnknownInt(3, "t.g")
    for made in (copy.deepcopy(text), pickle.loads(pickle.dumps(text))):
        assert isinstance(made, UnknownStr) and made.origin == "t.f" and made == "x"
    assert copy.copy(number).origin == "t.g" and getattr(number + 1, "origin", None) == "t.g"
    with engine_patches():  # during a run, json.dumps of an unknown is unknown text
        dumped = json.dumps({"n": number})
    assert isinstance(dumped, UnknownStr)
    assert json.loads(dumped)["n"] == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    assert json.dumps({"n": 1}) == '{"n": 1}'  # and outside a run json is json


def test_a_numeric_placeholder_reads_as_unknown_in_text(tmp_path):
    # str() and formatting of an unknown number carry the sentinel, so text built from it is
    # unknown too (an environment variable, a description).
    project = write_project(
        tmp_path / "text",
        textwrap.dedent(
            """
            size = int(aws.ssm.get_parameter(name="/batch").value)
            aws.sqs.Queue("q", tags={"batch": str(size), "label": f"batch of {size}"})
            """
        ),
    )
    run = run_program(project, "dev")
    assert one(run, "q").inputs["tags"] == {"batch": UNKNOWN, "label": UNKNOWN}
