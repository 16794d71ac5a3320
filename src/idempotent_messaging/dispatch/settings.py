"""Dispatcher settings: one frozen dataclass built from the environment at invocation time.

Built per invocation (not at import) because several functions share one process in the
emulator demo, with the environment switched between invocations.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from . import env


class SettingsError(ValueError):
    """A missing or malformed environment variable (named in the message)."""


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise SettingsError(f"environment variable {name} is required but not set")
    return value


def _int(environ: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingsError(f"environment variable {name}={raw!r}: must be an integer") from exc
    if not low <= value <= high:
        raise SettingsError(f"environment variable {name}={value}: must be in {low}..{high}")
    return value


@dataclass(frozen=True, slots=True)
class Settings:
    item_source: str
    billing_accounts_table: str | None
    manifest_bucket: str | None
    manifest_key_template: str | None
    work_queue_url: str
    control_queue_url: str | None
    runs_table: str
    schedule_timezone: str
    scan_segments: int
    scan_page_size: int
    segment_concurrency: int
    send_concurrency: int
    time_reserve_ms: int
    max_hops: int
    max_send_attempts: int

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        e = os.environ if environ is None else environ
        source = e.get(env.ITEM_SOURCE, env.SOURCE_DYNAMODB).strip() or env.SOURCE_DYNAMODB
        if source not in (env.SOURCE_DYNAMODB, env.SOURCE_S3):
            raise SettingsError(
                f"environment variable {env.ITEM_SOURCE}={source!r}: must be "
                f"{env.SOURCE_DYNAMODB!r} or {env.SOURCE_S3!r}"
            )
        table = _required(e, env.BILLING_ACCOUNTS_TABLE) if source == env.SOURCE_DYNAMODB else None
        bucket = _required(e, env.MANIFEST_BUCKET) if source == env.SOURCE_S3 else None
        template = _required(e, env.MANIFEST_KEY_TEMPLATE) if source == env.SOURCE_S3 else None
        if template is not None and "{month}" not in template:
            raise SettingsError(
                f"environment variable {env.MANIFEST_KEY_TEMPLATE}={template!r}: must contain "
                "'{month}' (one manifest per billing month)"
            )
        return cls(
            item_source=source,
            billing_accounts_table=table,
            manifest_bucket=bucket,
            manifest_key_template=template,
            work_queue_url=_required(e, env.WORK_QUEUE_URL),
            control_queue_url=e.get(env.CONTROL_QUEUE_URL, "").strip() or None,
            runs_table=_required(e, env.RUNS_TABLE),
            schedule_timezone=_required(e, env.SCHEDULE_TIMEZONE),
            scan_segments=_int(e, env.SCAN_SEGMENTS, env.DEFAULT_SCAN_SEGMENTS, 1, 1_000_000),
            scan_page_size=_int(e, env.SCAN_PAGE_SIZE, env.DEFAULT_SCAN_PAGE_SIZE, 1, 100_000),
            segment_concurrency=_int(
                e, env.SEGMENT_CONCURRENCY, env.DEFAULT_SEGMENT_CONCURRENCY, 1, 256
            ),
            send_concurrency=_int(e, env.SEND_CONCURRENCY, env.DEFAULT_SEND_CONCURRENCY, 1, 256),
            time_reserve_ms=_int(e, env.TIME_RESERVE_MS, env.DEFAULT_TIME_RESERVE_MS, 0, 900_000),
            max_hops=_int(e, env.MAX_HOPS, env.DEFAULT_MAX_HOPS, 1, 10_000),
            max_send_attempts=_int(e, env.MAX_SEND_ATTEMPTS, env.DEFAULT_MAX_SEND_ATTEMPTS, 1, 20),
        )
