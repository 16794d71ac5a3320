"""An SNS topic fanned out to two SQS queues with raw delivery and a filter policy; each
queue's policy admits only that topic (built from the topic's computed ARN)."""

import json

import pulumi
import pulumi_aws as aws

topic = aws.sns.Topic("orders")
for name, filter_policy in (("billing", {"type": ["paid"]}), ("shipping", {"type": ["packed"]})):
    queue = aws.sqs.Queue(name, sqs_managed_sse_enabled=True)
    aws.sqs.QueuePolicy(
        name,
        queue_url=queue.url,
        policy=pulumi.Output.all(queue.arn, topic.arn).apply(
            lambda a: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "sns.amazonaws.com"},
                            "Action": "sqs:SendMessage",
                            "Resource": a[0],
                            "Condition": {"ArnEquals": {"aws:SourceArn": a[1]}},
                        }
                    ],
                }
            )
        ),
    )
    aws.sns.TopicSubscription(
        name,
        topic=topic,
        protocol="sqs",
        endpoint=queue.arn,
        raw_message_delivery=True,
        filter_policy=json.dumps(filter_policy),
    )
pulumi.export("topic", topic.arn)
