"""Queues in three regions: the stack's default, an explicit `aws.Provider(region=...)`, and
pulumi-aws v7's per-resource `region` argument. Their ARNs and URLs must name each
resource's own region."""

import pulumi
import pulumi_aws as aws

eu = aws.Provider("eu", region="eu-west-1")
home = aws.sqs.Queue("home", sqs_managed_sse_enabled=True)
europe = aws.sqs.Queue(
    "europe", sqs_managed_sse_enabled=True, opts=pulumi.ResourceOptions(provider=eu)
)
sydney = aws.sqs.Queue("sydney", sqs_managed_sse_enabled=True, region="ap-southeast-2")
topic = aws.sns.Topic("sydney-alerts", region="ap-southeast-2")
pulumi.export("home_arn", home.arn)
pulumi.export("europe_arn", europe.arn)
pulumi.export("sydney_arn", sydney.arn)
pulumi.export("sydney_url", sydney.url)
pulumi.export("topic_arn", topic.arn)
pulumi.export("europe_region", aws.get_region(opts=pulumi.InvokeOptions(provider=eu)).region)
