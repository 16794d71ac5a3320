"""An EventBridge rule target's DLQ without an alarm: a DLQ like any other.

AWS facts: EventBridge sends an event it could not deliver to its target after the retry
policy (here 10 attempts / 2 h) to the target's dead-letter queue (EventBridge User Guide,
"Using dead-letter queues to process undelivered events"); nobody is told unless a CloudWatch
alarm watches that queue (ApproximateNumberOfMessagesVisible >= 1), and the events expire there
with the queue's retention. The target and the DLQ both let events.amazonaws.com send (the
condition names the rule) and deny plain HTTP. Nothing else is wrong.
"""

import json

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        # sqs-dlq-has-alarm: the target's dead_letter_config.arn makes `partner-target-dlq` a
        # DLQ (EventBridge writes the failed events there); no alarm watches it.
        ("sqs-dlq-has-alarm", "partner-target-dlq"),
    ],
}

rule = aws.cloudwatch.EventRule(
    "partner-rule", event_pattern=json.dumps({"source": ["partner.acme"]})
)
inbox = aws.sqs.Queue("partner-inbox", sqs_managed_sse_enabled=True)
dlq = aws.sqs.Queue(
    "partner-target-dlq", message_retention_seconds=1209600, sqs_managed_sse_enabled=True
)
for name, q in (("partner-inbox", inbox), ("partner-target-dlq", dlq)):
    aws.sqs.QueuePolicy(
        f"{name}-policy",
        queue_url=q.id,
        policy=pulumi.Output.json_dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "EventBridgeSends",
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": q.arn,
                        "Condition": {"ArnEquals": {"aws:SourceArn": rule.arn}},
                    },
                    {
                        "Sid": "TlsOnly",
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": "sqs:*",
                        "Resource": q.arn,
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    },
                ],
            }
        ),
    )
aws.cloudwatch.EventTarget(
    "partner-target",
    rule=rule.name,
    arn=inbox.arn,
    retry_policy={"maximum_retry_attempts": 10, "maximum_event_age_in_seconds": 7200},
    dead_letter_config={"arn": dlq.arn},
)
