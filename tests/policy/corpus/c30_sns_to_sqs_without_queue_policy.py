"""An SNS topic subscribes an SQS queue whose queue has no policy at all.

AWS facts: SNS can deliver to an SQS queue only if the queue policy allows the topic (service
principal sns.amazonaws.com, aws:SourceArn = topic ARN) sqs:SendMessage (SNS Developer Guide,
"Sending Amazon SNS messages to an Amazon SQS queue", step 2); without it every delivery is
refused. The subscription also has no redrive policy (advisory).
"""

import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("delivery-permission-granted", "audit-events"),
        ("sns-subscription-has-redrive", "audit-events-sub"),
        ("sqs-queue-tls-only", "audit-events"),
    ],
}

topic = aws.sns.Topic("domain-events", kms_master_key_id=aws.kms.Key("events-key").arn)
queue = aws.sqs.Queue("audit-events", sqs_managed_sse_enabled=True)
aws.sns.TopicSubscription("audit-events-sub", topic=topic.arn, protocol="sqs", endpoint=queue.arn)
