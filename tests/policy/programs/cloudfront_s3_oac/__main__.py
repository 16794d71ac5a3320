"""A private bucket served through CloudFront with origin access control; the certificate
lives in us-east-1 through an explicit provider, as CloudFront requires."""

import json

import pulumi
import pulumi_aws as aws

us_east_1 = aws.Provider("us-east-1", region="us-east-1")
cert = aws.acm.Certificate(
    "cdn",
    domain_name="cdn.example.com",
    validation_method="DNS",
    opts=pulumi.ResourceOptions(provider=us_east_1),
)
bucket = aws.s3.Bucket("assets")
oac = aws.cloudfront.OriginAccessControl(
    "assets",
    origin_access_control_origin_type="s3",
    signing_behavior="always",
    signing_protocol="sigv4",
)
cdn = aws.cloudfront.Distribution(
    "assets",
    enabled=True,
    aliases=["cdn.example.com"],
    default_root_object="index.html",
    origins=[
        {
            "domain_name": bucket.bucket_regional_domain_name,
            "origin_id": "s3",
            "origin_access_control_id": oac.id,
        }
    ],
    default_cache_behavior={
        "target_origin_id": "s3",
        "viewer_protocol_policy": "redirect-to-https",
        "allowed_methods": ["GET", "HEAD"],
        "cached_methods": ["GET", "HEAD"],
        "cache_policy_id": "658327ea-f89d-4fab-a63d-7e88639e58f6",
    },
    restrictions={"geo_restriction": {"restriction_type": "none"}},
    viewer_certificate={"acm_certificate_arn": cert.arn, "ssl_support_method": "sni-only"},
)
aws.s3.BucketPolicy(
    "assets-cdn",
    bucket=bucket.id,
    policy=pulumi.Output.all(bucket.arn, cdn.arn).apply(
        lambda a: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "cloudfront.amazonaws.com"},
                        "Action": "s3:GetObject",
                        "Resource": f"{a[0]}/*",
                        "Condition": {"StringEquals": {"AWS:SourceArn": a[1]}},
                    }
                ],
            }
        )
    ),
)
pulumi.export("cdn_domain", cdn.domain_name)
pulumi.export("cert_region", cert.arn.apply(lambda arn: arn.split(":")[3]))
