"""Each AWS API call as the IAM actions AWS authorises it by, on the resources it names.

Most operations are authorised by the action of the same name on the resource the request
names; these are not (each from the service's documentation):
* DynamoDB TransactWriteItems: one action per item (Put -> PutItem, Update -> UpdateItem,
  ConditionCheck -> ConditionCheckItem, Delete -> DeleteItem; "Using IAM with DynamoDB
  transactions"); BatchExecuteStatement and ExecuteStatement: one PartiQL action per statement
  verb ("IAM security policies with PartiQL for DynamoDB"); BatchGetItem: ``BatchGetItem`` on
  each table it reads.
* SQS SendMessageBatch / DeleteMessageBatch / ChangeMessageVisibilityBatch: the action of the
  single-message operation (SQS API reference, each batch action's "permissions").
* SNS PublishBatch: ``sns:Publish`` (SNS API reference, PublishBatch).
* S3 HeadObject: ``s3:GetObject`` (S3 API reference, HeadObject permissions).
``runtime.grants.TRANSACT_ITEM_ACTIONS`` holds the first table; it is reused here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from idempotent_messaging.runtime.grants import TRANSACT_ITEM_ACTIONS

Call = tuple[str, str]
"""(IAM action, resource ARN)."""

PARTIQL_ACTIONS = {
    "INSERT": "dynamodb:PartiQLInsert",
    "UPDATE": "dynamodb:PartiQLUpdate",
    "DELETE": "dynamodb:PartiQLDelete",
    "SELECT": "dynamodb:PartiQLSelect",
}
BATCH_ALIASES = {
    ("sqs", "SendMessageBatch"): "sqs:SendMessage",
    ("sqs", "DeleteMessageBatch"): "sqs:DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "sqs:ChangeMessageVisibility",
    ("sns", "PublishBatch"): "sns:Publish",
    ("s3", "HeadObject"): "s3:GetObject",
}
_PARTIQL_TABLE = re.compile(
    r'^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|SELECT\s+.+?\s+FROM)\s+"([^"]+)"', re.I | re.S
)


def table_arn(region: str, account: str, name: str) -> str:
    return f"arn:aws:dynamodb:{region}:{account}:table/{name}"


def queue_arn(region: str, url: str) -> str:
    """SQS queue URLs are ``<endpoint>/<account>/<name>``."""
    account, name = urlparse(url).path.strip("/").split("/")[-2:]
    return f"arn:aws:sqs:{region}:{account}:{name}"


def iam_calls(
    service: str, operation: str, params: Mapping[str, Any], region: str, account: str
) -> set[Call]:
    """The (action, resource) pairs AWS authorises one call by."""
    if service == "dynamodb":
        return _dynamodb(operation, params, region, account)
    action = BATCH_ALIASES.get((service, operation), f"{service}:{operation}")
    if service == "sqs" and "QueueUrl" in params:
        return {(action, queue_arn(region, str(params["QueueUrl"])))}
    if service == "sns" and "TopicArn" in params:
        return {(action, str(params["TopicArn"]))}
    if service == "s3" and "Bucket" in params:
        key = params.get("Key")
        return {(action, f"arn:aws:s3:::{params['Bucket']}" + (f"/{key}" if key else ""))}
    return {(action, "*")}


def _dynamodb(operation: str, params: Mapping[str, Any], region: str, account: str) -> set[Call]:
    if operation == "TransactWriteItems":
        return {
            (TRANSACT_ITEM_ACTIONS[kind], table_arn(region, account, body["TableName"]))
            for item in params["TransactItems"]
            for kind, body in item.items()
        }
    if operation in ("BatchExecuteStatement", "ExecuteStatement"):
        statements = params.get("Statements") or [params]
        calls = set()
        for statement in statements:
            text = str(statement["Statement"])
            match = _PARTIQL_TABLE.match(text)
            assert match, f"cannot read the table of {text!r}"
            verb = text.split(None, 1)[0].upper()
            calls.add((PARTIQL_ACTIONS[verb], table_arn(region, account, match[1])))
        return calls
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return {
            (f"dynamodb:{operation}", table_arn(region, account, table))
            for table in params["RequestItems"]
        }
    return {(f"dynamodb:{operation}", table_arn(region, account, str(params["TableName"])))}
