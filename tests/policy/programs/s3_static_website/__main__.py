"""A public S3 static website: bucket, website configuration, public-access settings, a
read-only bucket policy and an uploaded index page; the website endpoint exported."""

import json

import pulumi
import pulumi_aws as aws

site = aws.s3.Bucket("site")
website = aws.s3.BucketWebsiteConfiguration(
    "site",
    bucket=site.id,
    index_document={"suffix": "index.html"},
    error_document={"key": "404.html"},
)
access = aws.s3.BucketPublicAccessBlock(
    "site",
    bucket=site.id,
    block_public_acls=True,
    ignore_public_acls=True,
    block_public_policy=False,
    restrict_public_buckets=False,
)
aws.s3.BucketPolicy(
    "site-read",
    bucket=site.id,
    policy=site.arn.apply(
        lambda arn: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": "s3:GetObject",
                        "Resource": f"{arn}/*",
                    }
                ],
            }
        )
    ),
    opts=pulumi.ResourceOptions(depends_on=[access]),
)
aws.s3.BucketObject(
    "index", bucket=site, key="index.html", content_type="text/html", content="<h1>hello</h1>"
)
pulumi.export("url", website.website_endpoint.apply(lambda e: "http://" + e))
