"""Lambda runtime rules: a runtime past AWS's "block function create" date fails `up`; one past
its deprecation date only runs unpatched.

The dates are AWS's, from the Lambda Developer Guide, "Lambda runtimes" (supported and
deprecated runtime tables, https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html),
as published in 2025-2026. AWS moves these dates; update this one table when it does. A
`None` block-create date means the table here does not know it: only the advisory applies.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, NamedTuple

from ._base import ADVISORY, MANDATORY, Boundary, resource_rule
from .graph import FUNCTION
from .values import is_unknown


class RuntimeDates(NamedTuple):
    deprecation: dt.date
    block_create: dt.date | None


def _d(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


# identifier -> (deprecation, block function create)
# AWS has postponed the block dates of the Amazon Linux 2 runtimes deprecated in 2024-2025
# (nodejs16.x, python3.8, dotnet6, ...) more than once: where the current block date is not
# certain it is None, so a correct stack is never refused for a create AWS still accepts.
RUNTIME_DATES: dict[str, RuntimeDates] = {
    "nodejs": RuntimeDates(_d("2016-10-31"), _d("2016-10-31")),
    "nodejs4.3": RuntimeDates(_d("2020-03-05"), _d("2020-03-05")),
    "nodejs4.3-edge": RuntimeDates(_d("2020-03-05"), _d("2020-03-05")),
    "nodejs6.10": RuntimeDates(_d("2019-08-12"), _d("2019-08-12")),
    "nodejs8.10": RuntimeDates(_d("2020-03-06"), _d("2020-03-06")),
    "nodejs10.x": RuntimeDates(_d("2021-07-30"), _d("2021-07-30")),
    "nodejs12.x": RuntimeDates(_d("2023-03-31"), _d("2023-03-31")),
    "nodejs14.x": RuntimeDates(_d("2023-12-04"), _d("2024-01-09")),
    "nodejs16.x": RuntimeDates(_d("2024-06-12"), None),
    "nodejs18.x": RuntimeDates(_d("2025-09-01"), None),
    "nodejs20.x": RuntimeDates(_d("2026-04-30"), None),
    "python2.7": RuntimeDates(_d("2021-07-15"), _d("2021-07-15")),
    "python3.6": RuntimeDates(_d("2022-07-18"), _d("2022-07-18")),
    "python3.7": RuntimeDates(_d("2023-12-04"), _d("2024-01-09")),
    "python3.8": RuntimeDates(_d("2024-10-14"), None),
    "python3.9": RuntimeDates(_d("2025-12-15"), _d("2027-02-01")),
    "python3.10": RuntimeDates(_d("2026-06-30"), None),
    "python3.11": RuntimeDates(_d("2026-06-30"), None),
    "ruby2.5": RuntimeDates(_d("2021-07-30"), _d("2021-07-30")),
    "ruby2.7": RuntimeDates(_d("2023-12-07"), _d("2024-01-09")),
    "ruby3.2": RuntimeDates(_d("2026-03-31"), None),
    "java8": RuntimeDates(_d("2024-01-08"), _d("2024-02-08")),
    "java8.al2": RuntimeDates(_d("2026-06-30"), None),
    "java11": RuntimeDates(_d("2026-06-30"), None),
    "java17": RuntimeDates(_d("2026-06-30"), None),
    "go1.x": RuntimeDates(_d("2024-01-08"), _d("2024-02-08")),
    "provided": RuntimeDates(_d("2024-01-08"), _d("2024-02-08")),
    "provided.al2": RuntimeDates(_d("2026-06-30"), None),
    "dotnetcore1.0": RuntimeDates(_d("2019-07-27"), _d("2019-07-27")),
    "dotnetcore2.0": RuntimeDates(_d("2019-05-30"), _d("2019-05-30")),
    "dotnetcore2.1": RuntimeDates(_d("2022-01-05"), _d("2022-01-05")),
    "dotnetcore3.1": RuntimeDates(_d("2023-04-03"), _d("2023-04-03")),
    "dotnet5.0": RuntimeDates(_d("2022-05-10"), _d("2022-05-10")),
    "dotnet6": RuntimeDates(_d("2024-12-20"), None),
    "dotnet7": RuntimeDates(_d("2024-05-14"), _d("2024-05-14")),
    "dotnet8": RuntimeDates(_d("2026-11-10"), None),
}

DATE_SCHEMA = {
    "asOf": {
        "type": "string",
        "default": "",
        "description": "ISO date to judge the runtimes at (default: today, UTC)",
    }
}


def _as_of(config: Mapping[str, Any]) -> dt.date:
    text = str(config.get("asOf") or "")
    return dt.date.fromisoformat(text) if text else dt.datetime.now(dt.UTC).date()


def _runtime(resource_type: str, props: Mapping[str, Any]) -> str | None:
    runtime = props.get("runtime") if resource_type == FUNCTION else None
    return runtime if isinstance(runtime, str) and not is_unknown(runtime) else None


@resource_rule(
    "lambda-runtime-not-blocked",
    "Lambda functions use no runtime past AWS's 'block function create' date (the deployment "
    "would fail).",
    MANDATORY,
    "Move the function to a supported runtime (e.g. python3.13, nodejs22.x).",
    DATE_SCHEMA,
    enforces=(
        "Lambda refuses to create a function with a runtime past its 'block function "
        "create' date (Lambda Developer Guide, 'Lambda runtimes', deprecated runtimes "
        "table)."
    ),
    defaults="No runtime: a container-image function, which has no managed runtime.",
    boundaries=(
        Boundary(
            ("Container-image functions (no runtime) and runtimes the dated table does not list."),
            "test_runtime_rules_skip_images_and_runtimes_the_table_does_not_list",
        ),
    ),
)
def runtime_not_blocked(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    runtime = _runtime(resource_type, props)
    dates = RUNTIME_DATES.get(runtime or "")
    today = _as_of(config)
    if dates is None or dates.block_create is None or today < dates.block_create:
        return []
    return [
        f"function '{name}' uses runtime {runtime}, which AWS blocks for function creation since "
        f"{dates.block_create.isoformat()} (deprecated {dates.deprecation.isoformat()}): "
        f"creating the function fails. Fix: move to a supported runtime."
    ]


@resource_rule(
    "lambda-runtime-not-deprecated",
    "Lambda functions use no deprecated runtime (no more security patches).",
    ADVISORY,
    "Move the function to a supported runtime before AWS blocks creates and updates.",
    DATE_SCHEMA,
    enforces=(
        "A deprecated runtime gets no security patches (Lambda Developer Guide, 'Lambda "
        "runtimes', runtime deprecation policy)."
    ),
    boundaries=(
        Boundary(
            ("Container-image functions (no runtime) and runtimes the dated table does not list."),
            "test_runtime_rules_skip_images_and_runtimes_the_table_does_not_list",
        ),
    ),
)
def runtime_not_deprecated(
    resource_type: str, props: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> list[str]:
    runtime = _runtime(resource_type, props)
    dates = RUNTIME_DATES.get(runtime or "")
    today = _as_of(config)
    if dates is None or today < dates.deprecation:
        return []
    if dates.block_create is not None and today >= dates.block_create:
        return []  # the mandatory rule reports it
    blocked = (
        f"; AWS blocks creating functions with it from {dates.block_create.isoformat()}"
        if dates.block_create is not None
        else ""
    )
    return [
        f"function '{name}' uses runtime {runtime}, deprecated since "
        f"{dates.deprecation.isoformat()}: it no longer gets security patches{blocked}. Fix: "
        f"move to a supported runtime."
    ]
