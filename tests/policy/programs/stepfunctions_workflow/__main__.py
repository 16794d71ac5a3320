"""A Step Functions state machine orchestrating two Lambda functions, its definition JSON
built from the functions' computed ARNs."""

import json

import pulumi
import pulumi_aws as aws


def role_for(name, service):
    return aws.iam.Role(
        name,
        assume_role_policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "sts:AssumeRole",
                        "Principal": {"Service": service},
                    }
                ],
            }
        ),
    )


fn_role = role_for("steps-fn", "lambda.amazonaws.com")
code = pulumi.AssetArchive({"s.py": pulumi.StringAsset("def handler(e, c):\n    return e\n")})
validate = aws.lambda_.Function(
    "validate", runtime="python3.12", handler="s.handler", role=fn_role.arn, code=code
)
charge = aws.lambda_.Function(
    "charge", runtime="python3.12", handler="s.handler", role=fn_role.arn, code=code
)
sfn_role = role_for("steps-sfn", "states.amazonaws.com")
aws.iam.RolePolicy(
    "steps-invoke",
    role=sfn_role.id,
    policy=pulumi.Output.all(validate.arn, charge.arn).apply(
        lambda arns: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": list(arns)}
                ],
            }
        )
    ),
)
machine = aws.sfn.StateMachine(
    "checkout",
    role_arn=sfn_role.arn,
    definition=pulumi.Output.json_dumps(
        {
            "StartAt": "Validate",
            "States": {
                "Validate": {
                    "Type": "Task",
                    "Resource": validate.arn,
                    "Next": "Charge",
                    "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 3}],
                },
                "Charge": {"Type": "Task", "Resource": charge.arn, "End": True},
            },
        }
    ),
)
pulumi.export("state_machine", machine.arn)
pulumi.export(
    "console",
    machine.name.apply(
        lambda n: f"https://console.aws.amazon.com/states/home#/statemachines/view/{n}"
    ),
)
