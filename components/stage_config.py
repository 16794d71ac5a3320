"""Typed stage config: what differs between dev and prod, read once from Pulumi config.

Defaults here match the ``config:`` schema in Pulumi.yaml (tests/infra prove it), so a stack
file only lists what its stage changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

DEFAULT_MONTHLY_CHARGE_CRON = "cron(0 3 1 * ? *)"
DEFAULT_MONTHLY_CHARGE_TIMEZONE = "Asia/Tokyo"


@dataclass(frozen=True, kw_only=True)
class StageConfig:
    """Stage settings; field ``x_y`` is config key ``xY`` of the idempotent-messaging project."""

    orders_function_timeout_seconds: int = 30
    orders_memory_size_mb: int = 256
    orders_batch_size: int = 10
    orders_max_batching_window_seconds: int = 0
    orders_max_receive_count: int = 5
    orders_reserved_concurrency: int | None = None
    orders_max_concurrency: int | None = None
    orders_age_alarm_threshold_seconds: int | None = None
    log_level: str = "INFO"
    log_retention_days: int = 30
    alarm_emails: tuple[str, ...] = ()
    tracing: bool = False
    monthly_charge_cron: str = DEFAULT_MONTHLY_CHARGE_CRON
    monthly_charge_timezone: str = DEFAULT_MONTHLY_CHARGE_TIMEZONE

    @staticmethod
    def config_key(field_name: str) -> str:
        """``orders_batch_size`` -> ``ordersBatchSize``."""
        head, *rest = field_name.split("_")
        return head + "".join(part.capitalize() for part in rest)

    @classmethod
    def from_pulumi_config(cls, config: pulumi.Config) -> StageConfig:
        """Read every field from config; absent keys keep the defaults above."""
        defaults = cls()
        values: dict[str, object] = {}
        for name, default in defaults.__dict__.items():
            key = cls.config_key(name)
            if isinstance(default, bool):
                value: object = config.get_bool(key)
            elif name == "alarm_emails":
                raw = config.get_object(key)
                if raw is not None and (
                    not isinstance(raw, list) or not all(isinstance(e, str) for e in raw)
                ):
                    raise ValueError(f"config {key}={raw!r}: must be a list of email addresses")
                value = tuple(raw) if raw is not None else None
            elif isinstance(default, str):
                value = config.get(key)
            else:  # int or optional int
                value = config.get_int(key)
            if value is not None:
                values[name] = value
        return cls(**values)  # type: ignore[arg-type]
