"""A student's feedback as one self-contained HTML page (``OUT/<student>/feedback.html``), and
the HTML that nbgrader's hidden cells show: the content of ``feedback.md`` plus the pictures of
``records.Picture`` drawn as inline SVG by matplotlib.

Everything comes from the record. Text a student controls (their name, names in their code,
their exceptions' messages) is cleaned of control characters (``texts.clean``) and then
HTML-escaped; only our own markup is HTML, and code spans (`like this`) become ``<code>``
after escaping. Pictures hold numbers only; their labels are ours. The page loads nothing:
no script, no font, no stylesheet from elsewhere, and a Content-Security-Policy that forbids
any request, so it reads the same offline and in a mail client's sandbox.
"""

import html
import io
import re

from autograder.records import to_fix
from autograder.report import WORDS, _by_target, _explained, _skipped, fmt
from autograder.texts import clean

WORDS_HTML = {
    "id": {
        "you": "Kode Anda", "correct": "Yang benar", "head": "head", "query": "kueri", "key": "kunci",
        "position": "posisi", "feature": "fitur", "difference": "|selisih|",
        "changed_from": "token diubah mulai posisi t", "output_position": "posisi keluaran",
        "pictures": "Gambar", "same_input": "pada masukan yang sama",
        "attention_caption": (
            "Baris = kueri, kolom = kunci; tiap baris bobot seharusnya berjumlah 1. Sel berarsir "
            "abu-abu diblokir oleh mask (True = diblokir) dan harus berbobot tepat 0; sel berbingkai "
            "merah adalah posisi diblokir yang tetap mendapat bobot (atau NaN)."),
        "attention_same": "Baris bawah dihitung oleh solusi acuan dengan bobot parameter yang sama.",
        "attention_other": ("Parameter Anda tidak dapat disalin (nama atau bentuknya lain), jadi "
                            "baris bawah memakai bobot parameter lain: bandingkan polanya saja."),
        "pe_caption": ("Baris = posisi, kolom = fitur: kolom genap sinus, kolom ganjil kosinus, "
                       "dengan frekuensi yang makin kecil ke kanan. Panel kanan: selisih mutlak."),
        "causality_caption": (
            "Sel kiri-bawah dari diagonal (posisi keluaran < t) harus 0: keluaran tidak boleh "
            "berubah karena token sesudahnya. Sel berbingkai merah berubah juga: token melihat masa "
            "depan."),
        "leaks": "{n} posisi diblokir mendapat bobot.", "no_leaks": "Tidak ada posisi diblokir yang mendapat bobot.",
        "largest": "Selisih terbesar dengan yang benar: {value}.",
        "causal_leaks": "{n} sel melihat masa depan.", "causal_ok": "Tidak ada keluaran yang melihat masa depan.",
        "nan": "Ada NaN atau inf.",
    },
    "en": {
        "you": "Your code", "correct": "Correct", "head": "head", "query": "query", "key": "key",
        "position": "position", "feature": "feature", "difference": "|difference|",
        "changed_from": "tokens changed from position t", "output_position": "output position",
        "pictures": "Pictures", "same_input": "on the same input",
        "attention_caption": (
            "Rows = queries, columns = keys; each row of weights should sum to 1. Grey hatched "
            "cells are blocked by the mask (True = blocked) and must get weight exactly 0; cells "
            "framed in red are blocked positions that still got weight (or NaN)."),
        "attention_same": "The bottom row is the reference solution's, with the same parameters.",
        "attention_other": ("Your parameters could not be copied (other names or shapes), so the "
                            "bottom row uses other parameters: compare the pattern only."),
        "pe_caption": ("Rows = positions, columns = features: even columns sine, odd columns cosine, "
                       "with frequencies falling to the right. Right panel: absolute difference."),
        "causality_caption": (
            "The cells left of the diagonal (output position < t) must be 0: an output may not "
            "change because of later tokens. Cells framed in red changed anyway: tokens see the "
            "future."),
        "leaks": "{n} blocked positions got weight.", "no_leaks": "No blocked position got weight.",
        "largest": "Largest difference from correct: {value}.",
        "causal_leaks": "{n} cells see the future.", "causal_ok": "No output sees the future.",
        "nan": "There are NaN or inf values.",
    },
}
BLOCKED_WEIGHT = 1e-6  # a blocked position with more weight than this is marked

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;margin:0 auto;
max-width:1100px;padding:1.2em;color:#1b1f24;line-height:1.45}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #d0d7de;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;white-space:nowrap}
.ok{color:#1a7f37;font-weight:bold}.bad{color:#cf222e;font-weight:bold}.muted{color:#57606a}
code{background:#f6f8fa;padding:.05em .3em;border-radius:4px;font-size:.95em}
.diagnosis{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5em .8em}
figure{margin:1em 0;overflow-x:auto}figure svg{max-width:100%;height:auto}
figcaption{font-size:.92em;color:#424a53;max-width:60em}
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")


# -- text -------------------------------------------------------------------------------------------
def text(value):
    """Untrusted or plain text as HTML: cleaned, escaped, code spans as <code>."""
    value = clean(value)
    out, position = [], 0
    for span in _CODE_SPAN.finditer(value):
        out.append(html.escape(value[position:span.start()]))
        out.append(f"<code>{html.escape(span.group(2).strip())}</code>")
        position = span.end()
    out.append(html.escape(value[position:]))
    return "".join(out)


def escape(value):
    """Cleaned and escaped, nothing else (for attributes and code)."""
    return html.escape(clean(value), quote=True)


def page(title, body, lang):
    """A complete HTML document that requests nothing from anywhere."""
    return (f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"{body}\n</body>\n</html>\n")


# -- the page -------------------------------------------------------------------------------------
def feedback_html(result, lang, title=None):
    """The whole feedback page of one student."""
    words = WORDS[lang]
    heading = f"{words['title']}: {title or result.assignment}"
    source = f"<code>{escape(result.source.replace(chr(92), '/').rsplit('/', 1)[-1])}</code>" \
        if result.source else escape(words["no_file"])
    out = [f"<h1>{escape(heading)}</h1>", "<ul>",
           f"<li><b>{escape(words['student'])}:</b> {escape(result.student)}</li>",
           f"<li><b>{escape(words['source'])}:</b> {source}</li>",
           f"<li><b>{escape(words['score'])}: {fmt(result.score)}/{fmt(result.max_score)}</b></li>",
           "</ul>"]
    out += problems_html(result, lang)
    for target, outcomes in _by_target(result.outcomes).items():
        earned, possible = sum(o.score for o in outcomes), sum(o.check.points for o in outcomes)
        out.append(f'<h2 id="{escape(target)}"><code>{escape(target)}</code>: '
                   f"{fmt(earned)}/{fmt(possible)}</h2>")
        out += target_html(result, target, outcomes, lang)
    if result.outcomes and all(o.passed for o in result.outcomes):
        out.append(f'<p class="ok">{escape(words["all_passed"])}</p>')
    return page(heading, "\n".join(out), lang)


def problems_html(result, lang):
    if not result.problems:
        return []
    words = WORDS[lang]
    return ([f"<h2>{escape(words['problems'])}</h2>", "<ul>"]
            + [f"<li>{text(problem[lang])}</li>" for problem in result.problems] + ["</ul>"])


def target_html(result, target, outcomes, lang, with_pictures=True):
    """A target's section: its diagnosis, the table of checks, what to fix, its pictures."""
    words = WORDS[lang]
    diagnosis = result.diagnosis_for(target)
    out = []
    if diagnosis is not None:
        explained = [o.check.id for o in outcomes if not o.passed and o.check.id in diagnosis.explains]
        out.append(f'<div class="diagnosis"><p><b>{escape(words["diagnosis"])}:</b> '
                   f"{text(diagnosis.title[lang])}</p><p><i>{escape(words['look'])}:</i> "
                   f"{text(diagnosis.hint[lang])}</p>"
                   + (f"<p>{escape(words['because'])}: "
                      + ", ".join(f"<code>{escape(c)}</code>" for c in explained) + "</p>"
                      if explained else "") + "</div>")
    out.append(f"<table><tr><th></th><th>{escape(words['check'])}</th>"
               f"<th>{escape(words['points'])}</th></tr>")
    for o in outcomes:
        mark = '<span class="ok">✓</span>' if o.passed else '<span class="bad">✗</span>'
        name = f"<code>{escape(o.check.id)}</code> {text(o.check.title[lang])}"
        if o.status == "skipped":
            name += f' <span class="muted">({escape(words["skipped"].lower())})</span>'
        out.append(f'<tr><td>{mark}</td><td>{name}</td><td class="num">'
                   f"{fmt(o.score)}/{fmt(o.check.points)}</td></tr>")
    out.append("</table>")
    failed = to_fix(outcomes, diagnosis)
    if failed:
        out += [f"<p><b>{escape(words['fix'])}:</b></p>", "<ul>"]
        for o in failed:
            message = o.message[lang] if o.message else words["error"]
            item = (f'<li><span class="bad">✗</span> <code>{escape(o.check.id)}</code> '
                    f"{text(o.check.title[lang])}: {text(message)}")
            if o.status != "error":
                item += f"<ul><li><i>{escape(words['look'])}:</i> {text(o.check.hint[lang])}</li></ul>"
            out.append(item + "</li>")
        out.append("</ul>")
    reasons = {}
    for o in outcomes:
        if o.status == "skipped" and o.message and o.message not in result.problems:
            reasons.setdefault(o.message[lang], []).append(f"<code>{escape(o.check.id)}</code>")
    if reasons:
        out.append("<ul>" + "".join(f"<li>{', '.join(ids)}: {text(_skipped(reason, lang))}</li>"
                                    for reason, ids in reasons.items()) + "</ul>")
    if with_pictures:
        for number, picture in enumerate(result.pictures):
            if picture.target == target:
                out.append(picture_html(picture, lang, str(number)))
    return out


def picture_html(picture, lang, salt="0"):
    """One picture as <figure>: the inline SVG and what to look for."""
    words = WORDS_HTML[lang]
    try:
        svg, notes = DRAW[picture.kind](picture.data, lang, f"{picture.target}-{salt}")
    except Exception:  # a record from another version of the kit, say: leave the picture out
        return ""
    caption = " ".join(notes)
    return (f'<figure class="picture" data-kind="{escape(picture.kind)}">'
            f"<p><b>{escape(words['pictures'])}:</b> {text(picture.title[lang])}</p>"
            f"{svg}<figcaption>{text(caption)}</figcaption></figure>")


# -- nbgrader's hidden cells -------------------------------------------------------------------------
def hidden_cell_html(result, target, lang, shown=""):
    """HTML for the hidden cell that grades ``target`` (nbgrader's feedback shows it): the
    loading problems (in the first target's cell only, unless ``shown``, the cell's text output,
    already has them), the diagnosis, the checks with the hints of the failed ones, and the
    pictures. None when the target has no checks."""
    outcomes = [o for o in result.outcomes if o.check.target == target]
    if not outcomes:
        return None
    first = next(iter(_by_target(result.outcomes)))
    body = []
    if target == first and not all(clean(p[lang]) in shown for p in result.problems):
        body = problems_html(result, lang)
    body += target_html(result, target, outcomes, lang)
    return f'<div class="autograder-feedback"><style>{_SCOPED}</style>' + "\n".join(body) + "</div>"


def hidden_cell_output(result, target, lang, shown=""):
    """The same as a list of nbformat outputs: one ``display_data`` (``text/html``), or none."""
    import nbformat

    markup = hidden_cell_html(result, target, lang, shown)
    if markup is None:
        return []
    return [nbformat.v4.new_output("display_data", data={"text/html": markup})]


def _scoped(style, scope=".autograder-feedback"):
    """STYLE's rules limited to one element (a notebook page has its own styles)."""
    rules = []
    for rule in style.replace("\n", "").split("}"):
        if "{" not in rule or rule.strip().startswith("body"):
            continue
        selectors, declarations = rule.split("{", 1)
        scoped = ",".join(f"{scope} {s.strip()}" for s in selectors.split(","))
        rules.append(f"{scoped}{{{declarations}}}")
    return "".join(rules)


_SCOPED = _scoped(STYLE)


# -- drawing ------------------------------------------------------------------------------------------
def svg_of(figure, salt):
    """A matplotlib figure as an inline <svg> element: no XML prolog, the same bytes for the
    same figure (no date, a fixed hash salt). Give each figure of a page its own ``salt``:
    SVG ids are hashed from it, and inline SVGs share one id space."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"autograder-{salt}", "svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


def _panels(rows, cols, panel_width, panel_height, left=0.75, right=0.15, top=0.35, bottom=0.5,
            gap_x=0.35, gap_y=0.55):
    """A figure of rows x cols axes laid out in inches (one draw: no tight layout pass)."""
    from matplotlib.figure import Figure

    width = left + right + cols * panel_width + (cols - 1) * gap_x
    height = top + bottom + rows * panel_height + (rows - 1) * gap_y
    figure = Figure(figsize=(width, height), dpi=72)
    figure.patch.set_alpha(0)
    figure.subplots_adjust(left=left / width, right=1 - right / width, top=1 - top / height,
                           bottom=bottom / height, wspace=gap_x / panel_width,
                           hspace=gap_y / panel_height)
    return figure, figure.subplots(rows, cols, squeeze=False)


def _value(x):
    return float("nan") if x is None else float(x)


def _grid(rows):
    import numpy

    return numpy.array([[_value(x) for x in row] for row in rows], dtype=float)


def _heatmap(ax, values, vmin, vmax, cmap, annotate=True, blocked=None, marked=None, digits=2):
    """``values`` (2-D array) as coloured cells; ``blocked`` cells hatched grey, ``marked`` cells
    framed in red; NaN cells say NaN."""
    import numpy
    from matplotlib.patches import Rectangle

    rows, cols = values.shape
    ax.pcolormesh(numpy.ma.masked_invalid(values), cmap=cmap, vmin=vmin, vmax=vmax,
                  edgecolors="white", linewidth=0.5)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=7)
    ax.set_yticks([r + 0.5 for r in range(rows)], [str(r) for r in range(rows)], fontsize=7)
    ax.tick_params(length=0, pad=1)
    for side in ax.spines.values():
        side.set_visible(False)
    for r in range(rows):
        for c in range(cols):
            value = values[r, c]
            if blocked is not None and blocked[r][c]:
                ax.add_patch(Rectangle((c, r), 1, 1, facecolor="none", edgecolor="#8c959f",
                                       hatch="////", linewidth=0))
            if marked is not None and marked[r][c]:
                ax.add_patch(Rectangle((c + 0.06, r + 0.06), 0.88, 0.88, facecolor="none",
                                       edgecolor="#cf222e", linewidth=2))
            if not numpy.isfinite(value):
                ax.text(c + 0.5, r + 0.5, "NaN", ha="center", va="center", fontsize=6,
                        color="#cf222e")
            elif annotate:
                dark = (value - vmin) / ((vmax - vmin) or 1) > 0.6
                ax.text(c + 0.5, r + 0.5, f"{value:.{digits}f}", ha="center", va="center",
                        fontsize=6.5, color="white" if dark else "#1b1f24")


def draw_attention(data, lang, salt):
    import numpy

    words = WORDS_HTML[lang]
    student = [_grid(head) for head in data["student"]]
    reference = [_grid(head) for head in data["reference"]] if data.get("reference") else None
    mask = data.get("mask")
    heads = len(student)
    rows, cols = student[0].shape
    width, height = 0.36 * cols, 0.36 * rows
    if heads == 1:  # one head: yours and the correct one side by side
        figure, grid = _panels(1, 2 if reference else 1, width, height)
        places = [(grid[0][0], grid[0][1] if reference else None)]
    else:  # a row of heads each: yours above, the correct ones below
        figure, grid = _panels(2 if reference else 1, heads, width, height, left=0.95)
        places = [(grid[0][h], grid[1][h] if reference else None) for h in range(heads)]
    leaks = 0
    for h, (mine, correct) in enumerate(places):
        marked = None
        if mask is not None:
            marked = [[bool(mask[r][c]) and not (abs(student[h][r, c]) <= BLOCKED_WEIGHT)
                       for c in range(cols)] for r in range(rows)]
            leaks += sum(map(sum, marked))
        _heatmap(mine, student[h], 0, 1, "Blues", blocked=mask, marked=marked)
        mine.set_title(f"{words['head']} {h}" if heads > 1 else words["you"], fontsize=8)
        mine.set_xlabel(words["key"], fontsize=8)
        if correct is not None:
            _heatmap(correct, reference[h], 0, 1, "Blues", blocked=mask)
            correct.set_title(f"{words['head']} {h}" if heads > 1 else words["correct"], fontsize=8)
            correct.set_xlabel(words["key"], fontsize=8)
    if heads > 1:
        grid[0][0].set_ylabel(f"{words['you']}\n{words['query']}", fontsize=8)
        if reference:
            grid[1][0].set_ylabel(f"{words['correct']}\n{words['query']}", fontsize=8)
    else:
        grid[0][0].set_ylabel(words["query"], fontsize=8)
    notes = [words["attention_caption"]]
    if reference:
        notes.append(words["attention_same"] if data.get("same_weights", True) else words["attention_other"])
    if mask is not None:
        notes.append(words["leaks"].format(n=leaks) if leaks else words["no_leaks"])
    if any(numpy.isnan(s).any() for s in student):
        notes.append(words["nan"])
    elif reference and data.get("same_weights", True):
        largest = max(float(numpy.abs(s - r).max()) for s, r in zip(student, reference))
        notes.append(words["largest"].format(value=f"{largest:.3g}"))
    return svg_of(figure, salt), notes


def draw_positional_encoding(data, lang, salt):
    import numpy

    words = WORDS_HTML[lang]
    student, reference = _grid(data["student"]), _grid(data["reference"])
    difference = numpy.abs(student - reference)
    rows, cols = student.shape
    figure, grid = _panels(1, 3, 0.26 * cols, 0.26 * rows)
    axes = grid[0]
    for ax, values, name, vmin, vmax, cmap in (
            (axes[0], student, words["you"], -1, 1, "RdBu_r"),
            (axes[1], reference, words["correct"], -1, 1, "RdBu_r"),
            (axes[2], difference, words["difference"], 0, max(1e-3, float(numpy.nanmax(difference))
                                                              if numpy.isfinite(difference).any() else 1), "Reds")):
        _heatmap(ax, values, vmin, vmax, cmap, annotate=False)
        ax.set_title(name, fontsize=8)
        ax.set_xlabel(words["feature"], fontsize=8)
    axes[0].set_ylabel(words["position"], fontsize=8)
    notes = [words["pe_caption"]]
    if not numpy.isfinite(student).all():
        notes.append(words["nan"])
    else:
        notes.append(words["largest"].format(value=f"{float(difference.max()):.3g}"))
    return svg_of(figure, salt), notes


def draw_causality(data, lang, salt):
    import numpy

    words = WORDS_HTML[lang]
    student, reference = _grid(data["student"]), _grid(data["reference"])
    threshold = float(data.get("threshold", 1e-4))
    rows, cols = student.shape
    top = float(numpy.nanmax(numpy.concatenate([student.ravel(), reference.ravel()]))) \
        if numpy.isfinite(student).any() else 1.0
    figure, grid = _panels(1, 2, 0.42 * cols, 0.42 * rows, left=0.95)
    axes = grid[0]
    future = [[c < r for c in range(cols)] for r in range(rows)]
    leaks = [[future[r][c] and not (student[r, c] <= threshold) for c in range(cols)] for r in range(rows)]
    _heatmap(axes[0], student, 0, max(top, threshold), "Oranges", marked=leaks)
    _heatmap(axes[1], reference, 0, max(top, threshold), "Oranges")
    for ax, name in ((axes[0], words["you"]), (axes[1], words["correct"])):
        ax.set_title(name, fontsize=8)
        ax.set_xlabel(words["output_position"], fontsize=8)
    axes[0].set_ylabel(words["changed_from"], fontsize=8)
    count = sum(map(sum, leaks))
    notes = [words["causality_caption"], words["causal_leaks"].format(n=count) if count else words["causal_ok"]]
    return svg_of(figure, salt), notes


DRAW = {"attention_weights": draw_attention, "positional_encoding": draw_positional_encoding,
        "causality": draw_causality}
