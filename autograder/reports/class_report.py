"""The class at a glance, for the instructor: ``OUT/report.html`` and ``OUT/report.json``,
written with every batch after ``gradebook.csv`` and ``summary.json``.

``report.html`` is one self-contained page that works offline: inline CSS, charts as inline
SVG (``autograder.svg``), no script, and a Content-Security-Policy that forbids every request.
It shows the score histogram, the pass rate of each check (worst first), the most common
diagnosed mistakes with the students who made them, one row per student with a relative link
to ``<student>/feedback.html``, the grading time per student and the sandbox mode, and the
pairs of submissions that look alike (``autograder.similarity``). ``report.json`` holds the
same numbers for scripts. Student-controlled text (names, loading problems, code fragments)
is cleaned and HTML-escaped.
"""

import json
import statistics
import sys
import traceback
from pathlib import Path
from urllib.parse import quote

from autograder.records import DERIVED
from autograder.reports import similarity, svg
from autograder.reports.feedback_html import escape, page, text
from autograder.reports.words import fmt, not_graded, student_folder, write_atomic
from autograder.texts import clean

WORDS = {
    "id": {
        "title": "Laporan kelas", "students": "Mahasiswa", "max": "Nilai maksimum",
        "mean": "Rata-rata", "median": "Median", "full": "Penuh", "partial": "Sebagian",
        "zero": "Nol", "not_graded": "Tidak dinilai", "grader_error": "Kesalahan grader",
        "histogram": "Sebaran nilai", "score": "Nilai", "count": "Jumlah mahasiswa",
        "pass_rate": "Tingkat lulus per pemeriksaan (terburuk di atas)", "check": "Pemeriksaan",
        "passed": "lulus", "rate": "Lulus", "mistakes": "Kesalahan yang paling sering dikenali",
        "mistake": "Kesalahan", "target": "Bagian", "who": "Mahasiswa",
        "no_mistakes": "Tidak ada kesalahan yang dikenali.", "table": "Per mahasiswa",
        "status": "Status", "failed": "Pemeriksaan gagal", "problems": "Masalah memuat",
        "training": "Hasil pelatihan (tugas tersembunyi)", "reached_at": "Target tercapai pada langkah",
        "last_accuracy": "Akurasi terakhir", "not_reached": "tidak tercapai",
        "time": "Waktu (s)", "feedback": "umpan balik", "timing": "Waktu dan sandbox",
        "sandbox": "Mode sandbox", "total": "Total waktu batch", "per_student": "Waktu per mahasiswa",
        "jobs": "Pekerjaan paralel", "graded": "Dinilai di batch ini", "resumed": "Dipakai ulang",
        "similarity": "Kemiripan antar-pengumpulan", "pair": "Pasangan", "similar_score": "Skor",
        "fragments": "Potongan yang sama", "no_pairs": "Tidak ada pasangan dengan skor ≥ {t}.",
        "compared": "{n} pengumpulan dibandingkan; ambang {t}; k-gram {k} token; {c} k-gram "
                    "yang ditulis lebih dari {f} mahasiswa diabaikan.",
        "similarity_note": "Skor tinggi adalah alasan untuk memeriksa, bukan vonis: kode awal dan "
                           "kode yang diberikan sudah dikeluarkan, tetapi tugas yang pendek "
                           "menyisakan sedikit ruang untuk berbeda.",
        "similarity_failed": "Kemiripan tidak dapat dihitung: {error}",
        "finished": "Selesai", "none": "—", "checks": "pemeriksaan",
        "all_skipped": "semua (tidak ada pemeriksaan yang dapat dijalankan)",
        "localized": "Langkah pertama yang berbeda (kesalahan di luar katalog)", "step": "Langkah",
    },
    "en": {
        "title": "Class report", "students": "Students", "max": "Maximum score",
        "mean": "Mean", "median": "Median", "full": "Full", "partial": "Partial",
        "zero": "Zero", "not_graded": "Not graded", "grader_error": "Grader error",
        "histogram": "Score distribution", "score": "Score", "count": "Students",
        "pass_rate": "Pass rate per check (worst first)", "check": "Check",
        "passed": "passed", "rate": "Passed", "mistakes": "Most common diagnosed mistakes",
        "mistake": "Mistake", "target": "Part", "who": "Students",
        "no_mistakes": "No mistake was diagnosed.", "table": "Per student",
        "status": "Status", "failed": "Failed checks", "problems": "Loading problems",
        "training": "Training outcomes (the hidden task)", "reached_at": "Target reached at step",
        "last_accuracy": "Last accuracy", "not_reached": "not reached",
        "time": "Time (s)", "feedback": "feedback", "timing": "Time and sandbox",
        "sandbox": "Sandbox mode", "total": "Batch time", "per_student": "Time per student",
        "jobs": "Parallel jobs", "graded": "Graded in this batch", "resumed": "Reused",
        "similarity": "Similar submissions", "pair": "Pair", "similar_score": "Score",
        "fragments": "Shared fragments", "no_pairs": "No pair scores ≥ {t}.",
        "compared": "{n} submissions compared; threshold {t}; k-grams of {k} tokens; {c} k-grams "
                    "written by more than {f} of the students ignored.",
        "similarity_note": "A high score is a reason to look, not a verdict: the starter and the "
                           "given code are left out, but short assignments leave little room to "
                           "differ.",
        "similarity_failed": "Similarity could not be computed: {error}",
        "finished": "Finished", "none": "—", "checks": "checks",
        "all_skipped": "all (no check could run)",
        "localized": "First steps that differ (mistakes the catalogue does not know)", "step": "Step",
    },
}
STATUSES = ("full", "partial", "zero", "not_graded", "grader_error")
STYLE_EXTRA = """
.cards{display:flex;flex-wrap:wrap;gap:.6em}.card{border:1px solid #d0d7de;border-radius:6px;
padding:.4em .8em;min-width:7em}.card b{display:block;font-size:1.3em}
pre{background:#f6f8fa;padding:.4em .6em;margin:.2em 0;overflow-x:auto;font-size:.85em}
details{margin:.3em 0}td pre{margin:0}.frag{display:grid;grid-template-columns:1fr 1fr;gap:.5em}
"""


# -- numbers ------------------------------------------------------------------------------------
def numbers(batch, similar=None, similarity_error=None):
    """Everything report.html shows, as plain JSON (report.json)."""
    results = batch.results
    scores = [r.score for r in results]
    statuses = [r.status for r in results]
    checks = []
    for check in batch.checks:
        outcomes = [o for r in results for o in r.outcomes if o.check.id == check.id]
        counts = {status: sum(1 for o in outcomes if o.status == status)
                  for status in ("passed", "failed", "skipped", "timeout", "error")}
        checks.append({"id": check.id, "target": check.target, "points": check.points,
                       "title": check.title.to_json(), "graded": len(outcomes), **counts,
                       "pass_rate": round(counts["passed"] / len(outcomes), 4) if outcomes else None})
    mistakes = {}
    for r in results:
        for d in r.diagnoses:
            if d.mistake in DERIVED:  # a grouping of failures, not a mistake of the catalogue
                continue
            entry = mistakes.setdefault(d.mistake, {"mistake": d.mistake, "target": d.target,
                                                    "title": d.title.to_json(), "students": []})
            entry["students"].append(clean(r.student))
    located = {}
    for r in results:
        for x in r.localizations:
            entry = located.setdefault((x.target, x.step), {"target": x.target, "step": x.step, "students": []})
            entry["students"].append({"student": clean(r.student), "origin": x.origin, "line": x.line})
    times = [r.execution_time for r in results]
    return {
        "assignment": batch.assignment, "title": batch.title, "language": batch.language,
        "sandbox": batch.sandbox, "max_score": batch.max_score,
        "counts": {"students": len(results), **{s: statuses.count(s) for s in STATUSES}},
        "scores": {"mean": round(statistics.fmean(scores), 3) if scores else None,
                   "median": statistics.median(scores) if scores else None,
                   "histogram": histogram(scores, batch.max_score)},
        "checks": checks,
        "mistakes": sorted(mistakes.values(), key=lambda m: (-len(m["students"]), m["mistake"])),
        "localized": sorted(located.values(), key=lambda m: (-len(m["students"]), m["target"], m["step"])),
        "students": [{
            "student": clean(r.student), "folder": student_folder(r.student),
            "feedback": f"{student_folder(r.student)}/feedback.html", "score": r.score,
            "max_score": r.max_score, "status": s, "failed": r.failed_ids,
            "problems": [clean(p[batch.language]) for p in r.problems],
            "diagnoses": [d.mistake for d in r.diagnoses], "execution_time": r.execution_time,
            "localizations": [{"target": x.target, "step": x.step, "origin": x.origin, "line": x.line}
                              for x in r.localizations],
            **({"not_graded": clean(why)} if (why := not_graded(r, batch.language)) else {}),
        } for r, s in zip(results, statuses)],
        "time": {"per_student": {"mean": round(statistics.fmean(times), 3) if times else None,
                                 "max": max(times) if times else None},
                 **{k: batch.timing.get(k) for k in ("seconds", "started", "finished", "jobs", "graded")},
                 "resumed": batch.resumed},
        "similarity": (similar.to_json() if similar is not None
                       else {"error": similarity_error} if similarity_error else None),
        **({"training": training} if (training := _training(results)) else {}),
    }


def _training(results):
    """Per student whose training was run (assignment 4's loss_curve picture): the step at which
    the accuracy the check asks for was reached (None: not reached), the last accuracy."""
    rows = []
    for r in results:
        for picture in r.pictures:
            if picture.kind == "loss_curve":
                accuracy = picture.data.get("accuracy") or []
                wanted = picture.data.get("wanted", 1.0)
                rows.append({"student": clean(r.student), "folder": student_folder(r.student),
                             "reached_at": next((step for step, a in accuracy if a >= wanted), None),
                             "accuracy": accuracy[-1][1] if accuracy else None,
                             "steps": len(picture.data.get("reference") or [])})
    return rows


def _training_html(data, words):
    if not data.get("training"):
        return []
    out = [f"<h2>{escape(words['training'])}</h2>",
           f"<table id=\"training\"><tr><th>{escape(words['students'])}</th>"
           f"<th>{escape(words['reached_at'])}</th><th>{escape(words['last_accuracy'])}</th></tr>"]
    for row in data["training"]:
        reached = fmt(row["reached_at"]) if row["reached_at"] is not None else words["not_reached"]
        accuracy = f"{row['accuracy']:.0%}" if row["accuracy"] is not None else words["none"]
        out.append(f"<tr><td>{_link(row)}</td><td class=\"num\">{escape(reached)}</td>"
                   f"<td class=\"num\">{escape(accuracy)}</td></tr>")
    return out + ["</table>"]


def histogram(scores, max_score, bins=10):
    """Equal-width bins over [0, max_score]; the last bin includes max_score."""
    if max_score <= 0:
        return {"edges": [0, 0], "counts": [len(scores)]}
    bins = max(1, min(bins, int(max_score) if float(max_score).is_integer() else bins))
    width = max_score / bins
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(score / width)))] += 1
    return {"edges": [round(i * width, 4) for i in range(bins + 1)], "counts": counts}


# -- charts ----------------------------------------------------------------------------------------
# Drawn with autograder/svg.py like the feedback's pictures (matplotlib took about a second
# for these two).
CHART_WIDTH = 672


def histogram_svg(data, words):
    """One bar per non-empty bin, its count above it; the bins' edges along the bottom."""
    edges, counts = data["edges"], data["counts"]
    left, right, top, bottom, height = 58, 16, 12, 50, 270
    width, plot_height = CHART_WIDTH - left - right, height - top - bottom
    span = (edges[-1] - edges[0]) or 1
    step = svg.nice_step(max(counts + [1]))
    ceiling = max(max(counts + [1]) * 1.18, step)

    def x(edge):
        return left + (edge - edges[0]) / span * width

    def y(count):
        return top + plot_height * (1 - count / ceiling)

    out, tick = [], 0
    while tick <= ceiling:
        out += [svg.line(left, y(tick), left + width, y(tick), svg.GRID, 0.6),
                svg.text(left - 6, y(tick), tick, 12, anchor="end")]
        tick += step
    for a, b, n in zip(edges, edges[1:], counts):
        if n:
            out += [svg.rect(x(a), y(n), x(b) - x(a), y(0) - y(n), "#2f81f7", "bar", "#ffffff", 1),
                    svg.text((x(a) + x(b)) / 2, y(n) - 8, n, 12)]
    out += [svg.line(left, top, left, y(0)), svg.line(left, y(0), left + width, y(0))]
    out += [svg.text(x(e), y(0) + 12, fmt(round(e, 1)), 12) for e in edges]
    out += [svg.text(left + width / 2, height - 12, words["score"], 13),
            svg.text(12, top + plot_height / 2, words["count"], 13, rotate=True)]
    return svg.document(svg.Block(CHART_WIDTH, height, "".join(out)), words["histogram"], pad=0)


def pass_rate_svg(checks, words):
    """One bar per check, worst first, coloured red below 50 %, yellow below 80 %."""
    rows = sorted((c for c in checks if c["pass_rate"] is not None), key=lambda c: (c["pass_rate"], c["id"]))
    row_height, top, bottom = 22, 8, 48
    left = 20 + 6.6 * max((len(c["id"]) for c in rows), default=4)
    width = CHART_WIDTH - left - 8
    full = width * 100 / 118  # 100 %, leaving room for the label after the bar
    height = top + row_height * max(1, len(rows)) + bottom
    axis = top + row_height * max(1, len(rows))
    out = []
    for percent in (0, 25, 50, 75, 100):
        x = left + full * percent / 100
        out += [svg.line(x, top, x, axis, svg.GRID, 0.6), svg.text(x, axis + 12, f"{percent}%", 12)]
    for i, c in enumerate(rows):
        rate = 100 * c["pass_rate"]
        colour = "#cf222e" if rate < 50 else "#d4a72c" if rate < 80 else "#1a7f37"
        y = top + i * row_height
        middle = y + row_height / 2
        out += [svg.rect(left, y + 0.15 * row_height, full * rate / 100, 0.7 * row_height, colour, "bar"),
                svg.text(left + full * rate / 100 + 4, middle, f"{rate:.0f}% ({c['passed']}/{c['graded']})",
                         11, anchor="start"),
                svg.text(left - 6, middle, c["id"], 12, anchor="end")]
    out += [svg.line(left, top, left, axis), svg.line(left, axis, left + width, axis),
            svg.text(left + full / 2, height - 12, words["rate"], 13)]
    return svg.document(svg.Block(CHART_WIDTH, height, "".join(out)), words["pass_rate"], pad=0)


# -- the page ---------------------------------------------------------------------------------------
def html_report(batch, data, similar=None, lang=None):
    lang = lang or batch.language
    words = WORDS[lang]
    counts, scores = data["counts"], data["scores"]
    heading = f"{words['title']}: {batch.assignment} — {batch.title}"
    out = [f"<h1>{escape(heading)}</h1>", '<div class="cards">']
    cards = [(words["students"], counts["students"]), (words["max"], fmt(batch.max_score)),
             (words["mean"], fmt(round(scores["mean"], 2)) if scores["mean"] is not None else words["none"]),
             (words["median"], fmt(scores["median"]) if scores["median"] is not None else words["none"])]
    cards += [(words[s], counts[s]) for s in STATUSES if counts[s] or s in ("full", "partial", "zero")]
    out += [f'<div class="card">{escape(name)}<b>{escape(value)}</b></div>' for name, value in cards]
    out.append("</div>")
    out += [f"<h2>{escape(words['histogram'])}</h2>",
            f'<figure class="chart" id="histogram">{histogram_svg(scores["histogram"], words)}</figure>',
            f"<h2>{escape(words['pass_rate'])}</h2>",
            f'<figure class="chart" id="pass-rate">{pass_rate_svg(data["checks"], words)}</figure>']
    out += _mistakes(data, words, lang)
    out += _localized(data, words, lang)
    out += _training_html(data, words)
    out += _students(data, words)
    out += _timing(batch, data, words)
    out += _similarity(data, similar, words)
    return page(heading, "\n".join(out), lang).replace("</style>", STYLE_EXTRA + "</style>", 1)


def _link(student):
    return (f'<a href="{escape(quote(student["folder"]))}/feedback.html">'
            f"{escape(student['student'])}</a>")


def _mistakes(data, words, lang):
    out = [f"<h2>{escape(words['mistakes'])}</h2>"]
    if not data["mistakes"]:
        return out + [f"<p>{escape(words['no_mistakes'])}</p>"]
    folders = {s["student"]: s for s in data["students"]}
    out.append(f"<table id=\"mistakes\"><tr><th>{escape(words['mistake'])}</th><th>"
               f"{escape(words['target'])}</th><th>#</th><th>{escape(words['who'])}</th></tr>")
    for m in data["mistakes"]:
        who = ", ".join(_link(folders[s]) if s in folders else escape(s) for s in m["students"])
        out.append(f"<tr><td><code>{escape(m['mistake'])}</code> {text(m['title'][lang])}</td>"
                   f"<td><code>{escape(m['target'])}</code></td><td class=\"num\">"
                   f"{len(m['students'])}</td><td>{who}</td></tr>")
    return out + ["</table>"]


def _localized(data, words, lang):
    """The first wrong steps found where no catalogued mistake was named: per (part, step), who
    and at which line (shown only when there are some)."""
    if not data["localized"]:
        return []
    from autograder.grading.messages import place

    folders = {s["student"]: s for s in data["students"]}
    out = [f"<h2>{escape(words['localized'])}</h2>",
           f"<table id=\"localized\"><tr><th>{escape(words['step'])}</th><th>{escape(words['target'])}"
           f"</th><th>#</th><th>{escape(words['who'])}</th></tr>"]
    for m in data["localized"]:
        who = ", ".join((_link(folders[s["student"]]) if s["student"] in folders else escape(s["student"]))
                        + (f" ({escape(place(s['origin'], s['line'])[lang])})" if s["origin"] else "")
                        for s in m["students"])
        out.append(f"<tr><td><code>{escape(m['step'])}</code></td><td><code>{escape(m['target'])}</code>"
                   f"</td><td class=\"num\">{len(m['students'])}</td><td>{who}</td></tr>")
    return out + ["</table>"]


def _students(data, words):
    out = [f"<h2>{escape(words['table'])}</h2>",
           f"<table id=\"students\"><tr><th>{escape(words['students'])}</th><th>{escape(words['score'])}</th>"
           f"<th>{escape(words['status'])}</th><th>{escape(words['failed'])}</th>"
           f"<th>{escape(words['problems'])}</th><th>{escape(words['time'])}</th></tr>"]
    for s in data["students"]:
        failed = ", ".join(f"<code>{escape(c)}</code>" for c in s["failed"]) or words["none"]
        if s["status"] == "not_graded":  # why nothing was graded: "notebook broken: ..."
            failed = f'<b class="bad">{text(s.get("not_graded") or words["all_skipped"])}</b>'
        elif len(s["failed"]) > 6:
            failed = (f"<details><summary>{len(s['failed'])} {escape(words['checks'])}</summary>"
                      f"{failed}</details>")
        problems = "<br>".join(text(p) for p in s["problems"]) or words["none"]
        out.append(f"<tr><td>{_link(s)}</td><td class=\"num\">{fmt(s['score'])}/{fmt(s['max_score'])}</td>"
                   f"<td>{escape(words[s['status']])}</td><td>{failed}</td><td>{problems}</td>"
                   f"<td class=\"num\">{s['execution_time']:.2f}</td></tr>")
    return out + ["</table>"]


def _timing(batch, data, words):
    time_ = data["time"]
    rows = [(words["sandbox"], f"<code>{escape(batch.sandbox)}</code>"),
            (words["per_student"], f"{words['mean']} {time_['per_student']['mean'] or 0:.2f} s, "
                                   f"max {time_['per_student']['max'] or 0:.2f} s"),
            (words["total"], f"{time_['seconds'] or 0:.1f} s"),
            (words["jobs"], escape(time_["jobs"] if time_["jobs"] is not None else words["none"])),
            (words["graded"], escape(time_["graded"] if time_["graded"] is not None else words["none"])),
            (words["resumed"], escape(time_["resumed"])),
            (words["finished"], escape(time_["finished"] or words["none"]))]
    return ([f"<h2>{escape(words['timing'])}</h2>", '<table id="timing">']
            + [f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in rows] + ["</table>"])


def _similarity(data, similar, words):
    out = [f"<h2>{escape(words['similarity'])}</h2>"]
    if similar is None:
        error = (data.get("similarity") or {}).get("error", "")
        return out + [f"<p>{escape(words['similarity_failed'].format(error=error))}</p>"]
    s = similar.settings
    out.append(f"<p>{escape(words['compared'].format(n=len(similar.compared), t=s.threshold, k=s.kgram, c=similar.ignored_common, f=f'{s.common_fraction:.0%}'))} "
               f"{escape(words['similarity_note'])}</p>")
    if not similar.pairs:
        return out + [f"<p>{escape(words['no_pairs'].format(t=s.threshold))}</p>"]
    folders = {row["student"]: row for row in data["students"]}

    def who(student):
        return _link(folders[clean(student)]) if clean(student) in folders else escape(student)

    out.append(f"<table id=\"similarity\"><tr><th>{escape(words['pair'])}</th>"
               f"<th>{escape(words['similar_score'])}</th><th>{escape(words['fragments'])}</th></tr>")
    for pair in similar.pairs:
        per_target = ", ".join(f"<code>{escape(t)}</code> {v:.2f}" for t, v in pair.per_target.items())
        fragments = "".join(
            f"<details><summary><code>{escape(target)}</code></summary><div class=\"frag\">"
            f"<pre>{escape(a)}</pre><pre>{escape(b)}</pre></div></details>"
            for target, a, b in pair.fragments) or words["none"]
        out.append(f"<tr><td>{who(pair.a)} — {who(pair.b)}</td><td class=\"num\"><b>{pair.score:.2f}</b>"
                   f"<br><small>{per_target}</small></td><td>{fragments}</td></tr>")
    return out + ["</table>"]


# -- writing -----------------------------------------------------------------------------------------
def similarity_inputs(plan, checks):
    """(targets, [similarity] settings) for ``similarity.code_of``; raises SettingsError."""
    return (tuple(dict.fromkeys(c.target for c in checks)),
            similarity.settings(getattr(plan, "course_path", None)))


def write(out_dir, batch, plan=None, analysed=None):
    """Write OUT/report.html and OUT/report.json for a graded batch (``records.BatchResult``);
    ``plan`` gives the course file (for [similarity]) and the source notebook (the starter
    code); ``analysed``: what ``similarity.batch_similarity`` takes as ``known``. The
    similarity section failing leaves a note there, not a missing report."""
    out_dir = Path(out_dir)
    similar, error = None, None
    try:
        targets, settings_ = similarity_inputs(plan, batch.checks)
        similar = similarity.batch_similarity(batch.results, targets, settings_,
                                              getattr(plan, "source_notebook", None), analysed)
    except similarity.SettingsError as failure:
        error = str(failure)
        print(f"warning: {error}; the class report has no similarity section", file=sys.stderr)
    except Exception as failure:  # a fault of ours: say so, keep the rest of the report
        error = f"{type(failure).__name__}: {failure}"
        print(f"class report: similarity failed:\n{traceback.format_exc()}", file=sys.stderr)
    data = numbers(batch, similar, error)
    write_atomic(out_dir / "report.json", json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    write_atomic(out_dir / "report.html", html_report(batch, data, similar))
    return out_dir / "report.html"
