"""An ECR repository with a lifecycle policy; the registry login is decoded from the
authorization token (base64 of `user:password`), as image-build programs do."""

import base64
import json

import pulumi
import pulumi_aws as aws

repo = aws.ecr.Repository("api", image_scanning_configuration={"scan_on_push": True})
aws.ecr.LifecyclePolicy(
    "api",
    repository=repo.name,
    policy=json.dumps(
        {
            "rules": [
                {
                    "rulePriority": 1,
                    "description": "keep 20",
                    "selection": {
                        "tagStatus": "any",
                        "countType": "imageCountMoreThan",
                        "countNumber": 20,
                    },
                    "action": {"type": "expire"},
                }
            ]
        }
    ),
)
token = aws.ecr.get_authorization_token()
user, password = base64.b64decode(token.authorization_token).decode().split(":", 1)
pulumi.export("registry_user", user)
pulumi.export("registry", token.proxy_endpoint)
pulumi.export("image", repo.repository_url.apply(lambda u: f"{u}:latest"))
