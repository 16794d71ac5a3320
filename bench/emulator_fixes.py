"""Neutralise two moto costs that grow with the data held, which AWS does not have.

The benchmark measures what the CLIENT does (calls, round trips, batching); moto's per-request
overhead on loopback stands in for network latency. Two moto 5.2 behaviours would instead make
the emulator's own bookkeeping dominate, and grow as a run fills its tables and queues:

1. ``DynamoDBBackend.transact_write_items`` deep-copies every table a transaction touches, once
   PER ITEM, as a rollback backup: O(items in the table x items in the transaction) per call.
   At 2,000 rows a 20-item transaction spends seconds copying. `fast_transaction_backup`
   replaces the copy with a snapshot that shares untouched rows and deep-copies only the rows
   the transaction names; the rollback (swap the snapshot back in) is unchanged, so a
   cancelled transaction still leaves every table exactly as it was
   (tests/integration/test_bench_emulator.py proves it for Put, Update and Delete).
2. An SQS send makes moto rebuild the queue's attribute dict several times, each a scan of
   every message: O(queue depth) per message. The dispatcher benchmark therefore drains its
   work queue in-process after every send (`QueueSink`); see bench/dispatch.py.

Both are patched only inside the benchmark process (``python -m bench``), never in tests of
the product or the demo; ``--stock-moto`` turns the first off to see its effect.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import moto.dynamodb.models as ddb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

_state = threading.local()
# What fast_transaction_backup() found (moto's own, or the emulator's serialising wrapper):
# called inside the fix, put back by restore().
_original_transact: Any = ddb_models.DynamoDBBackend.transact_write_items
_applied = False


def _touched_hashes(table: Table, transact_items: list[dict[str, Any]]) -> set[DynamoType]:
    hashes: set[DynamoType] = set()
    for entry in transact_items:
        for op in entry.values():
            if not isinstance(op, dict) or op.get("TableName") != table.name:
                continue
            key = op.get("Key") or op.get("Item") or {}
            if table.hash_key_attr in key:
                hashes.add(DynamoType(key[table.hash_key_attr]))
    return hashes


def table_snapshot(table: Table, transact_items: list[dict[str, Any]]) -> Table:
    """A rollback copy of `table` for one transaction: untouched rows are shared (a transaction
    cannot change them), the rows it names are deep-copied (an Update mutates rows in place)."""
    snapshot = copy.copy(table)
    items = table.items.copy()  # copies the hash table as is: no re-hashing of the keys
    for hash_value in _touched_hashes(table, transact_items):
        if hash_value in items:
            items[hash_value] = copy.deepcopy(items[hash_value])
    if table.range_key_attr is not None:
        # Range-keyed: rows live in an inner dict per hash key, which a Put extends in place.
        for hash_value, inner in items.items():
            if isinstance(inner, dict):
                items[hash_value] = inner.copy()
    snapshot.items = items
    return snapshot


class _CopyModule:
    """Stands in for the ``copy`` module inside moto.dynamodb.models during a transaction."""

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        transact_items = getattr(_state, "transact_items", None)
        if transact_items is not None and isinstance(value, Table):
            # moto asks once per transaction ITEM; every ask precedes the first write, so one
            # snapshot per table serves them all.
            snapshots: dict[int, Table] = _state.snapshots
            if id(value) not in snapshots:
                snapshots[id(value)] = table_snapshot(value, transact_items)
            return snapshots[id(value)]
        return copy.deepcopy(value, memo)

    copy = staticmethod(copy.copy)


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    _state.transact_items = transact_items
    _state.snapshots = {}
    try:
        _original_transact(self, transact_items)
    finally:
        _state.transact_items = None
        _state.snapshots = {}


def fast_transaction_backup() -> None:
    """Apply fix 1 (idempotent, process-wide)."""
    global _applied, _original_transact
    if not _applied:
        _original_transact = ddb_models.DynamoDBBackend.transact_write_items
        ddb_models.copy = _CopyModule  # type: ignore[assignment]
        ddb_models.DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
        _applied = True


def restore() -> None:
    global _applied
    if not _applied:
        return
    ddb_models.copy = copy
    ddb_models.DynamoDBBackend.transact_write_items = _original_transact  # type: ignore[method-assign]
    _applied = False


@contextmanager
def fast_transactions() -> Iterator[None]:
    fast_transaction_backup()
    try:
        yield
    finally:
        restore()
