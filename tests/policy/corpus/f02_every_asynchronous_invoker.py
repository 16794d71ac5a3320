"""One function per service that invokes Lambda asynchronously, none with a failure path.

AWS facts: the Lambda Developer Guide's table "Invoking Lambda with events from other AWS
services" lists as "Event-driven; asynchronous invocation" S3, SNS, SES, CloudFormation,
CloudWatch Logs, EventBridge, CodeCommit, Config, IoT, IoT Events and CodePipeline; CloudWatch
alarms invoke asynchronously too (CloudWatch User Guide, "Invoke a Lambda function from an
alarm"); an EventBridge pipe does with invocation type FIRE_AND_FORGET. Lambda discards an
asynchronous event after 2 retries unless the function has an on-failure destination or a DLQ
(Lambda Developer Guide, "Asynchronous invocation"). A caller outside the stack is known by the
service principal of the permission that lets it invoke (here an SNS topic of another stack and
an S3 bucket of another account).

Not asynchronous, so not reported: an SES action with invocation type RequestResponse, a
function an IoT custom authorizer invokes (iot.amazonaws.com with an authorizer's source ARN),
and an IoT rule's function that does have an on-failure destination.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("lambda-async-has-failure-destination", "iot-fn"),
        ("lambda-async-has-failure-destination", "logs-fn"),
        ("lambda-async-has-failure-destination", "ses-fn"),
        ("lambda-async-has-failure-destination", "config-fn"),
        ("lambda-async-has-failure-destination", "codecommit-fn"),
        ("lambda-async-has-failure-destination", "pipe-fn"),
        ("lambda-async-has-failure-destination", "pipeline-fn"),
        ("lambda-async-has-failure-destination", "alarm-fn"),
        ("lambda-async-has-failure-destination", "external-topic-fn"),
        ("lambda-async-has-failure-destination", "external-bucket-fn"),
        ("sqs-queue-tls-only", "pipe-source"),
        ("sqs-queue-tls-only", "iot-failures"),
    ],
}

ROLE = "arn:aws:iam::123456789012:role/workers"


def fn(name: str) -> aws.lambda_.Function:
    return aws.lambda_.Function(
        name,
        role=ROLE,
        runtime="python3.12",
        handler="app.handler",
        code=pulumi.AssetArchive({}),
        timeout=30,
    )


iot_fn, logs_fn, ses_fn, ses_sync_fn = fn("iot-fn"), fn("logs-fn"), fn("ses-fn"), fn("ses-sync-fn")
config_fn, codecommit_fn, pipe_fn = fn("config-fn"), fn("codecommit-fn"), fn("pipe-fn")
pipeline_fn, alarm_fn = fn("pipeline-fn"), fn("alarm-fn")
external_topic_fn, external_bucket_fn = fn("external-topic-fn"), fn("external-bucket-fn")
authorizer_fn, iot_safe_fn = fn("authorizer-fn"), fn("iot-safe-fn")

aws.iot.TopicRule(
    "telemetry",
    enabled=True,
    sql="SELECT * FROM 'devices/+/telemetry'",
    sql_version="2016-03-23",
    lambdas=[{"function_arn": iot_fn.arn}],
)
iot_failures = aws.sqs.Queue(
    "iot-failures", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
aws.lambda_.FunctionEventInvokeConfig(
    "iot-safe-async",
    function_name=iot_safe_fn.name,
    destination_config={"on_failure": {"destination": iot_failures.arn}},
)
aws.iot.TopicRule(
    "alerts",
    enabled=True,
    sql="SELECT * FROM 'devices/+/alerts'",
    sql_version="2016-03-23",
    lambdas=[{"function_arn": iot_safe_fn.arn}],
)
aws.cloudwatch.MetricAlarm(
    "iot-failures-depth",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    dimensions={"QueueName": iot_failures.name},
    statistic="Maximum",
    period=60,
    evaluation_periods=1,
    threshold=1,
    comparison_operator="GreaterThanOrEqualToThreshold",
    alarm_actions=[alarm_fn.arn],  # the on-call paging function: CloudWatch invokes it async
)
aws.lambda_.Permission(
    "authorizer-invoke",
    action="lambda:InvokeFunction",
    function=authorizer_fn.name,
    principal="iot.amazonaws.com",
    source_arn="arn:aws:iot:eu-west-1:123456789012:authorizer/devices",
)
logs = aws.cloudwatch.LogGroup("app-logs", retention_in_days=30)
aws.cloudwatch.LogSubscriptionFilter(
    "errors", log_group=logs.name, filter_pattern="ERROR", destination_arn=logs_fn.arn
)
rule_set = aws.ses.ReceiptRuleSet("inbound", rule_set_name="inbound")
aws.ses.ReceiptRule(
    "support-mail",
    rule_set_name=rule_set.rule_set_name,
    recipients=["support@example.com"],
    enabled=True,
    lambda_actions=[{"function_arn": ses_fn.arn, "position": 1}],
)
aws.ses.ReceiptRule(
    "spam-filter",
    rule_set_name=rule_set.rule_set_name,
    recipients=["sales@example.com"],
    enabled=True,
    lambda_actions=[
        {"function_arn": ses_sync_fn.arn, "invocation_type": "RequestResponse", "position": 1}
    ],
)
aws.cfg.Rule(
    "tagging",
    source={
        "owner": "CUSTOM_LAMBDA",
        "source_identifier": config_fn.arn,
        "source_details": [{"message_type": "ConfigurationItemChangeNotification"}],
    },
)
repo = aws.codecommit.Repository("service", repository_name="service")
aws.codecommit.Trigger(
    "service-pushes",
    repository_name=repo.repository_name,
    triggers=[{"name": "push", "events": ["all"], "destination_arn": codecommit_fn.arn}],
)
pipe_source = aws.sqs.Queue("pipe-source", sqs_managed_sse_enabled=True)
aws.pipes.Pipe(
    "orders-pipe",
    role_arn=ROLE,
    source=pipe_source.arn,
    target=pipe_fn.arn,
    target_parameters={"lambda_function_parameters": {"invocation_type": "FIRE_AND_FORGET"}},
)
aws.codepipeline.Pipeline(
    "release",
    role_arn=ROLE,
    artifact_stores=[{"location": "release-artifacts", "type": "S3"}],
    stages=[
        {
            "name": "Source",
            "actions": [
                {
                    "name": "Source",
                    "category": "Source",
                    "owner": "AWS",
                    "provider": "CodeCommit",
                    "version": "1",
                    "output_artifacts": ["src"],
                    "configuration": {"RepositoryName": "service", "BranchName": "main"},
                }
            ],
        },
        {
            "name": "Notify",
            "actions": [
                {
                    "name": "Notify",
                    "category": "Invoke",
                    "owner": "AWS",
                    "provider": "Lambda",
                    "version": "1",
                    "configuration": {"FunctionName": pipeline_fn.name},
                }
            ],
        },
    ],
)
aws.lambda_.Permission(
    "external-topic-invoke",
    action="lambda:InvokeFunction",
    function=external_topic_fn.name,
    principal="sns.amazonaws.com",
    source_arn="arn:aws:sns:eu-west-1:123456789012:platform-events",
)
aws.lambda_.Permission(
    "external-bucket-invoke",
    action="lambda:InvokeFunction",
    function=external_bucket_fn.name,
    principal="s3.amazonaws.com",
    source_account="999999999999",
    source_arn="arn:aws:s3:::partner-uploads",
)
