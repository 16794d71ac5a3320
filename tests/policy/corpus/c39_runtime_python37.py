"""A function on python3.7, a runtime AWS no longer lets anyone create functions with.

AWS facts: python3.7 was deprecated on 2023-12-04 and function creation with it was blocked
from 2024-01-09 (Lambda Developer Guide, "Lambda runtimes", deprecated runtimes table):
`pulumi up` fails with InvalidParameterValueException. The runtime is an input, known in a
preview.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("lambda-runtime-not-blocked", "legacy-cron")],
}

aws.lambda_.Function(
    "legacy-cron",
    role="arn:aws:iam::123456789012:role/legacy",
    runtime="python3.7",
    handler="cron.handler",
    code=pulumi.AssetArchive({}),
)
