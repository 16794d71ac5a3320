"""A FIFO source whose redrive policy targets a standard queue.

AWS facts: "the dead-letter queue of a FIFO queue must also be a FIFO queue; the dead-letter
queue of a standard queue must also be a standard queue" (SQS Developer Guide, "Using
dead-letter queues"); SQS rejects the redrive policy. The retention rule compares standard
pairs only, so it stays silent on this mixed pair.
"""

import pulumi
import pulumi_aws as aws

EXPECTED = {
    "both": [
        ("sqs-dlq-type-matches-source", "settlements-dlq"),
        ("sqs-dlq-has-alarm", "settlements-dlq"),
        ("sqs-queue-tls-only", "settlements"),
        ("sqs-queue-tls-only", "settlements-dlq"),
    ],
}

dlq = aws.sqs.Queue("settlements-dlq", sqs_managed_sse_enabled=True)
aws.sqs.Queue(
    "settlements",
    name="settlements.fifo",
    fifo_queue=True,
    sqs_managed_sse_enabled=True,
    redrive_policy=pulumi.Output.json_dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5}),
)
