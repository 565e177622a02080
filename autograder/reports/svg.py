"""Small inline SVG charts written as plain strings: the feedback's heatmaps and the class
report's bar charts.

matplotlib took about a second per student page; these take a few milliseconds per page and
need no import. Every piece of text goes through ``html.escape`` here, so callers pass plain text.
Nothing references anything: no ids, no ``url(...)``, no fonts (text takes the page's font),
no scripts. The same input gives the same bytes.

Coordinates are pixels. A ``Block`` is a finished piece of drawing with its size; ``grid``
lays blocks out in rows and columns and ``document`` wraps the result in an ``<svg>``.
"""

import functools
import html
import math
from dataclasses import dataclass

# ColorBrewer ramps (as in matplotlib's colormaps of the same names), 9 even stops each.
PALETTES = {
    "Blues": ("#f7fbff", "#deebf7", "#c6dbef", "#9dcae1", "#6aaed6", "#4191c6", "#2070b4",
              "#08509b", "#08306b"),
    "Reds": ("#fff5f0", "#fee0d2", "#fcbba1", "#fc9272", "#fb694a", "#ee3a2c", "#ca181d",
             "#a30f15", "#67000d"),
    "Oranges": ("#fff5eb", "#fee6ce", "#fdd0a2", "#fdae6a", "#fd8c3b", "#f16813", "#d84801",
                "#a53603", "#7f2704"),
    "RdBu_r": ("#053061", "#2a71b2", "#6bacd1", "#c2ddec", "#f7f6f6", "#fbccb4", "#e48066",
               "#ba2832", "#67001f"),
}
INK, MUTED, GRID, RED, HATCH = "#1b1f24", "#57606a", "#d0d7de", "#cf222e", "#8c959f"


@dataclass(frozen=True)
class Block:
    """Drawn markup in its own coordinates, from (0, 0) to (width, height)."""
    width: float
    height: float
    body: str


# -- primitives ------------------------------------------------------------------------------------
def num(value):
    """A coordinate as short text: at most two decimals, no trailing zeros."""
    if value == int(value):
        return str(int(value))
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def esc(value):
    return html.escape(str(value), quote=True)


def finite(value):
    return value is not None and math.isfinite(value)


def colour(palette, fraction):
    """The colour at ``fraction`` (0..1, clipped) of a palette, as #rrggbb."""
    return _colour(palette, round(min(1.0, max(0.0, fraction)) * 1024))


@functools.lru_cache(maxsize=4096)
def _colour(palette, step):
    stops = PALETTES[palette]
    fraction = step / 1024 * (len(stops) - 1)
    low = min(int(fraction), len(stops) - 2)
    weight = fraction - low
    a, b = stops[low], stops[low + 1]
    return "#" + "".join(
        f"{round(int(a[i:i + 2], 16) * (1 - weight) + int(b[i:i + 2], 16) * weight):02x}"
        for i in (1, 3, 5))


def _class(cls):
    return f' class="{cls}"' if cls else ""


def rect(x, y, width, height, fill, cls=None, stroke=None, stroke_width=1):
    outline = f' stroke="{stroke}" stroke-width="{num(stroke_width)}"' if stroke else ""
    return (f'<rect{_class(cls)} x="{num(x)}" y="{num(y)}" width="{num(width)}" '
            f'height="{num(height)}" fill="{fill}"{outline}/>')


def text(x, y, value, size=9, anchor="middle", fill=INK, rotate=False, bold=False, cls=None):
    """Escaped text whose anchor point is (x, y), centred vertically on y."""
    turn = f' transform="rotate(-90 {num(x)} {num(y)})"' if rotate else ""
    weight = ' font-weight="bold"' if bold else ""
    return (f'<text{_class(cls)} x="{num(x)}" y="{num(y)}" font-size="{num(size)}" '
            f'text-anchor="{anchor}" dominant-baseline="central" fill="{fill}"{weight}{turn}>'
            f"{esc(value)}</text>")


def line(x1, y1, x2, y2, stroke=INK, width=1):
    return (f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
            f'stroke="{stroke}" stroke-width="{num(width)}"/>')


def place(block, x, y):
    return f'<g transform="translate({num(x)} {num(y)})">{block.body}</g>'


def grid(rows, gap_x=16, gap_y=14):
    """Blocks in rows and columns (None leaves a place empty). Each block is aligned to the
    right and bottom of its place, so same-sized plots line up whatever their labels."""
    columns = max(len(row) for row in rows)
    widths = [max((row[c].width for row in rows if c < len(row) and row[c]), default=0)
              for c in range(columns)]
    heights = [max((b.height for b in row if b), default=0) for row in rows]
    body, y = [], 0.0
    for row, height in zip(rows, heights):
        x = 0.0
        for block, width in zip(row, widths):
            if block:
                body.append(place(block, x + width - block.width, y + height - block.height))
            x += width + gap_x
        y += height + gap_y
    return Block(sum(widths) + gap_x * (columns - 1), sum(heights) + gap_y * (len(rows) - 1),
                 "".join(body))


def document(block, label, pad=4):
    """An inline <svg> element (no XML prolog) holding ``block``; ``label`` names it for
    screen readers."""
    width, height = block.width + 2 * pad, block.height + 2 * pad
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(width)}" height="{num(height)}" '
            f'viewBox="0 0 {num(width)} {num(height)}" role="img" aria-label="{esc(label)}">'
            f"<title>{esc(label)}</title>{place(block, pad, pad)}</svg>")


# -- heatmap -----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _hatch_moves(size, step=5):
    """The //// lines of a ``size`` square as relative path commands from its top-left
    corner (one string per size: a heatmap repeats it for every blocked cell)."""
    moves, at, c = [], (0, 0), step
    while c < 2 * size:
        start, end = (max(0, c - size), min(c, size)), (min(c, size), max(0, c - size))
        moves.append(f"m{num(start[0] - at[0])} {num(start[1] - at[1])}"
                     f"l{num(end[0] - start[0])} {num(end[1] - start[1])}")
        at, c = end, c + step
    return "".join(moves)


def heatmap(values, vmin, vmax, palette, *, cell=32, title="", x_label="", y_label=(),
            blocked=None, marked=None, annotate=True, digits=2):
    """A matrix (rows of numbers, None for NaN or inf) as coloured cells, row 0 at the top,
    with the column index below and the row index at the left.

    ``blocked`` cells (same shape, truthy) are hatched grey; ``marked`` ones framed in red.
    ``annotate`` writes each value in its cell. ``y_label`` is a sequence of lines. Each cell
    is one ``<rect class="cell">``, each frame a ``<rect class="leak">``, each hatching a
    ``<path class="blocked">``."""
    rows, cols = len(values), len(values[0]) if values else 0
    y_label = (y_label,) if isinstance(y_label, str) else tuple(y_label)
    left, top, half = 18 + 15 * len(y_label), 20 if title else 2, cell / 2
    span = (vmax - vmin) or 1.0
    inset = round(0.08 * cell, 1)
    cells, hatching, frames, labels = [], [], [], []
    for r, row in enumerate(values):
        y = top + r * cell
        for c, value in enumerate(row):
            x = left + c * cell
            ok = finite(value)
            share = (value - vmin) / span if ok else 0.0
            cells.append(f'<rect class="cell" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                         f'fill="{colour(palette, share) if ok else "#ffffff"}"/>')
            if blocked is not None and blocked[r][c]:
                hatching.append(f"M{x} {y}{_hatch_moves(cell)}")
            if marked is not None and marked[r][c]:
                frames.append(f'<rect class="leak" x="{num(x + inset)}" y="{num(y + inset)}" '
                              f'width="{num(cell - 2 * inset)}" height="{num(cell - 2 * inset)}"/>')
            if not ok:
                labels.append(f'<text x="{num(x + half)}" y="{num(y + half)}" fill="{RED}" '
                              f'font-weight="bold">NaN</text>')
            elif annotate:
                labels.append(f'<text x="{num(x + half)}" y="{num(y + half)}" '
                              f'fill="{"#ffffff" if share > 0.6 else INK}">'
                              f"{esc(f'{value:.{digits}f}')}</text>")
    out = [f'<g stroke="#ffffff" stroke-width="1">{"".join(cells)}</g>']
    if hatching:  # one path per cell: a test (and a reader of the markup) can count them
        out.append(f'<g stroke="{HATCH}" stroke-width="0.7" fill="none">'
                   + "".join(f'<path class="blocked" d="{d}"/>' for d in hatching) + "</g>")
    if frames:
        out.append(f'<g stroke="{RED}" stroke-width="2" fill="none">{"".join(frames)}</g>')
    if labels:
        out.append(f'<g font-size="{num(min(10.5, round(0.3 * cell, 1)))}" text-anchor="middle" '
                   'dominant-baseline="central">'
                   f'{"".join(labels)}</g>')
    bottom = top + rows * cell
    out += [text(left + (c + 0.5) * cell, bottom + 8, c, 10, fill=MUTED) for c in range(cols)]
    out += [text(left - 5, top + (r + 0.5) * cell, r, 10, anchor="end", fill=MUTED)
            for r in range(rows)]
    middle_x, middle_y = left + cols * cell / 2, top + rows * cell / 2
    if title:
        out.append(text(middle_x, 9, title, 11, bold=True))
    height = bottom + 16
    if x_label:
        out.append(text(middle_x, bottom + 25, x_label, 11))
        height = bottom + 33
    out += [text(7 + 15 * i, middle_y, words, 11, rotate=True) for i, words in enumerate(y_label)]
    return Block(left + cols * cell + 2, height, f'<g class="heatmap">{"".join(out)}</g>')


# -- axes --------------------------------------------------------------------------------------------
def nice_step(top, ticks=5):
    """A round step (1, 2 or 5 times a power of ten, at least 1) giving about ``ticks`` ticks
    from 0 to ``top``: counts of students are whole numbers."""
    raw = max(1.0, top / ticks)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


# -- line chart ----------------------------------------------------------------------------------
BLUE = "#0969da"


def line_chart(series, *, width=320, height=150, title="", x_label="", y_label=""):
    """Curves over their index (1, 2, ...): ``series`` is [(name, values, colour)], None values
    skipped; the y axis from 0 to the largest value, a legend under the plot."""
    values = [v for _, vs, _ in series for v in vs if finite(v)]
    top = max(values, default=1.0) or 1.0
    count = max((len(vs) for _, vs, _ in series), default=1)
    left, plot_top, plot_w, plot_h = 34, 16 if title else 4, width - 44, height - 40
    body = [text(left + plot_w / 2, 10, title, size=10, bold=True)] if title else []
    body.append(rect(left, plot_top, plot_w, plot_h, "none", stroke=GRID))
    for fraction in (0.0, 0.5, 1.0):
        y = plot_top + plot_h * (1 - fraction)
        body.append(text(left - 3, y + 3, f"{top * fraction:.2g}", size=8, anchor="end", fill=MUTED))
    body.append(text(left, plot_top + plot_h + 11, "1", size=8, fill=MUTED))
    body.append(text(left + plot_w, plot_top + plot_h + 11, str(count), size=8, fill=MUTED))
    body.append(text(left + plot_w / 2, plot_top + plot_h + 12, x_label, size=8, fill=MUTED))
    for index, (name, vs, stroke) in enumerate(series):
        points = [f"{num(left + plot_w * i / max(count - 1, 1))},{num(plot_top + plot_h * (1 - v / top))}"
                  for i, v in enumerate(vs) if finite(v)]
        if points:
            body.append(f'<polyline fill="none" stroke="{stroke}" stroke-width="1.5" points="{" ".join(points)}"/>')
        x = left + index * 110
        body.append(line(x, height - 6, x + 14, height - 6, stroke=stroke, width=2))
        body.append(text(x + 18, height - 3, name, size=9, anchor="start"))
    return Block(width, height, "".join(body))
