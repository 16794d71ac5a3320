"""Environment variables of the dispatcher function and their defaults (pure constants).

The MonthlyFanout component sets these; ``idempotent_messaging.dispatch.settings`` reads them.
"""

from __future__ import annotations

# --- Where items come from and where charges go --------------------------------------------
ITEM_SOURCE = "DISPATCH_ITEM_SOURCE"  # "dynamodb" (billing_accounts) or "s3" (JSONL manifest)
BILLING_ACCOUNTS_TABLE = "BILLING_ACCOUNTS_TABLE"
MANIFEST_BUCKET = "MANIFEST_BUCKET"
MANIFEST_KEY_TEMPLATE = "MANIFEST_KEY_TEMPLATE"  # e.g. "billing/{month}.jsonl"
WORK_QUEUE_URL = "WORK_QUEUE_URL"  # FIFO queue consumed by handlers.charges
CONTROL_QUEUE_URL = "CONTROL_QUEUE_URL"  # FIFO queue of continuation messages (this function)
RUNS_TABLE = "RUNS_TABLE"  # one run record per billing month

# --- Time zone of the schedule: the billing month is computed in it -------------------------
SCHEDULE_TIMEZONE = "SCHEDULE_TIMEZONE"

# --- Scale knobs ----------------------------------------------------------------------------
SCAN_SEGMENTS = "DISPATCH_SCAN_SEGMENTS"
SCAN_PAGE_SIZE = "DISPATCH_SCAN_PAGE_SIZE"
SEGMENT_CONCURRENCY = "DISPATCH_SEGMENT_CONCURRENCY"
SEND_CONCURRENCY = "DISPATCH_SEND_CONCURRENCY"
TIME_RESERVE_MS = "DISPATCH_TIME_RESERVE_MS"
MAX_HOPS = "DISPATCH_MAX_HOPS"
MAX_SEND_ATTEMPTS = "DISPATCH_MAX_SEND_ATTEMPTS"

SOURCE_DYNAMODB = "dynamodb"
SOURCE_S3 = "s3"

# Defaults, with the reason for each number.
DEFAULT_SCAN_SEGMENTS = 16
"""16 parallel segments: 1,000,000 items / 16 = 62,500 per segment, a few minutes of sending
each; the FIFO queue (3,000 msg/s without high-throughput mode) is the real bound."""
DEFAULT_SCAN_PAGE_SIZE = 1000
"""1000 items per page and per checkpoint: 100 SendMessageBatch calls, seconds of work, so a
crash re-sends at most one page per segment (absorbed by FIFO dedup + consumer idempotency)."""
DEFAULT_SEGMENT_CONCURRENCY = 16
DEFAULT_SEND_CONCURRENCY = 16
DEFAULT_TIME_RESERVE_MS = 60_000
"""Stop taking new pages with 60 s left: one page plus the checkpoint and the hand-off fit."""
DEFAULT_MAX_HOPS = 48
"""Continuations per segment before the run is declared runaway (48 x ~14 min = 11 h of work
for one segment): the bound that replaces Lambda's recursion stop (set to Allow)."""
DEFAULT_MAX_SEND_ATTEMPTS = 4
"""Attempts per failed SendMessageBatch entry (the first send + 3 retries): transient failures
are retried a bounded number of times."""

# --- Table schemas shared by the component, the dispatcher, the charge consumer and tests -----
BILLING_HASH_KEY = "tenant_id"
BILLING_RANGE_KEY = "employee_id"
RUNS_HASH_KEY = "month"
LEDGER_HASH_KEY = "tenant_id"
LEDGER_RANGE_KEY = "ledger_key"  # "<employee>#<YYYY-MM>"
