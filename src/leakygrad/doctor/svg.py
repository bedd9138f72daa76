"""Small server-side SVG charts for the doctor's HTML report: no JavaScript library, no network.

Each function takes plain numbers and returns an `<svg>` string. Every mark carries a `data-tip` attribute (and
an SVG `<title>`) with its exact value, which the report's few lines of script show on hover.
"""

from __future__ import annotations

import itertools
import math
from html import escape

WIDTH = 760
FONT = 11
CHAR_WIDTH = 6.5  # about the widest average character width of a sans-serif font at 11 px
MAX_TICKS = 50  # (a range too narrow for its magnitude, 4e15 +- 0.5, would otherwise step by nothing forever)
# A perceptually ordered ramp (dark blue -> teal -> yellow), the look of viridis, from 6 anchor colours.
RAMP = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (189, 223, 38), (253, 231, 37)]
SEVERITY_COLORS = {"error": "#c62828", "warning": "#ef8f00"}


def ramp(t: float) -> str:
    """Colour for t in [0, 1] on the ramp."""
    t = min(1.0, max(0.0, t))
    position = t * (len(RAMP) - 1)
    i = min(int(position), len(RAMP) - 2)
    f = position - i
    r, g, b = (round(a + (c - a) * f) for a, c in zip(RAMP[i], RAMP[i + 1]))
    return f"#{r:02x}{g:02x}{b:02x}"


def fmt(x: float, digits: int = 3) -> str:
    """A value for a label or tooltip: `digits` significant digits; powers of ten as 1e-4."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-2:
        mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    return f"{x:.{digits}g}"


def tick_labels(values: list[float]) -> list[str]:
    """The ticks' values as labels, with as many significant digits as it takes for no two to read the same (a
    loss between 8.5512 and 8.5519 is labelled 8.5512, 8.5514, ..., not 8.55 at every tick)."""
    for digits in range(3, 16):
        labels = [fmt(v, digits) for v in values]
        if len(set(labels)) == len(labels):
            return labels
    return labels


class Scale:
    """Maps data values to pixels, linear or log10."""

    def __init__(self, low: float, high: float, start: float, end: float, log: bool = False):
        if log:
            low, high = math.log10(low), math.log10(high)
        if high == low:  # one value: a range around it (relative, so that it is a range for 1e17 too)
            pad = max(abs(low) * 1e-3, 0.5)
            low, high = low - pad, high + pad
        self.low, self.high, self.start, self.end, self.log = low, high, start, end, log

    def __call__(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        return self.start + (v - self.low) / (self.high - self.low) * (self.end - self.start)

    def ticks(self, count: int = 5, whole: bool = False) -> list[float]:
        """Round values to label the axis with: powers of ten on a log axis; else 1, 2 or 5 times a power of ten
        (whole numbers only, at least 1 apart, when `whole`: steps are counted)."""
        if self.log:
            first, last = math.floor(self.low), math.ceil(self.high)
            step = max(1, math.ceil((last - first) / 6))
            powers = [10.0**e for e in range(first, last + 1, step) if self.low - 1e-9 <= e <= self.high + 1e-9]
            return powers or [10.0**self.low, 10.0**self.high]  # less than a decade: label both ends
        span = self.high - self.low
        raw = span / max(count, 1)
        magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
        step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)  # (2.5 would need a 4th digit)
        if whole:
            step = max(1, round(step))
        first = math.ceil(self.low / step) * step
        fitting = math.floor((self.high - first) / step + 1e-9) + 1  # (counted, not stepped to: see MAX_TICKS)
        return [round(first + i * step, 12) for i in range(max(0, min(fitting, MAX_TICKS)))]


def _positive(values):
    return [v for v in values if v is not None and math.isfinite(v) and v > 0]


def _finite(values):
    return [v for v in values if v is not None and math.isfinite(v)]


def _open(height: int, label: str, width: int = WIDTH) -> str:
    return (
        f'<svg class="chart" role="img" aria-label="{escape(label)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg" font-size="{FONT}">'
    )


def _text(x: float, y: float, content: str, anchor: str = "start", fill: str = "#333", size: int | None = None):
    size_attribute = f' font-size="{size}"' if size else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}"{size_attribute}>{escape(content)}</text>'
    )


def _tip(text: str) -> str:
    return f' data-tip="{escape(text)}"'


def _axes(
    x: Scale, y: Scale, left, top, right, bottom, x_label: str, y_label: str, x_ticks=None, x_names=None
) -> list[str]:
    parts = [
        f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" fill="#fafafa" stroke="#ccc"/>'
    ]
    y_ticks = y.ticks()
    for value, text in zip(y_ticks, tick_labels(y_ticks)):
        py = y(value)
        parts.append(f'<line x1="{left}" x2="{right}" y1="{py:.1f}" y2="{py:.1f}" stroke="#e6e6e6"/>')
        parts.append(f'<text x="{left - 4}" y="{py + 4:.1f}" text-anchor="end" fill="#555">{escape(text)}</text>')
    taken = -math.inf  # the right end of the last label written
    for value in x_ticks if x_ticks is not None else x.ticks(6, whole=True):  # (x: steps, counted)
        label = _x_label(value, x_names)
        width = CHAR_WIDTH * len(label)
        # Centred under its tick; one that would run past an edge of the chart (and be cut off) ends at the edge,
        # unless it then runs into the label before it.
        start = min(max(x(value) - width / 2, 2), WIDTH - 2 - width)
        if start < taken + 4:
            continue
        parts.append(_text(start + width / 2, bottom + 14, label, "middle", "#555"))
        taken = start + width
    parts.append(_text((left + right) / 2, bottom + 30, x_label, "middle"))
    parts.append(
        f'<text transform="translate(12,{(top + bottom) / 2:.0f}) rotate(-90)" text-anchor="middle" fill="#333">'
        f"{escape(y_label)}</text>"
    )
    return parts


LABEL_LIMIT = 32  # characters of a name on a chart
MIN_KEPT = 5  # a part of a name cut to fewer characters than this says nothing


def shortened(name: str, limit: int = LABEL_LIMIT) -> str:
    """A name that fits a chart's label (the full name is in the tip). A module path is cut part by part, in the
    middle of each: first the longest of the parts before the last, then the last; numbers are kept whole. So the
    rows of a deep model stay apart: `transformer_encoder_blocks.12.feedforward_expansion` becomes
    `tra…cks.12.feedforward_expansion`, not `transformer_enc…rward_expansion`, which every block's row read.
    A name that would keep too little of its parts is cut in the middle as a whole."""
    if len(name) <= limit:
        return name
    parts = name.split(".")
    order = sorted(range(len(parts) - 1), key=lambda i: -len(parts[i])) + [len(parts) - 1]
    for i in order:
        excess = len(".".join(parts)) - limit
        if excess <= 0:
            break
        if parts[i].isdigit():
            continue
        keep = max(MIN_KEPT, len(parts[i]) - excess - 1)  # characters kept, around the "…"
        if keep < len(parts[i]) - 1:
            parts[i] = _cut_middle(parts[i], keep)
    short = ".".join(parts)
    return short if len(short) <= limit else _cut_middle(name, limit - 1)


def _cut_middle(text: str, keep: int) -> str:
    """`keep` characters of `text`, the start and the end, with "…" between them."""
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head) :]


def _x_label(value, x_names=None) -> str:
    """An x value as its axis names it: a category's name, or a step (a whole number) as one."""
    if x_names:
        return shortened(x_names[int(value)])
    return str(int(value)) if value == int(value) else fmt(value)


def line_chart(
    series: list[dict],
    x_label: str,
    y_label: str,
    log_y: bool = False,
    markers: list[dict] | None = None,
    height: int = 260,
    label: str = "line chart",
    x_names: list[str] | None = None,
    x_max: float | None = None,
    x_min: float | None = None,
    shade_from: tuple[float, str] | None = None,
) -> str:
    """series: [{"name", "x": [...], "y": [...], "low": [...]?, "high": [...]?, "color"}];
    markers: [{"x", "label", "short", "color"}] drawn as vertical lines (those at one x share a label);
    x_names: categorical x (x = 0, 1, ...); x_min, x_max: extend the x axis to these (a loss drawn at the middles
    of its stretches of steps starts after step 0, where findings may begin); shade_from: (x, text), a shaded band
    from x to the right edge (where the series has no values: the loss was not finite, say).
    On a log scale, values of exactly 0 are drawn as a red cross on the bottom edge."""
    xs = [x for s in series for x in s["x"]]
    xs += [bound for bound in (x_min, x_max) if bound is not None and xs]
    ys = [y for s in series for key in ("y", "low", "high") for y in s.get(key) or []]
    ys = _positive(ys) if log_y else _finite(ys)
    if not xs or not ys:
        return f'<p class="empty">No data for {escape(label)}.</p>'
    left, top, right, bottom = 64, 12, WIDTH - 16, height - 40
    if x_names:  # categories: half a slot of room at each end for their names
        x = Scale(-0.5, len(x_names) - 0.5, left, right)
    else:
        x = Scale(min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1, left, right)
    y = Scale(min(ys), max(ys), bottom, top, log=log_y)
    x_ticks = None
    if x_names:
        longest = max(len(shortened(n)) for n in x_names)  # (labels about 6 px a character: no overlaps)
        every = max(1, math.ceil(len(x_names) / 10), math.ceil(len(x_names) * CHAR_WIDTH * longest / (right - left)))
        x_ticks = list(range(0, len(x_names), every))
    parts = [_open(height, label)] + _axes(x, y, left, top, right, bottom, x_label, y_label, x_ticks, x_names)
    for s in series:
        color = s.get("color", "#1565c0")
        if s.get("low") and s.get("high"):
            band = [
                (xv, lo, hi) for xv, lo, hi in zip(s["x"], s["low"], s["high"]) if _ok(lo, log_y) and _ok(hi, log_y)
            ]
            if band:
                upper = " ".join(f"{x(a):.1f},{y(hi):.1f}" for a, _, hi in band)
                lower = " ".join(f"{x(a):.1f},{y(lo):.1f}" for a, lo, _ in reversed(band))
                parts.append(f'<polygon points="{upper} {lower}" fill="{color}" opacity="0.15"/>')
        points = [(xv, yv) for xv, yv in zip(s["x"], s["y"]) if _ok(yv, log_y)]
        if points:
            path = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.6"/>')
            name = s.get("name", "")
            if log_y:
                for a, b in zip(s["x"], s["y"]):
                    if b == 0:
                        px = x(a)
                        parts.append(
                            f'<path d="M{px - 4:.1f},{bottom - 4} l8,8 m0,-8 l-8,8" stroke="#c62828" stroke-width="2"'
                            f"{_tip(f'{name} at {_x_label(a, x_names)}: exactly 0')}/>"
                        )
            if len(points) <= 80:
                for a, b in points:
                    parts.append(
                        f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="2.2" fill="{color}"'
                        f"{_tip(f'{name} at {_x_label(a, x_names)}: {fmt(b)}')}><title>{fmt(b)}</title></circle>"
                    )
    if shade_from is not None and x.low <= shade_from[0] <= x.high:
        sx = x(shade_from[0])
        parts.append(
            f'<rect x="{sx:.1f}" y="{top}" width="{max(right - sx, 1):.1f}" height="{bottom - top}" fill="#c62828" '
            f'opacity="0.08"{_tip(shade_from[1])}><title>{escape(shade_from[1])}</title></rect>'
        )
        parts.append(_text(min(sx + 4, right - 4), bottom - 6, shade_from[1], "end" if sx > right - 200 else "start",
                           fill="#c62828", size=10))  # fmt: skip
    by_x: dict = {}
    for m in markers or []:  # markers at one step share a line and a label
        if x.low <= m["x"] <= x.high:
            by_x.setdefault(m["x"], []).append(m)
    for i, (step, group) in enumerate(sorted(by_x.items())):
        px = x(step)
        color = group[0].get("color", "#c62828")
        label = "; ".join(m["label"] for m in group)
        parts.append(
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{top}" y2="{bottom}" stroke="{color}" stroke-dasharray="4 3" '
            f'stroke-width="1.4"{_tip(label)}><title>{escape(label)}</title></line>'
        )
        short = group[0]["short"] + (f" +{len(group) - 1}" if len(group) > 1 else "")
        near_right = px > right - 7 * len(short)  # a label that would run off the chart goes to the left
        parts.append(
            _text(px - 3 if near_right else px + 3, top + 12 + 12 * (i % 4), short, "end" if near_right else "start",
                  fill=color, size=10)
        )  # fmt: skip
    if len(series) > 1:
        for i, s in enumerate(series):
            color = s.get("color", "#1565c0")
            ly = top + 10 + 14 * i
            parts.append(f'<rect x="{right - 150}" y="{ly - 8}" width="10" height="10" fill="{color}"/>')
            parts.append(f'<text x="{right - 136}" y="{ly + 1}" fill="#333">{escape(s.get("name", ""))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _ok(value, log):
    return value is not None and math.isfinite(value) and (value > 0 or not log)


HEATMAP_MIN_DECADES = 2.0  # the colour scale spans at least this many powers of ten
HEATMAP_MIN_KEY = 60  # px: the colour key's height, however few the rows
NONFINITE_FILL = "#e0007a"  # a NaN or infinite value: no colour of the log scale, and not black (zero)


def heatmap(rows: list[str], columns: list[int], values: list[list[float | None]], label: str, unit: str) -> str:
    """rows x columns grid, colour = log10(value); missing values grey."""
    flat = _positive([v for row in values for v in row])
    if not rows or not columns or all(v is None for row in values for v in row):
        return f'<p class="empty">No data for {escape(label)}.</p>'
    if not flat:  # only zeros, NaN or Inf: drawn in their own colours, on a scale around 1
        flat = [1.0]
    low, high = math.log10(min(flat)), math.log10(max(flat))
    if high - low < HEATMAP_MIN_DECADES:  # a 2% change must not span the whole ramp: it is no fade
        middle = (low + high) / 2
        low, high = middle - HEATMAP_MIN_DECADES / 2, middle + HEATMAP_MIN_DECADES / 2
    name_width = min(220, 12 + 7 * max(len(shortened(r)) for r in rows))
    left, top = name_width, 10
    legend_width = 90
    grid_width = max(2.0 * len(columns), WIDTH - left - legend_width - 10)
    # Each column is as wide as the steps up to the next record, at most four times the closest spacing: older
    # records are thinned out (a few kept, spread over the steps they cover), and the stretches they stand for show
    # wider, while a long gap cannot squeeze the rest of the run into a sliver. The step axis is labelled by the
    # records' own steps.
    gaps = [b - a for a, b in zip(columns, columns[1:])]
    closest = min([g for g in gaps if g > 0], default=1)
    spans = [min(max(g, closest), 4 * closest) for g in gaps] + [closest]
    scale = grid_width / sum(spans)
    starts = [left + before * scale for before in itertools.accumulate(spans, initial=0)][:-1]
    ends = [start + span * scale for start, span in zip(starts, spans)]
    cell_h = 16 if len(rows) <= 30 else max(6, 480 // len(rows))
    label_every = 1 if cell_h >= 9 else math.ceil(9 / cell_h)  # (too thin for every name: every k-th)
    legend_h = min(160, max(HEATMAP_MIN_KEY, cell_h * len(rows)))  # (its two values must not overlap for one row)
    height = max(top + cell_h * len(rows) + 40, top + legend_h + 56)
    parts = [_open(height, label)]
    for r, name in enumerate(rows):
        y = top + r * cell_h
        if r % label_every == 0:
            size = "" if cell_h >= 9 else ' font-size="9"'
            parts.append(
                f'<text x="{left - 4}" y="{y + max(cell_h, 9) * 0.72:.1f}" text-anchor="end" fill="#333"{size}>'
                f"{escape(shortened(name))}</text>"
            )
        for c, step in enumerate(columns):
            value = values[r][c]
            x, cell_w = starts[c], ends[c] - starts[c]
            if value is None or not math.isfinite(value) or value <= 0:
                fill = "#ddd" if value is None else "#000" if value == 0 else NONFINITE_FILL
                state = "not measured" if value is None else "0" if value == 0 else "not finite (NaN or Inf)"
                text = f"{name}, step {step}: {state}"
            else:
                fill = ramp((math.log10(value) - low) / (high - low))
                text = f"{name}, step {step}: {fmt(value)} {unit}"
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{cell_w + 0.3:.1f}" height="{cell_h}" fill="{fill}"{_tip(text)}/>'
            )
    grid_right = left + grid_width
    for c in _spread(list(range(len(columns))), 8):
        parts.append(
            f'<text x="{(starts[c] + ends[c]) / 2:.1f}" y="{top + cell_h * len(rows) + 14}" text-anchor="middle" '
            f'fill="#555">{columns[c]}</text>'
        )
    parts.append(_text((left + grid_right) / 2, height - 6, "training step", "middle"))
    legend_x = grid_right + 18
    for i in range(20):
        t = 1 - i / 19
        parts.append(
            f'<rect x="{legend_x}" y="{top + i * legend_h / 20:.1f}" width="12" height="{legend_h / 20 + 0.5:.1f}" '
            f'fill="{ramp(t)}"/>'
        )
    parts.append(f'<text x="{legend_x + 16}" y="{top + 9}" fill="#333">{fmt(10**high)}</text>')
    parts.append(f'<text x="{legend_x + 16}" y="{top + legend_h}" fill="#333">{fmt(10**low)}</text>')
    parts.append(_text(legend_x, top + legend_h + 14, "log scale", fill="#555"))
    parts.append(f'<rect x="{legend_x}" y="{top + legend_h + 22}" width="10" height="10" fill="#000"/>')
    parts.append(_text(legend_x + 14, top + legend_h + 31, "0", fill="#555"))
    parts.append(f'<rect x="{legend_x + 28}" y="{top + legend_h + 22}" width="10" height="10" fill="#ddd"/>')
    parts.append(_text(legend_x + 42, top + legend_h + 31, "n/a", fill="#555"))
    parts.append(f'<rect x="{legend_x}" y="{top + legend_h + 38}" width="10" height="10" fill="{NONFINITE_FILL}"/>')
    parts.append(_text(legend_x + 14, top + legend_h + 47, "NaN/Inf", fill="#555"))
    parts.append("</svg>")
    return "".join(parts)


def _spread(items: list, count: int) -> list:
    if len(items) <= count:
        return list(items)
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def bar_chart(
    labels: list[str],
    values: list[float | None],
    label: str,
    unit: str = "",
    log: bool = False,
    reference: list[tuple[float, str, str]] | None = None,
    colors: list[str] | None = None,
    low: float | None = None,
    high: float | None = None,
    origin: float | None = None,
    tips: list[str] | None = None,
) -> str:
    """Horizontal bars, one per label; tips: what each bar's tip calls it (its label by default); reference:
    [(value, text, color)] vertical lines; origin: where the bars start (a gain's 1, say: a bar then shows how far
    from no change it is, shrinking to the left, growing to the right). A value of exactly 0 on a log scale is
    written as 0."""
    usable = _positive(values) if log else _finite(values)
    if not labels or not usable:
        return f'<p class="empty">No data for {escape(label)}.</p>'
    refs = [r[0] for r in reference or []]
    domain = usable + [r for r in refs if (r > 0 or not log)]
    lo = low if low is not None else (min(domain) / 2 if log else min(0.0, min(domain)))
    hi = high if high is not None else (max(domain) * 2 if log else max(domain) * 1.05 or 1.0)
    name_width = min(240, 12 + 7 * max(len(shortened(x)) for x in labels))
    left, top, right = name_width, 20, WIDTH - 70
    bar_h = 16
    bottom = top + bar_h * len(labels)
    height = bottom + 36
    x = Scale(lo, hi, left, right, log=log)
    parts = [_open(height, label)]
    ticks = x.ticks(5)
    for tick, text in zip(ticks, tick_labels(ticks)):
        px = x(tick)
        parts.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{top}" y2="{bottom}" stroke="#eee"/>')
        parts.append(f'<text x="{px:.1f}" y="{bottom + 14}" text-anchor="middle" fill="#555">{escape(text)}</text>')
    base = x(lo) if log else x(max(lo, 0.0))
    if origin is not None:
        base = x(min(max(origin, lo), hi))
    for i, (name, value) in enumerate(zip(labels, values)):
        y = top + i * bar_h
        tip = tips[i] if tips else name
        parts.append(
            f'<text x="{left - 4}" y="{y + 12}" text-anchor="end" fill="#333"{_tip(tip)}>'
            f"{escape(shortened(name))}</text>"
        )
        if not _ok(value, log):
            missing = "0" if value == 0 else "n/a"
            parts.append(f'<text x="{left + 4}" y="{y + 12}" fill="#999">{missing}</text>')
            continue
        px = x(min(max(value, lo), hi))
        color = colors[i] if colors else "#1565c0"
        parts.append(
            f'<rect x="{min(base, px):.1f}" y="{y + 2}" width="{max(abs(px - base), 1):.1f}" height="{bar_h - 4}" '
            f'fill="{color}"{_tip(f"{tip}: {fmt(value)} {unit}")}><title>{fmt(value)}</title></rect>'
        )
        parts.append(f'<text x="{max(base, px) + 4:.1f}" y="{y + 12}" fill="#333">{fmt(value)}</text>')
    for value, text, color in reference or []:
        if value <= 0 and log:
            continue
        px = x(value)
        parts.append(
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{top - 4}" y2="{bottom}" stroke="{color}" stroke-dasharray="4 3"/>'
        )
        parts.append(_text(px, top - 8, text, "middle", color))
    parts.append(_text((left + right) / 2, bottom + 30, unit, "middle", "#333"))
    parts.append("</svg>")
    return "".join(parts)
