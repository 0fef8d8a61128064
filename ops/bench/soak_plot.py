"""The soak's plot, as plain SVG from its JSON lines (no plotting library needed):

    python ops/bench/soak_plot.py [docs/perf/soak.jsonl] [docs/perf/soak.svg]

Top: ingest cost, CPU milliseconds of all the engine's processes per observation stored, per
window of `--every` observations. Bottom: resident memory, all processes and by process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
W, H, PAD_L, PAD_R, PAD_T, PAD_B = 760, 250, 70, 190, 30, 30
COLORS = ["#222", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b"]


def series(points: list[dict[str, Any]], total: str, by: str) -> list[tuple[str, list[float]]]:
    """All processes (`total`), then each process label of `by` (largest at the end first)."""
    out = [("all processes", [float(p[total]) for p in points])]
    last = points[-1].get(by) or {}
    for label in sorted(last, key=lambda k: -last[k]):
        out.append((label, [float((p.get(by) or {}).get(label, 0.0)) for p in points]))
    return out


def _nice(hi: float) -> float:
    """A round upper bound for an axis."""
    for mag in range(-3, 7):
        for step in (1, 2, 2.5, 5):
            top = step * 10.0**mag
            if top >= hi:
                return top
    return hi


def _panel(top: float, title: str, xs: list[float], series: list[tuple[str, list[float]]],
           unit: str, fmt: str, colors: dict[str, str]) -> list[str]:  # fmt: skip
    x0, x1 = min(xs), max(xs)
    hi = _nice(max((v for _, s in series for v in s), default=1.0) * 1.05)

    def sx(x: float) -> float:
        return PAD_L + (W - PAD_L - PAD_R) * ((x - x0) / (x1 - x0) if x1 > x0 else 0.5)

    def sy(v: float) -> float:
        return top + PAD_T + (H - PAD_T - PAD_B) * (1 - v / hi)

    out = [f'<text x="{PAD_L}" y="{top + 18}" font-size="14" font-weight="bold">{title}</text>']
    for k in range(5):
        v = hi * k / 4
        y = sy(v)
        out.append(f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{W - PAD_R}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
                   f"{v:{fmt}} {unit}</text>")  # fmt: skip
    for k, (name, values) in enumerate(series):
        color = colors.get(name, "#999")
        pts = " ".join(f"{sx(x):.1f},{sy(v):.1f}" for x, v in zip(xs, values, strict=True))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{pts}"/>')
        out.append(f'<text x="{W - PAD_R + 10}" y="{top + PAD_T + 12 + 15 * k}" font-size="11" '
                   f'fill="{color}">{name}</text>')  # fmt: skip
    return out


def plot(points: list[dict[str, Any]]) -> str:
    xs = [float(p["observations"]) for p in points]
    cost = series(points, "cpu_ms_per_obs", "cpu_ms_per_obs_by_process")
    rss = series(points, "rss_mb", "rss_by_process")
    # One color per process in both panels, in the memory panel's order.
    names = [n for n, _ in rss] + [n for n, _ in cost if n not in dict(rss)]
    colors = {n: COLORS[k % len(COLORS)] for k, n in enumerate(names)}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{2 * H + 50}" '
        'font-family="sans-serif">',
        '<rect width="100%" height="100%" fill="white"/>',
        *_panel(0, "Ingest cost: CPU ms per observation", xs, cost, "ms", ".2f", colors),
        *_panel(H, "Resident memory", xs, rss, "MB", ".0f", colors),
    ]
    x0, x1 = min(xs), max(xs)
    for k in range(6):
        x = x0 + (x1 - x0) * k / 5
        px = PAD_L + (W - PAD_L - PAD_R) * k / 5
        label = f"{x / 1e6:.1f}M" if x1 >= 1e6 else f"{x / 1e3:.0f}k"
        parts.append(f'<text x="{px:.1f}" y="{2 * H + 14}" font-size="11" '
                     f'text-anchor="middle">{label}</text>')  # fmt: skip
    parts.append(f'<text x="{PAD_L + (W - PAD_L - PAD_R) / 2:.1f}" y="{2 * H + 36}" '
                 'font-size="12" text-anchor="middle">observations stored</text>')  # fmt: skip
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else ROOT / "docs" / "perf" / "soak.jsonl"
    dst = Path(argv[1]) if len(argv) > 1 else src.with_suffix(".svg")
    points = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    if not points:
        print(f"error: {src} holds no points", file=sys.stderr)
        return 1
    dst.write_text(plot(points))
    print(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
