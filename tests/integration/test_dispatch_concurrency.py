"""The dispatcher under concurrency and change: two re-runs of one month at once, and a
manifest replaced while a run is between pages."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.client import BaseClient

from handlers.dispatch import app
from handlers.dispatch import env as denv
from handlers.dispatch.sources import S3ManifestSource
from tests.integration.test_dispatch_run import SCHEDULED_JUNE, _manifest, _one, keys_of
from tests.integration.test_dispatch_world import RUNS, PageBudget, World, accounts
from tests.integration.test_dispatch_world import world as world

pytestmark = pytest.mark.integration


@contextmanager
def other_rerun_lands_first(world: World, month: str) -> Iterator[list[int]]:
    """At the botocore call boundary: just before THIS invocation's generation-bumping
    UpdateItem reaches DynamoDB, another invocation's identical bump lands (the interleaving
    two concurrent manual re-runs produce: both loaded generation g, one wins)."""
    original = BaseClient._make_api_call
    fired: list[int] = []

    def patched(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if (
            operation == "UpdateItem"
            and params.get("ConditionExpression") == "generation = :g0"
            and not fired
        ):
            fired.append(1)
            original(
                world.dynamodb,
                "UpdateItem",
                {
                    "TableName": RUNS,
                    "Key": {denv.RUNS_HASH_KEY: {"S": month}},
                    "UpdateExpression": "SET generation = generation + :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                },
            )
        return original(client, operation, params)

    BaseClient._make_api_call = patched
    try:
        yield fired
    finally:
        BaseClient._make_api_call = original


def test_the_loser_of_two_concurrent_manual_reruns_ends_cleanly_with_a_log_line(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """The generation bump is a compare-and-swap (``generation = :g0``): DynamoDB lets one
    re-run win. The loser must return normally (an invocation error would fire the Errors
    alarm and Lambda's async retry would re-run it) and say why in its log."""
    world.seed(accounts(1, 5))
    world.dispatch(SCHEDULED_JUNE)
    world.take_work()
    with other_rerun_lands_first(world, "2026-06") as fired:
        result = world.dispatch({"month": "2026-06"})
    assert fired, "the interleaving was not exercised"
    assert result["generation"] is None
    assert "concurrent re-run" in result["reason"]
    assert result["enqueued"] == 0
    assert world.take_work() == []  # the winner does the work, not the loser
    decisions = [str(getattr(r, "decision", "")) for r in caplog.records]
    assert any("concurrent re-run" in d and "this one stops" in d for d in decisions)


def test_a_manifest_replaced_during_a_run_stops_it_with_a_clear_error(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3 answers 412 PreconditionFailed to a GetObject whose IfMatch ETag is no longer the
    object's. The run pins the ETag when its generation starts; a continuation that meets
    another manifest refuses to go on (its byte-offset cursors describe the old one)."""
    lines = [
        json.dumps(
            {"tenant_id": "acme", "employee_id": f"e{i:02d}", "amount": 5, "currency": "JPY"}
        )
        for i in range(30)
    ]
    _manifest(world, lines)
    # Small ranged reads, so the run needs several pages (the default reads 1 MiB per page).
    monkeypatch.setattr(
        app, "S3ManifestSource", functools.partial(S3ManifestSource, chunk_bytes=200)
    )
    world.dispatcher_env(
        **{
            denv.ITEM_SOURCE: denv.SOURCE_S3,
            denv.MANIFEST_BUCKET: "billing-manifests",
            denv.MANIFEST_KEY_TEMPLATE: "billing/{month}.jsonl",
            denv.SCAN_SEGMENTS: "1",
        }
    )
    first = world.dispatch({"month": "2026-06"}, remaining=PageBudget(1))
    assert first["handed_off"] == [0] and 0 < first["enqueued"] < 30
    record = world.run_record("2026-06")
    etag = world.s3.head_object(Bucket="billing-manifests", Key="billing/2026-06.jsonl")["ETag"]
    assert record["source_version"]["S"] == etag
    sent_before = set(keys_of(world.take_work()))

    _manifest(
        world,
        ['{"tenant_id": "acme", "employee_id": "new", "amount": 9, "currency": "JPY"}', *lines],
    )
    with pytest.raises(Exception, match="was replaced during the run"):
        _one(world, checks=50)
    assert world.take_work() == []  # nothing skipped or repeated: nothing more sent at all
    record = world.run_record("2026-06")
    assert "was replaced during the run" in record["last_error"]["S"]
    assert record["status"]["S"] == "running"
    assert sent_before  # the pages before the replacement stay counted

    # The way forward the error names: a restart pins the new manifest and sends it whole.
    again = world.dispatch({"month": "2026-06", "restart": True})
    assert again["run_finished"] is True and again["enqueued"] == 31


def test_an_unchanged_manifest_pins_and_finishes_across_continuations(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [
        json.dumps(
            {"tenant_id": "acme", "employee_id": f"e{i:02d}", "amount": 5, "currency": "JPY"}
        )
        for i in range(30)
    ]
    _manifest(world, lines)
    monkeypatch.setattr(
        app, "S3ManifestSource", functools.partial(S3ManifestSource, chunk_bytes=200)
    )
    world.dispatcher_env(
        **{
            denv.ITEM_SOURCE: denv.SOURCE_S3,
            denv.MANIFEST_BUCKET: "billing-manifests",
            denv.MANIFEST_KEY_TEMPLATE: "billing/{month}.jsonl",
            denv.SCAN_SEGMENTS: "1",
        }
    )
    world.dispatch({"month": "2026-06"}, remaining=PageBudget(1))
    while world.queue_depth(world.control_url):
        _one(world, checks=2)
    assert sorted(keys_of(world.take_work())) == sorted(f"acme:e{i:02d}:2026-06" for i in range(30))
    assert world.run_record("2026-06")["status"]["S"] == "finished"
