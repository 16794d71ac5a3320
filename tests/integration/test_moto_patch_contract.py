"""The emulator's DynamoDB obeys the BatchExecuteStatement contract it claims
(local/moto_patches.py).

A lenient emulator hides defects (a batch of 26 statements that AWS refuses passes here) or
invents them (a whole call failing where AWS fails one statement). Each test states the AWS rule
it holds the patched moto to; the patch is what `make test`, the demo and the benchmarks run on.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.dynamodb.models.table import Table
from moto.server import ThreadedMotoServer

from idempotent_messaging.local import moto_patches

TABLE = "patch-contract"


@pytest.fixture(scope="module")
def dynamodb() -> Iterator[Any]:
    """A threaded moto server (requests are served concurrently, as DynamoDB serves them)."""
    moto_patches.install()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client(
        "dynamodb",
        endpoint_url=f"http://{host}:{port}",
        region_name="ap-northeast-1",
        config=Config(max_pool_connections=32, retries={"max_attempts": 1}),
    )
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield client
    server.stop()


def insert(key: str, value: str = "v") -> dict[str, Any]:
    return {
        "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'k': ?, 'v': ?}}",
        "Parameters": [{"S": key}, {"S": value}],
    }


def update(key: str, value: str) -> dict[str, Any]:
    return {
        "Statement": f'UPDATE "{TABLE}" SET "v" = ? WHERE "k" = ?',
        "Parameters": [{"S": value}, {"S": key}],
    }


def test_at_most_25_statements_per_call(dynamodb: Any) -> None:
    """AWS: BatchExecuteStatement's Statements has 1 to 25 members; 26 fail the whole call."""
    answers = dynamodb.batch_execute_statement(
        Statements=[insert(f"limit-{i}") for i in range(25)]
    )["Responses"]
    assert len(answers) == 25 and not [a for a in answers if "Error" in a]
    with pytest.raises(ClientError) as refused:
        dynamodb.batch_execute_statement(Statements=[insert(f"over-{i}") for i in range(26)])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "25" in refused.value.response["Error"]["Message"]
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "over-0"}})


def test_a_statement_over_8192_characters_is_refused(dynamodb: Any) -> None:
    """AWS: BatchStatementRequest.Statement is at most 8,192 characters long."""
    padded = dict(insert("long"))
    padded["Statement"] = padded["Statement"] + " " * (8193 - len(padded["Statement"]))
    assert len(padded["Statement"]) == 8193
    with pytest.raises(ClientError) as refused:
        dynamodb.batch_execute_statement(Statements=[padded])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    exact = dict(insert("exact"))
    exact["Statement"] = exact["Statement"] + " " * (8192 - len(exact["Statement"]))
    assert "Error" not in dynamodb.batch_execute_statement(Statements=[exact])["Responses"][0]


def test_an_update_past_400_kb_fails_that_statement_alone(dynamodb: Any) -> None:
    """AWS: each statement of a batch gets its own answer; an item may not exceed 400 KB."""
    dynamodb.batch_execute_statement(Statements=[insert("big"), insert("small")])
    answers = dynamodb.batch_execute_statement(
        Statements=[update("big", "x" * (410 * 1024)), update("small", "changed")]
    )["Responses"]
    assert answers[0]["Error"]["Code"] == "ValidationError"
    assert "Error" not in answers[1]
    small = dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "small"}})["Item"]
    assert small["v"] == {"S": "changed"}
    big = dynamodb.get_item(TableName=TABLE, Key={"k": {"S": "big"}})["Item"]
    assert big["v"] == {"S": "v"}


@pytest.fixture
def slow_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every item read takes 2 ms, so a check-then-write that is not atomic loses the race
    every time instead of once in a hundred runs (the test can fail deterministically)."""
    read = Table.get_item

    def slow(self: Table, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.002)
        return read(self, *args, **kwargs)

    monkeypatch.setattr(Table, "get_item", slow)


def race(*writes: Callable[[], str]) -> list[str]:
    """Run the writes at the same instant (one thread each); their outcomes, in any order."""
    start = threading.Barrier(len(writes))
    outcomes: list[str] = []

    def run(write: Callable[[], str]) -> None:
        start.wait()
        outcomes.append(write())

    threads = [threading.Thread(target=run, args=(w,)) for w in writes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def by_insert(dynamodb: Any, key: str) -> str:
    answer = dynamodb.batch_execute_statement(Statements=[insert(key)])
    return str(answer["Responses"][0].get("Error", {}).get("Code", "ok"))


def by_put(dynamodb: Any, key: str) -> str:
    try:
        dynamodb.put_item(
            TableName=TABLE,
            Item={"k": {"S": key}, "v": {"S": "put"}},
            ConditionExpression="attribute_not_exists(k)",
        )
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])
    return "ok"


@pytest.mark.usefixtures("slow_reads")
def test_concurrent_inserts_of_one_key_succeed_exactly_once(dynamodb: Any) -> None:
    """AWS: an INSERT of an existing key fails with DuplicateItem, atomically: of two
    concurrent INSERTs of one key exactly one succeeds (the claim's whole guarantee)."""
    for round_ in range(20):
        key = f"race-{round_}"
        outcomes = race(*[functools.partial(by_insert, dynamodb, key)] * 4)
        assert sorted(outcomes) == ["DuplicateItem"] * 3 + ["ok"], (round_, outcomes)


@pytest.mark.usefixtures("slow_reads")
def test_insert_and_conditional_put_of_one_key_are_mutually_atomic(dynamodb: Any) -> None:
    """The lock covers moto's own writes too: an INSERT racing a PutItem with
    attribute_not_exists on the same key leaves exactly one winner."""
    for round_ in range(20):
        key = f"mixed-{round_}"
        outcomes = race(
            functools.partial(by_insert, dynamodb, key), functools.partial(by_put, dynamodb, key)
        )
        assert outcomes.count("ok") == 1, (round_, outcomes)
