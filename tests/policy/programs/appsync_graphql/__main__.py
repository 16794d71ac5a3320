"""AppSync GraphQL API with an API key and a DynamoDB resolver.

Exercises: map outputs indexed by key (`uris["GRAPHQL"]`), a role passed as a resource."""

import json

import pulumi
import pulumi_aws as aws

table = aws.dynamodb.Table(
    "notes",
    hash_key="id",
    attributes=[aws.dynamodb.TableAttributeArgs(name="id", type="S")],
    billing_mode="PAY_PER_REQUEST",
)
role = aws.iam.Role(
    "appsync-role",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "sts:AssumeRole",
                    "Principal": {"Service": "appsync.amazonaws.com"},
                }
            ],
        }
    ),
)
aws.iam.RolePolicy(
    "appsync-table",
    role=role,
    policy=table.arn.apply(
        lambda arn: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["dynamodb:GetItem", "dynamodb:PutItem"],
                        "Resource": arn,
                    }
                ],
            }
        )
    ),
)
api = aws.appsync.GraphQLApi(
    "notes-api",
    authentication_type="API_KEY",
    schema="type Note { id: ID! text: String } type Query { note(id: ID!): Note }",
)
key = aws.appsync.ApiKey("notes-key", api_id=api.id)
source = aws.appsync.DataSource(
    "notes-table",
    api_id=api.id,
    name="notes_table",
    type="AMAZON_DYNAMODB",
    service_role_arn=role.arn,
    dynamodb_config=aws.appsync.DataSourceDynamodbConfigArgs(table_name=table.name),
)
aws.appsync.Resolver(
    "note-resolver",
    api_id=api.id,
    type="Query",
    field="note",
    data_source=source.name,
    request_template=(
        '{"version": "2017-02-28", "operation": "GetItem",'
        ' "key": {"id": $util.dynamodb.toDynamoDBJson($ctx.args.id)}}'
    ),
    response_template="$util.toJson($ctx.result)",
)
pulumi.export("graphql_url", api.uris.apply(lambda uris: uris["GRAPHQL"]))
pulumi.export("api_key", key.key)
