"""S3 event notifications invoke a function that has no on-failure path.

AWS facts: S3 invokes a notification's Lambda function asynchronously (S3 User Guide, "Event
notification destinations"; Lambda Developer Guide, "Asynchronous invocation"): Lambda retries
a failing event at most twice within at most 6 hours and then discards it, unless the function
has an on-failure destination (FunctionEventInvokeConfig) or a dead-letter queue. Nothing
re-sends a lost S3 event: the uploaded object is never processed. The permission lets only
this bucket invoke the function.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        # lambda-async-has-failure-destination: S3 invokes `thumbnailer` asynchronously and
        # it has neither dead_letter_config nor an on-failure destination.
        ("lambda-async-has-failure-destination", "thumbnailer"),
    ],
}

bucket = aws.s3.Bucket("photos")
fn = aws.lambda_.Function(
    "thumbnailer",
    role="arn:aws:iam::123456789012:role/thumbnailer",
    runtime="python3.12",
    handler="thumbs.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
permission = aws.lambda_.Permission(
    "photos-invoke-thumbnailer",
    action="lambda:InvokeFunction",
    function=fn.name,
    principal="s3.amazonaws.com",
    source_arn=bucket.arn,
)
aws.s3.BucketNotification(
    "photos-notifications",
    bucket=bucket.id,
    lambda_functions=[
        {"lambda_function_arn": fn.arn, "events": ["s3:ObjectCreated:*"], "filter_suffix": ".jpg"}
    ],
    opts=pulumi.ResourceOptions(depends_on=[permission]),
)
