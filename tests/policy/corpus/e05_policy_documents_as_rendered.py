"""Queue policies built with aws.iam.get_policy_document, judged as the provider renders them.

AWS provider facts (terraform-provider-aws `aws_iam_policy_document`, bridged by pulumi-aws):
a statement's `principals` block of type "*" with identifiers ["*"] renders as
`"Principal": "*"`, type "AWS" with ["*"] as `{"AWS": "*"}`; `source_policy_documents` are
merged first, then the document's own statements (a Sid already present is replaced in place),
then `override_policy_documents`. AWS facts: Principal "*" (or {"AWS": "*"}) in a queue policy
grants every account and anonymous callers unless a condition limits it (IAM User Guide,
"Principal"); a Deny of requests with aws:SecureTransport false makes a queue TLS-only.
"intake" is public through a `"*"` principal. "partners" is public through {"AWS": "*"}.
"events" admits one partner account only, and gets its TLS-only statement from a shared
source document: correct. The engine used to render the `"*"`
principal as {"*": "*"} and to drop source documents, so it missed "intake" and reported
"events" as not TLS-only.
"""

import pulumi_aws as aws

EXPECTED = {
    "up_only": [
        (
            "resource-policy-no-public-principal",
            "intake-policy",
            "the document is rendered from the queue's ARN, which a preview of a new queue does "
            "not know, so the Output-form invoke does not run and the policy is unknown",
        ),
        (
            "resource-policy-no-public-principal",
            "partners-policy",
            "the document is rendered from the queue's ARN, which a preview of a new queue does "
            "not know, so the Output-form invoke does not run and the policy is unknown",
        ),
    ],
}

deny_plain_http = aws.iam.get_policy_document(
    statements=[
        {
            "sid": "TlsOnly",
            "effect": "Deny",
            "principals": [{"type": "*", "identifiers": ["*"]}],
            "actions": ["sqs:*"],
            "resources": ["*"],
            "conditions": [
                {"test": "Bool", "variable": "aws:SecureTransport", "values": ["false"]}
            ],
        }
    ]
)


def queue_with_policy(name: str, statement: dict) -> aws.sqs.Queue:
    queue = aws.sqs.Queue(name, sqs_managed_sse_enabled=True)
    document = aws.iam.get_policy_document_output(
        source_policy_documents=[deny_plain_http.json],
        statements=[{**statement, "resources": [queue.arn]}],
    )
    aws.sqs.QueuePolicy(f"{name}-policy", queue_url=queue.url, policy=document.json)
    return queue


queue_with_policy(
    "events",
    {
        "sid": "ShippingAccount",
        "principals": [{"type": "AWS", "identifiers": ["arn:aws:iam::210987654321:root"]}],
        "actions": ["sqs:SendMessage"],
    },
)
queue_with_policy(
    "intake",
    {
        "sid": "Anyone",
        "principals": [{"type": "*", "identifiers": ["*"]}],
        "actions": ["sqs:SendMessage"],
    },
)
queue_with_policy(
    "partners",
    {
        "sid": "AnyAccount",
        "principals": [{"type": "AWS", "identifiers": ["*"]}],
        "actions": ["sqs:SendMessage"],
    },
)
