"""A function on python3.9: deprecated, still deployable.

AWS facts: python3.9 was deprecated on 2025-12-15 (no more security patches) and AWS blocks
creating functions with it from 2027-02-01 (Lambda Developer Guide, "Lambda runtimes",
supported/deprecated runtimes tables). Until then it is an advisory.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [("lambda-runtime-not-deprecated", "thumbnails")],
}

aws.lambda_.Function(
    "thumbnails",
    role="arn:aws:iam::123456789012:role/thumbs",
    runtime="python3.9",
    handler="t.handler",
    code=pulumi.AssetArchive({}),
    memory_size=512,
)
