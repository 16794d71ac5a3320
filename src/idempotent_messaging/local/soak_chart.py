"""The picture of a soak run: three panels over one time axis, as an SVG (hand-written, no
plotting library, like bench/chart.py).

1. invocations in flight (and the mapping's maximum concurrency, dashed);
2. faults fired so far, one line per kind;
3. messages in the source queue (visible, in flight) and in the DLQ.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
INK, GREY, GRID = "#1b1b1b", "#555555", "#dddddd"
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442")
"""Okabe-Ito: told apart with the common colour-vision deficiencies."""
WIDTH = 900
LEFT, RIGHT = 70, WIDTH - 200
PANEL_HEIGHT = 150
PANEL_GAP = 48
TOP = 58


@dataclass(frozen=True)
class Sample:
    """The run at one instant."""

    t: float
    """Seconds since the run started."""
    in_flight: int
    """Invocations running."""
    faults: dict[str, int]
    """Faults fired so far, by kind."""
    dlq: int
    queue_visible: int
    queue_in_flight: int


def _f(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _t(text: str) -> str:
    return escape(text, quote=False)


def _nice_top(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 2.5, 5, 10):
        if value <= factor * magnitude:
            return float(factor * magnitude)
    return float(10 * magnitude)


def _panel(
    out: list[str],
    top: float,
    title: str,
    samples: Sequence[Sample],
    series: list[tuple[str, Callable[[Sample], float]]],
    duration: float,
    ceiling: float | None = None,
) -> None:
    peak = max([0.0, *(get(s) for s in samples for _, get in series), ceiling or 0.0])
    y_top = _nice_top(peak)
    bottom = top + PANEL_HEIGHT

    def x(t: float) -> float:
        return LEFT + (RIGHT - LEFT) * (t / duration if duration else 0)

    def y(v: float) -> float:
        return bottom - PANEL_HEIGHT * (v / y_top)

    out.append(f'<text x="{LEFT}" y="{_f(top - 10)}" font-weight="600">{_t(title)}</text>')
    steps = next((n for n in (4, 5, 3, 2) if (y_top / n).is_integer()), 4)
    for i in range(steps + 1):
        value = y_top * i / steps
        out.append(
            f'<line x1="{LEFT}" x2="{RIGHT}" y1="{_f(y(value))}" y2="{_f(y(value))}" '
            f'stroke="{GRID}"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{_f(y(value) + 4)}" text-anchor="end" fill="{GREY}" '
            f'font-size="11">{_f(value)}</text>'
        )
    if ceiling is not None:
        out.append(
            f'<line x1="{LEFT}" x2="{RIGHT}" y1="{_f(y(ceiling))}" y2="{_f(y(ceiling))}" '
            f'stroke="{INK}" stroke-dasharray="5 4"/>'
        )
        out.append(
            f'<text x="{RIGHT + 8}" y="{_f(y(ceiling) + 4)}" font-size="11">'
            f"maximum concurrency {_f(ceiling)}</text>"
        )
    for index, (label, get) in enumerate(series):
        colour = COLOURS[index % len(COLOURS)]
        points = " ".join(f"{_f(x(s.t))},{_f(y(get(s)))}" for s in samples)
        if points:
            out.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{points}"/>'
            )
        legend_y = top + 14 + 16 * index
        out.append(
            f'<rect x="{RIGHT + 8}" y="{_f(legend_y - 9)}" width="10" height="10" fill="{colour}"/>'
        )
        final = get(samples[-1]) if samples else 0
        out.append(
            f'<text x="{RIGHT + 22}" y="{_f(legend_y)}" font-size="11">{_t(label)} '
            f"({_f(final)})</text>"
        )
    out.append(
        f'<line x1="{LEFT}" x2="{RIGHT}" y1="{_f(bottom)}" y2="{_f(bottom)}" stroke="{INK}"/>'
    )


def _fired(kind: str) -> Callable[[Sample], float]:
    return lambda sample: float(sample.faults.get(kind, 0))


def svg(samples: Sequence[Sample], *, title: str, max_concurrency: int) -> str:
    """The picture of a run sampled as ``samples``."""
    duration = samples[-1].t if samples else 0.0
    kinds = sorted({k for s in samples for k in s.faults})
    height = TOP + 3 * PANEL_HEIGHT + 2 * PANEL_GAP + 50
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="{FONT}" font-size="12" fill="{INK}">',
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="24" font-size="15" font-weight="600">{_t(title)}</text>',
    ]
    top = TOP
    _panel(
        out,
        top,
        "invocations in flight",
        samples,
        [("in flight", lambda s: float(s.in_flight))],
        duration,
        ceiling=float(max_concurrency),
    )
    top += PANEL_HEIGHT + PANEL_GAP
    _panel(
        out,
        top,
        "faults fired so far, by kind",
        samples,
        [(kind, _fired(kind)) for kind in kinds],
        duration,
    )
    top += PANEL_HEIGHT + PANEL_GAP
    _panel(
        out,
        top,
        "messages in the queues",
        samples,
        [
            ("source visible", lambda s: float(s.queue_visible)),
            ("source in flight", lambda s: float(s.queue_in_flight)),
            ("DLQ", lambda s: float(s.dlq)),
        ],
        duration,
    )
    axis = top + PANEL_HEIGHT
    for i in range(6):
        t = duration * i / 5
        xpos = LEFT + (RIGHT - LEFT) * i / 5
        out.append(
            f'<text x="{_f(xpos)}" y="{_f(axis + 16)}" text-anchor="middle" fill="{GREY}" '
            f'font-size="11">{t:.0f} s</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"
