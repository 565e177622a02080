"""A student's feedback as one self-contained HTML page (``OUT/<student>/feedback.html``), and
the HTML that nbgrader's hidden cells show: the content of ``feedback.md`` plus the pictures of
``records.Picture`` drawn as inline SVG (``autograder.svg``: plain strings, no matplotlib).

Everything comes from the record. Text a student controls (their name, names in their code,
their exceptions' messages) is cleaned of control characters (``texts.clean``) and then
HTML-escaped; only our own markup is HTML, and code spans (`like this`) become ``<code>``
after escaping. Pictures hold numbers only; their labels are ours. The page loads nothing:
no script, no font, no stylesheet from elsewhere, and a Content-Security-Policy that forbids
any request, so it reads the same offline and in a mail client's sandbox.
"""

import html
import re

from autograder.reports import svg
from autograder.records import to_fix
from autograder.reports.words import NOT_GRADED, WORDS, by_target, fmt, not_graded, other_problems, skipped
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
        "attention_same": "Baris bawah dihitung oleh solusi acuan dengan parameter yang sama.",
        "attention_other": ("Parameter Anda tidak dapat disalin (nama atau bentuknya lain), jadi "
                            "baris bawah memakai parameter lain: bandingkan polanya saja."),
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
.ok{color:#1a7f37;font-weight:bold}.bad{color:#cf222e;font-weight:bold}.not-graded{border-left:4px solid #cf222e;padding:.3em .8em;background:#fff5f5}.muted{color:#57606a}
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
           *([f'<li class="late">{text(result.late.words(result.raw_score)[lang])}</li>']
             if result.late else []),
           "</ul>"]
    headline = not_graded(result, lang)
    if headline:  # nothing was graded: say so first, and why
        what, _, why = headline.partition(": ")
        out.append(f'<p class="not-graded"><b>{escape(what[:1].upper() + what[1:])}:</b> {text(why)}<br>'
                   f"{escape(NOT_GRADED[lang]['none_ran'])}</p>")
    out += problems_html(result, lang, other_problems(result))
    for target, outcomes in by_target(result.outcomes).items():
        earned, possible = sum(o.score for o in outcomes), sum(o.check.points for o in outcomes)
        out.append(f'<h2 id="{escape(target)}"><code>{escape(target)}</code>: '
                   f"{fmt(earned)}/{fmt(possible)}</h2>")
        out += target_html(result, target, outcomes, lang)
    if result.outcomes and all(o.passed for o in result.outcomes):
        out.append(f'<p class="ok">{escape(words["all_passed"])}</p>')
    return page(heading, "\n".join(out), lang)


def problems_html(result, lang, problems=None):
    """The loading problems (``problems``: those of them to show; default all) as a list."""
    problems = result.problems if problems is None else problems
    if not problems:
        return []
    words = WORDS[lang]
    return ([f"<h2>{escape(words['problems'])}</h2>", "<ul>"]
            + [f"<li>{text(problem[lang])}</li>" for problem in problems] + ["</ul>"])


def target_html(result, target, outcomes, lang, with_pictures=True):
    """A target's section: its diagnosis, the table of checks, what to fix, its pictures."""
    words = WORDS[lang]
    diagnosis, findings = result.diagnosis_for(target), result.findings_for(target)
    out = []
    shown = [(diagnosis, "diagnosis", "because")] if diagnosis is not None else []
    for found, label, because in shown + [(f, "finding", "because_finding") for f in findings]:
        explained = [o.check.id for o in outcomes if not o.passed and o.check.id in found.explains]
        out.append(f'<div class="diagnosis"><p><b>{escape(words[label])}:</b> '
                   f"{text(found.title[lang])}</p><p><i>{escape(words['look'])}:</i> "
                   f"{text(found.hint[lang])}</p>"
                   + (f"<p>{escape(words[because])}: "
                      + ", ".join(f"<code>{escape(c)}</code>" for c in explained) + "</p>"
                      if explained else "") + "</div>")
    localization = result.localization_for(target)
    if localization is not None and diagnosis is None:
        out.append(f'<div class="diagnosis"><p><b>{escape(words["localization"])}:</b> '
                   f"{text(localization.text[lang])}</p></div>")
    elsewhere = result.explained_elsewhere(target)
    for other, checks in elsewhere:
        part = words["elsewhere"].format(part=f"<code>{escape(other.target)}</code>")
        out.append(f'<div class="diagnosis"><p><b>{part}:</b> {text(other.title[lang])}</p>'
                   f"<p>{escape(words['because'])}: "
                   + ", ".join(f"<code>{escape(c)}</code>" for c in checks) + "</p></div>")
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
    failed = to_fix(outcomes, diagnosis, *findings, *(d for d, _ in elsewhere))
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
        out.append("<ul>" + "".join(f"<li>{', '.join(ids)}: {text(skipped(reason, lang))}</li>"
                                    for reason, ids in reasons.items()) + "</ul>")
    if with_pictures:
        for picture in result.pictures:
            if picture.target == target:
                out.append(picture_html(picture, lang))
    return out


def picture_html(picture, lang):
    """One picture as <figure>: the inline SVG and what to look for."""
    words = WORDS_HTML[lang]
    try:
        drawing, notes = DRAW[picture.kind](picture.data, lang, clean(picture.title[lang]))
    except Exception:  # a record from another version of the kit, say: leave the picture out
        return ""
    caption = " ".join(notes)
    return (f'<figure class="picture" data-kind="{escape(picture.kind)}">'
            f"<p><b>{escape(words['pictures'])}:</b> {text(picture.title[lang])}</p>"
            f"{drawing}<figcaption>{text(caption)}</figcaption></figure>")


# -- nbgrader's hidden cells -------------------------------------------------------------------------
def hidden_cell_html(result, target, lang, shown=""):
    """HTML for the hidden cell that grades ``target`` (nbgrader's feedback shows it): the
    loading problems (in the first target's cell only, unless ``shown``, the cell's text output,
    already has them), the diagnosis, the checks with the hints of the failed ones, and the
    pictures. None when the target has no checks."""
    outcomes = [o for o in result.outcomes if o.check.target == target]
    if not outcomes:
        return None
    first = next(iter(by_target(result.outcomes)))
    body = []
    if target == first and result.late and result.late.words(result.raw_score)[lang] not in shown:
        body = [f'<p class="late"><b>{text(result.late.words(result.raw_score)[lang])}</b></p>']
    if target == first and not all(clean(p[lang]) in shown for p in result.problems):
        body += problems_html(result, lang)
    body += target_html(result, target, outcomes, lang)
    return f'<div class="autograder-feedback"><style>{_SCOPED}</style>' + "\n".join(body) + "</div>"


def hidden_cell_output(result, target, lang, shown="", text=None):
    """The same as a list of nbformat outputs: one ``display_data`` (``text/html``), or none.
    With ``text`` (the cell's verdicts as plain text), one output that shows each verdict once:
    the HTML (the problems included) where HTML shows, ``text`` as its ``text/plain`` elsewhere,
    or a ``stream`` of ``text`` when the target has no checks."""
    import nbformat

    markup = hidden_cell_html(result, target, lang, "" if text is not None else shown)
    if markup is None:
        return [] if text is None else [nbformat.v4.new_output("stream", name="stdout", text=text)]
    data = {"text/html": markup} if text is None else {"text/html": markup, "text/plain": text}
    return [nbformat.v4.new_output("display_data", data=data)]


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
# Each DRAW function returns (svg, notes): the picture as inline SVG (autograder/svg.py: plain
# strings, a millisecond or so; matplotlib took about a second per page) and its caption.
def _value(x):
    """A stored number (None for NaN and inf) as a float, or None."""
    return float(x) if svg.finite(x) else None


def _grid(rows):
    return [[_value(x) for x in row] for row in rows]


def _cells(*grids):
    return [x for g in grids for row in g for x in row]


def _largest_difference(pairs):
    """The largest |a - b| over pairs of grids, None when any number is missing."""
    differences = [abs(a - b) if a is not None and b is not None else None
                   for mine, correct in pairs for a, b in zip(_cells(mine), _cells(correct))]
    return None if None in differences or not differences else max(differences)


def draw_attention(data, lang, label):
    words = WORDS_HTML[lang]
    student = [_grid(head) for head in data["student"]]
    reference = [_grid(head) for head in data["reference"]] if data.get("reference") else None
    mask = data.get("mask")
    heads = len(student)
    leaks, mine, correct = 0, [], []
    for h in range(heads):
        marked = None
        if mask is not None:
            marked = [[bool(blocked) and not (value is not None and abs(value) <= BLOCKED_WEIGHT)
                       for blocked, value in zip(mask_row, row)]
                      for mask_row, row in zip(mask, student[h])]
            leaks += sum(map(sum, marked))
        title = f"{words['head']} {h}" if heads > 1 else words["you"]
        # several heads: a row each, yours above the correct ones, the row named at its left
        y_label = (words["you"], words["query"]) if heads > 1 else (words["query"],)
        mine.append(svg.heatmap(student[h], 0, 1, "Blues", title=title, x_label=words["key"],
                                y_label=y_label if h == 0 else (), blocked=mask, marked=marked))
        if reference is not None:
            title = f"{words['head']} {h}" if heads > 1 else words["correct"]
            y_label = (words["correct"], words["query"]) if heads > 1 else ()
            correct.append(svg.heatmap(reference[h], 0, 1, "Blues", title=title,
                                       x_label=words["key"], y_label=y_label if h == 0 else (),
                                       blocked=mask))
    if heads == 1:  # one head: yours and the correct one side by side
        layout = svg.grid([mine + correct])
    else:
        layout = svg.grid([mine, correct] if correct else [mine])
    notes = [words["attention_caption"]]
    same = data.get("same_weights", True)
    if reference:
        notes.append(words["attention_same"] if same else words["attention_other"])
    if mask is not None:
        notes.append(words["leaks"].format(n=leaks) if leaks else words["no_leaks"])
    if None in _cells(*student):
        notes.append(words["nan"])
    elif reference and same:
        largest = _largest_difference(zip(student, reference))
        if largest is not None:
            notes.append(words["largest"].format(value=f"{largest:.3g}"))
    return svg.document(layout, label), notes


def draw_positional_encoding(data, lang, label):
    words = WORDS_HTML[lang]
    student, reference = _grid(data["student"]), _grid(data["reference"])
    difference = [[abs(a - b) if a is not None and b is not None else None
                   for a, b in zip(mine, correct)] for mine, correct in zip(student, reference)]
    known = [x for x in _cells(difference) if x is not None]
    top = max(1e-3, max(known)) if known else 1.0
    panels = [svg.heatmap(values, vmin, vmax, palette, cell=22, title=name,
                          x_label=words["feature"], y_label=(words["position"],) if i == 0 else (),
                          annotate=False)
              for i, (values, name, vmin, vmax, palette) in enumerate((
                  (student, words["you"], -1, 1, "RdBu_r"),
                  (reference, words["correct"], -1, 1, "RdBu_r"),
                  (difference, words["difference"], 0, top, "Reds")))]
    notes = [words["pe_caption"]]
    if None in _cells(student):
        notes.append(words["nan"])
    else:
        notes.append(words["largest"].format(value=f"{max(known, default=0.0):.3g}"))
    return svg.document(svg.grid([panels]), label), notes


def draw_causality(data, lang, label):
    words = WORDS_HTML[lang]
    student, reference = _grid(data["student"]), _grid(data["reference"])
    threshold = float(data.get("threshold", 1e-4))
    drawn = [x for x in _cells(student) if x is not None]
    top = max(max(drawn + [x for x in _cells(reference) if x is not None]) if drawn else 1.0, threshold)
    leaks = [[c < r and not (value is not None and value <= threshold)
              for c, value in enumerate(row)] for r, row in enumerate(student)]
    panels = [svg.heatmap(student, 0, top, "Oranges", cell=38, title=words["you"],
                          x_label=words["output_position"], y_label=(words["changed_from"],),
                          marked=leaks),
              svg.heatmap(reference, 0, top, "Oranges", cell=38, title=words["correct"],
                          x_label=words["output_position"])]
    count = sum(map(sum, leaks))
    notes = [words["causality_caption"], words["causal_leaks"].format(n=count) if count else words["causal_ok"]]
    return svg.document(svg.grid([panels]), label), notes


def draw_loss_curve(data, lang, label):
    you, correct = ("Anda", "acuan") if lang == "id" else ("yours", "reference")
    chart = svg.line_chart([(you, data["student"], svg.RED), (correct, data["reference"], svg.BLUE)],
                           title="loss", x_label="langkah" if lang == "id" else "step")
    reached = [step for step, acc in data["accuracy"] if acc >= data["wanted"]]
    shown = ", ".join(f"{step}: {acc:.0%}" for step, acc in data["accuracy"])
    if lang == "id":
        notes = [f"Akurasi urutan-tepat per evaluasi (diukur penilai): {shown}.",
                 f"Target {data['wanted']:.0%} tercapai pada langkah {reached[0]}." if reached
                 else f"Target {data['wanted']:.0%} tidak tercapai."]
    else:
        notes = [f"Exact-sequence accuracy per evaluation (measured by the grader): {shown}.",
                 f"The {data['wanted']:.0%} target was reached at step {reached[0]}." if reached
                 else f"The {data['wanted']:.0%} target was not reached."]
    shown = []
    for example in data.get("examples", []):
        source, expected, decoded = (" ".join(map(str, example[key])) for key in ("source", "expected", "decoded"))
        right = example["decoded"] == example["expected"]
        shown.append(f"{source} → {decoded} " + ("✓" if right else "✗ (" + (
            "seharusnya " if lang == "id" else "expected ") + expected + ")"))
    if shown:
        notes.append(("Keluaran model Anda setelah pelatihan, didekode greedy oleh penilai (sumber → keluaran): "
                      if lang == "id" else "What your trained model writes, decoded greedily by the grader "
                      "(source → output): ") + "; ".join(shown) + ".")
    return svg.document(chart, label), notes


DRAW = {"attention_weights": draw_attention, "positional_encoding": draw_positional_encoding,
        "causality": draw_causality, "loss_curve": draw_loss_curve}
