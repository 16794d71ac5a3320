"""S3 event notifications invoke a function with an on-failure destination: correct.

AWS facts: S3 invokes the notification's function asynchronously (S3 User Guide, "Event
notification destinations"); an on-failure destination on the function's
FunctionEventInvokeConfig receives the event after Lambda's retries (Lambda Developer Guide,
"Asynchronous invocation"), here bounded to 2 attempts within 1 hour. The destination is an SNS
topic encrypted with a customer-managed key (Lambda publishes with the function's role). No
finding at all.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [],
}

bucket = aws.s3.Bucket("photos")
failures = aws.sns.Topic("thumbnail-failures", kms_master_key_id=aws.kms.Key("thumbs-key").arn)
fn = aws.lambda_.Function(
    "thumbnailer",
    role="arn:aws:iam::123456789012:role/thumbnailer",
    runtime="python3.12",
    handler="thumbs.handler",
    code=pulumi.AssetArchive({}),
    timeout=60,
)
aws.lambda_.FunctionEventInvokeConfig(
    "thumbnailer-async",
    function_name=fn.name,
    maximum_retry_attempts=2,
    maximum_event_age_in_seconds=3600,
    destination_config={"on_failure": {"destination": failures.arn}},
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
    lambda_functions=[{"lambda_function_arn": fn.arn, "events": ["s3:ObjectCreated:*"]}],
    opts=pulumi.ResourceOptions(depends_on=[permission]),
)
