"""A deliberately public static-website bucket: advisory, not a pipeline defect.

AWS facts: a static website served from S3 needs a bucket policy that lets everyone
(Principal "*") s3:GetObject on its objects, with Block Public Access off (S3 User Guide,
"Setting permissions for website access"). That is the intent of the bucket, it carries no
message of the pipeline, and a `pulumi preview` must not fail on it: the public-principal
finding for non-messaging resources is advisory (and can be waived with a reason).
"""

import json

import pulumi_aws as aws

EXPECTED = {
    "both": [
        # other-resource-policy-no-public-principal (advisory): Principal "*" on a bucket.
        ("other-resource-policy-no-public-principal", "site-public-read"),
    ],
}

site = aws.s3.Bucket("site", bucket="www.example.com")
aws.s3.BucketWebsiteConfiguration(
    "site-website", bucket=site.id, index_document={"suffix": "index.html"}
)
aws.s3.BucketPublicAccessBlock(
    "site-public-access",
    bucket=site.id,
    block_public_acls=False,
    block_public_policy=False,
    ignore_public_acls=False,
    restrict_public_buckets=False,
)
aws.s3.BucketPolicy(
    "site-public-read",
    bucket=site.id,
    policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "PublicReadForWebsite",
                    "Effect": "Allow",
                    "Principal": "*",
                    "Action": "s3:GetObject",
                    "Resource": "arn:aws:s3:::www.example.com/*",
                }
            ],
        }
    ),
)
