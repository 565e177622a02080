"""The class report (OUT/report.html and OUT/report.json, autograder/class_report.py): the numbers
from the records, escaped student text, relative links to each student's feedback.html, and the
page itself in a real headless Chromium: no console or network errors, SVG charts that are
drawn, a screenshot that is not blank."""

import ast
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from autograder.reports import class_report
from autograder import plan as plans
from autograder.records import BatchResult, Diagnosis, Outcome, StudentResult
from autograder.texts import bilingual

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = ("chromium is not installed: scripts/setup.sh installs Debian's chromium with apt-get "
               "where apt-get is available and it runs as root")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


# -- records made by hand ------------------------------------------------------------------------------
def synthetic_batch():
    plan = plans.load("attention")
    checks = tuple(c.info for c in plan.checks)
    diagnosis = Diagnosis("scaled_dot_product_attention", "sdpa.missing_scale",
                          bilingual("Tanpa skala 1/√d_k", "No 1/√d_k scale"), bilingual("a", "b"),
                          ("sdpa.numeric",))

    def student(name, failing=(), diagnoses=(), problems=(), seconds=1.0):
        outcomes = tuple(Outcome(c, "failed" if c.id in failing else "passed",
                                 0.0 if c.id in failing else c.points,
                                 bilingual("salah", "wrong") if c.id in failing else None) for c in checks)
        return StudentResult(name, "attention", f"/x/{name}.ipynb", outcomes=outcomes,
                             problems=problems, execution_time=seconds, diagnoses=diagnoses)

    results = (student("ani", seconds=1.5),
               student("budi", ("sdpa.numeric", "mha.numeric"), (diagnosis,)),
               student("citra", ("sdpa.numeric",), (diagnosis,), seconds=0.5),
               student(EVIL, ("mha.numeric",), problems=(bilingual(EVIL, EVIL),)))
    return plan, BatchResult("attention", plan.title, "en", checks, results,
                             {"seconds": 4.2, "finished": "2026-01-01T00:00:00+00:00", "jobs": 2,
                              "graded": 4}, "namespaces+uid")


def test_numbers_come_from_the_records():
    _, batch = synthetic_batch()
    data = class_report.numbers(batch)
    assert data["counts"]["students"] == 4 and data["counts"]["full"] == 1
    assert sum(data["scores"]["histogram"]["counts"]) == 4
    rates = {c["id"]: c["pass_rate"] for c in data["checks"]}
    assert rates["sdpa.numeric"] == 0.5 and rates["mha.numeric"] == 0.5 and rates["sdpa.shape"] == 1
    assert data["mistakes"] == [{"mistake": "sdpa.missing_scale", "target": "scaled_dot_product_attention",
                                 "title": {"id": "Tanpa skala 1/√d_k", "en": "No 1/√d_k scale"},
                                 "students": ["budi", "citra"]}]
    assert [s["feedback"] for s in data["students"]][:3] == [
        "ani/feedback.html", "budi/feedback.html", "citra/feedback.html"]
    assert data["time"]["per_student"]["max"] == 1.5 and data["sandbox"] == "namespaces+uid"


def test_a_broken_notebook_says_why_in_the_students_row():
    """Not "all checks skipped" but what happened: "notebook broken: ...", in the batch's language."""
    plan, batch = synthetic_batch()
    broken = bilingual("Notebook rusak (bukan JSON/format notebook yang sah); buka dan simpan ulang di "
                       "Jupyter: Expecting value", "The notebook is broken (not valid JSON / notebook format); "
                       "open it in Jupyter and save it again: Expecting value")
    eka = StudentResult("eka", "attention", "/x/eka.ipynb", problems=(broken,),
                        outcomes=tuple(Outcome(c.info, "skipped", 0.0, broken) for c in plan.checks))
    batch = BatchResult(batch.assignment, batch.title, "en", batch.checks, batch.results + (eka,))
    data = class_report.numbers(batch)
    why = ("notebook broken: not valid JSON / notebook format; open it in Jupyter and save it again: "
           "Expecting value")
    assert data["students"][-1]["not_graded"] == why and "not_graded" not in data["students"][0]
    row = re.search(r"<tr><td><a href=\"eka/feedback.html\">eka</a>.*?</tr>", class_report.html_report(batch, data))
    assert f'<b class="bad">{why}</b>' in row.group(0)


def test_page_escapes_student_text_and_orders_checks_worst_first(tmp_path):
    plan, batch = synthetic_batch()
    page = class_report.html_report(batch, class_report.numbers(batch))
    assert "<script" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page
    links = re.findall(r'<a href="([^"]+)"', page)
    assert links and all(link.endswith("/feedback.html") and "://" not in link for link in links)
    chart = page[page.index('id="pass-rate"'):]
    assert chart.index("sdpa.numeric") < chart.index("sdpa.shape")  # 50% above 100%
    assert chart.count('<rect class="bar"') == len(batch.checks)
    assert '50% (2/4)' in chart and '100% (4/4)' in chart
    histogram = page[page.index('id="histogram"'):page.index('id="pass-rate"')]
    assert histogram.count('<rect class="bar"') == sum(1 for n in class_report.numbers(batch)[
        "scores"]["histogram"]["counts"] if n)
    mistakes = page[page.index('id="mistakes"'):]
    assert "sdpa.missing_scale" in mistakes and ">2<" in mistakes


# -- similarity -----------------------------------------------------------------------------------------
def test_similarity_flags_a_renamed_copy_and_not_an_independent_solution(tmp_path):
    from autograder.reports import similarity

    corpus = Path(__file__).parent / "corpus" / "attention" / "correct"
    original = (corpus / "einsum.py").read_text(encoding="utf-8")
    renamed = original
    for old, new in (("scores", "skor"), ("weights", "bobot"), ("mask", "topeng"), ("query", "kueri"),
                     ("key", "kunci"), ("value", "nilai"), ("d_k", "dim_head")):
        renamed = re.sub(rf"\b{old}\b", new, renamed)
    assert renamed != original
    (tmp_path / "renamed.py").write_text("# a comment of its own\n" + renamed, encoding="utf-8")
    plan = plans.load("attention")
    settings = similarity.Settings(threshold=0.0)
    codes = [similarity.analyse(name, similarity.sources_of(path, plan.targets), settings)
             for name, path in (("original", corpus / "einsum.py"), ("renamed", tmp_path / "renamed.py"),
                                ("independent", corpus / "head_loop.py"))]
    report = similarity.compare(codes, settings,
                                similarity.baseline(plan.targets, settings, plan.source_notebook))
    scores = {(p.a, p.b): p for p in report.pairs}
    copy = scores[("original", "renamed")]
    assert copy.score > 0.95 and copy.fragments
    assert all(target in plan.targets for target, _, _ in copy.fragments)
    assert any("topeng" in b and "topeng" not in a for _, a, b in copy.fragments)  # each one's text
    assert scores[("original", "independent")].score < 0.3
    assert scores[("renamed", "independent")].score < 0.3
    # The released stub alone is like nothing: its code is the baseline.
    stub = similarity.analyse("stub", {t: f"def {t}(q, k, v, mask=None):\n    raise NotImplementedError()"
                                       for t in plan.targets}, settings)
    report = similarity.compare([codes[0], stub], settings,
                                similarity.baseline(plan.targets, settings, plan.source_notebook))
    assert all(p.score < 0.05 for p in report.pairs)


# Texts where splitting lines or counting columns goes wrong: the parser ends lines at \n, \r\n
# and a lone \r only (str.splitlines also at \v, \f, \x1c, \x85, \u2028, ...), and its columns
# count UTF-8 bytes (a letter of 'é', '日本' or '😀' is 2, 3 or 4).
AWKWARD_TEXTS = [
    "a = 1\r\nb = (2 +\r 3)\nclass X:\n    def f(self):\n        return 'é' + \"ü\"  # ü\n\ny = [1,\n 2]",
    "\fx = ('\v', '\x1c', '\x85', '\u2028', 'é',\n     '\f')  # \u2029 \x0c\nz = x\t[0]\n",
    "s = f'{1 + 2!r:>{3}}' + f\"\"\"\n{'😀' * 2}\n\"\"\" + ('日本'\n      '語')\nt = 1 + \\\n    2\n",
    "def g(a, *, b='日本'):\r\n    return (a,\r\n            b)\r\n",
    "λ = lambda x: [y for y in x if y]  # no newline at the end",
]


def _kinds(text):
    """What a text holds that segment() may get wrong: each kind of node, on one line or
    several, with and without wider-than-ASCII text before its first and its last column."""
    lines = text.split("\n")
    return {(type(node).__name__, node.lineno != node.end_lineno,
             lines[node.lineno - 1][:node.col_offset].isascii(),
             lines[node.end_lineno - 1][:node.end_col_offset].isascii())
            for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.stmt, ast.expr))}


def corpus_sample():
    """Corpus files that, together, hold every kind of node the whole corpus holds
    (``_kinds``), the fewest found greedily: ast.get_source_segment splits the whole text
    again for each node, so the whole corpus (56k nodes) costs it ~40 s, these ~1 s."""
    texts = [path.read_text(encoding="utf-8") for path in sorted((Path(__file__).parent / "corpus").rglob("*.py"))]
    kinds = [_kinds(text) for text in texts]
    wanted, chosen = set().union(*kinds), []
    while wanted:
        best = max(range(len(texts)), key=lambda i: (len(kinds[i] & wanted), -len(texts[i])))
        chosen.append(texts[best])
        wanted -= kinds[best]
    return chosen


def test_fragments_read_the_source_as_ast_get_source_segment_does():
    from autograder.reports import similarity

    compared = 0
    for text in AWKWARD_TEXTS + corpus_sample():
        lines = similarity.source_lines(text)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.stmt, ast.expr)):
                assert similarity.segment(lines, node) == ast.get_source_segment(text, node)
                compared += 1
    assert compared > 1000


def test_similarity_settings_come_from_course_toml(tmp_path):
    from autograder.reports import similarity

    course = tmp_path / "course.toml"
    course.write_text("[similarity]\nthreshold = 0.9\nkgram = 8\n")
    assert similarity.settings(course) == similarity.Settings(0.9, 8, 12, 0.5)
    course.write_text("[similarity]\nthreshold = 2\n")
    with pytest.raises(similarity.SettingsError, match="threshold"):
        similarity.settings(course)


# -- a real batch -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graded(attention_batch):
    done, out = attention_batch
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_batch_writes_the_class_report_with_working_links(graded):
    data = json.loads((graded / "report.json").read_text(encoding="utf-8"))
    summary = json.loads((graded / "summary.json").read_text(encoding="utf-8"))
    assert data["counts"]["students"] == summary["counts"]["students"] == 4
    assert [s["score"] for s in data["students"]] == [s["score"] for s in summary["students"]]
    page = (graded / "report.html").read_text(encoding="utf-8")
    for link in re.findall(r'<a href="([^"]+)"', page):
        assert (graded / link).is_file(), link
    # andi and dewi hand in the same reference code (dewi with one syntax error): a similar pair.
    pairs = {(p["a"], p["b"]) for p in data["similarity"]["pairs"]}
    assert ("andi", "dewi") in pairs


def test_the_class_files_from_slim_records_are_the_ones_the_whole_records_give(graded):
    """A batch keeps only each student's ``kept.Slim`` record until the class files are written:
    gradebook.csv, summary.json, report.json, report.html and the command's table made from
    them are exactly those made from the whole records, in both languages. The records: the
    examples graded (full, partial with diagnoses and localizations, a broken notebook), and
    by hand a missing submission, a grader fault, a late one, a timeout and a training curve."""
    import io

    from rich.console import Console

    from autograder import cli, reports
    from autograder.grading.grader import grader_fault
    from autograder.late import Lateness
    from autograder.loading import Submission
    from autograder.records import Picture
    from autograder.reports import kept

    plan, synthetic = synthetic_batch()
    folders = sorted(p.parent.name for p in graded.glob("*/record.json"))
    records = [reports.read_record(graded, folder) for folder in folders]
    missing = bilingual("Tidak ada notebook", "No notebook")
    records += [
        *synthetic.results,
        StudentResult("fajar", "attention", None, problems=(missing,),
                      outcomes=tuple(Outcome(c.info, "skipped", 0.0, missing) for c in plan.checks)),
        grader_fault(Submission("gita", "attention", Path("/x/gita.ipynb")), plan),
        records[0].with_changes(student="hana", late=Lateness("2026-01-02T00:00:00+00:00",
                                                              "2026-01-01T00:00:00+00:00", 0.0, 90000.0, 2, 20.0)),
        records[1].with_changes(student="indra", outcomes=tuple(
            o if o.passed else Outcome(o.check, "timeout", 0.0, bilingual("habis", "out of time"))
            for o in records[1].outcomes), pictures=records[1].pictures + (
            Picture("loss_curve", "train_step", bilingual("kurva", "curve"),
                    {"accuracy": [[10, 0.5], [20, 1.0]], "wanted": 0.9, "reference": [1.0, 0.5]}),)),
        records[2].with_changes(student="joko", report_error="OSError: disk full"),
    ]
    shared = kept.Outcomes()
    slim = [kept.slim(r, shared) for r in records]
    assert sum(isinstance(r, kept.Slim) for r in slim) == len(records) - 1  # joko's is kept whole
    assert any(not s.pictures for s, r in zip(slim, records) if r.pictures and r.student != "indra")
    hana = next(r for r in slim if r.student == "hana")  # andi's outcomes: the same objects
    assert all(a is b for a, b in zip(slim[0].outcomes, hana.outcomes, strict=True))

    def class_files(results, lang):
        batch = BatchResult("attention", plan.title, lang, tuple(c.info for c in plan.checks), tuple(results),
                            {"seconds": 1.0, "jobs": 2, "graded": len(results)}, "namespaces+uid")
        data = class_report.numbers(batch)
        console = Console(file=io.StringIO(), width=200)
        console.print(cli._score_table(batch, lang))
        return (reports.gradebook_csv(batch), reports.summary(batch), data, class_report.html_report(batch, data),
                console.file.getvalue(), [(reports.no_grade(r, lang), r.status, r.score) for r in results])

    for lang in ("id", "en"):
        whole, thin = class_files(records, lang), class_files(slim, lang)
        assert "notebook" in whole[4] and "gita" in whole[4]
        for made_whole, made_thin in zip(whole, thin):
            assert made_thin == made_whole
    # The whole record of a kept one is its record.json, as written.
    assert kept.full(graded, slim[0]) == records[0] and kept.full(graded, slim[-1]) is records[-1]


def chromium(*args, timeout=90):
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, *args], capture_output=True, text=True,
                          timeout=timeout)


class DevTools:
    """Chromium driven over the DevTools protocol: every console message, uncaught exception
    and browser log entry (CSP violations, failed requests) of one page load."""

    def __init__(self, profile):
        self.process = subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, "--remote-debugging-port=0", "--remote-allow-origins=*",
             f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        active = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (active.exists() and active.read_text().count("\n") >= 1):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = active.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
            pages = [t for t in json.load(reply) if t["type"] == "page"]
        import websocket

        self.socket = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30)
        self.ids = iter(range(1, 10 ** 6))

    def send(self, method, **params):
        self.socket.send(json.dumps({"id": next(self.ids), "method": method, "params": params}))

    def load(self, url, settle=1.5):
        """Navigate and return [(kind, level, text)] of everything logged until it settles."""
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.send(method)
        self.send("Page.navigate", url=url)
        events, loaded, deadline = [], None, time.monotonic() + 60
        self.socket.settimeout(0.3)
        while time.monotonic() < deadline and not (loaded and time.monotonic() - loaded > settle):
            try:
                message = json.loads(self.socket.recv())
            except Exception:  # websocket timeout: nothing new yet; ask whether it has loaded
                if not loaded and time.monotonic() > deadline - 50:  # (a missed load event)
                    self.send("Runtime.evaluate", expression="document.readyState")
                continue
            method, params = message.get("method"), message.get("params", {})
            ready = message.get("result", {}).get("result", {}).get("value") == "complete"
            if (method == "Page.loadEventFired" or ready) and not loaded:
                loaded = time.monotonic()
            elif method == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
                events.append(("console", params["type"], text))
            elif method == "Runtime.exceptionThrown":
                events.append(("exception", "error", params["exceptionDetails"].get("text", "")))
            elif method == "Log.entryAdded":
                entry = params["entry"]
                events.append(("log", entry["level"], entry.get("text", "")))
        assert loaded, f"{url} never finished loading"
        return events

    def close(self):
        if getattr(self, "socket", None):
            self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def errors(events):
    return [e for e in events if e[1] in ("error", "assert") or e[0] == "exception"]


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_report_in_headless_chromium(graded, tmp_path):
    pages = [graded / "report.html", graded / "budi" / "feedback.html"]
    # A control page proves the error detection works: a console error, a thrown exception
    # and a request for an external image, all of which report.html must not have.
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><html><body><img src="http://203.0.113.1/x.png">'
                       '<script>console.error("control error"); throw new Error("thrown");</script>'
                       "</body></html>", encoding="utf-8")
    devtools = DevTools(tmp_path / "profile")
    try:
        found = devtools.load(control.as_uri())
        assert any("control error" in text for _, _, text in errors(found)), found
        assert any(kind == "exception" for kind, _, _ in errors(found)), found
        for path in pages:
            events = devtools.load(path.as_uri())
            assert errors(events) == [], (path, events)
    finally:
        devtools.close()

    done = chromium(f"--user-data-dir={tmp_path / 'dom'}", "--dump-dom", (graded / "report.html").as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    data = json.loads((graded / "report.json").read_text(encoding="utf-8"))
    bars = {"histogram": sum(1 for n in data["scores"]["histogram"]["counts"] if n),
            "pass-rate": sum(1 for c in data["checks"] if c["pass_rate"] is not None)}
    for chart, expected in bars.items():
        figure = re.search(rf'<figure class="chart" id="{chart}">(.*?)</figure>', dom, re.S)
        assert figure, chart
        svg = figure.group(1)
        # one bar per non-empty bin and per check, as the browser parsed them
        assert svg.startswith("<svg") and len(re.findall(r'<rect class="bar"', svg)) == expected > 1, chart
    students = re.search(r'<table id="students">(.*?)</table>', dom, re.S).group(1)
    assert len(re.findall(r'<tr><td><a href="[^"]+/feedback.html">', students)) == 4

    shot = tmp_path / "report.png"
    done = chromium(f"--user-data-dir={tmp_path / 'shot'}", f"--screenshot={shot}",
                    "--window-size=1200,2400", "--hide-scrollbars", (graded / "report.html").as_uri())
    assert shot.is_file() and shot.stat().st_size > 20_000, done.stderr[-2000:]
    from PIL import Image

    image = Image.open(shot).convert("L")
    assert image.size == (1200, 2400)
    low, high = image.getextrema()
    assert high - low > 200  # text and charts, not a blank page
    if os.environ.get("CLASS_REPORT_SCREENSHOT"):  # docs/: regenerate the README's picture
        shutil.copy(shot, os.environ["CLASS_REPORT_SCREENSHOT"])


def test_the_batch_reads_each_students_code_once_for_the_similarity_section(tmp_path, monkeypatch):
    """batch.run analyses each student's code for the similarity section as soon as that
    student's reports are written (while the others are still graded), and the class report
    uses it: every source is read once, and the section is the one the records alone give."""
    from autograder import loading
    from autograder.grading import batch
    from autograder.reports import class_report, similarity

    corpus = Path(__file__).parent / "corpus" / "attention" / "correct"
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("einsum.py", "head_loop.py", "neg1e9_where_reshape.py"):
        shutil.copy(corpus / name, folder / name)
    shutil.copy(corpus / "einsum.py", folder / "einsum_copy.py")
    plan = plans.load("attention")
    submissions = loading.discover([folder], "attention", plan.notebook)
    assert len(submissions) == 4
    reads, read = [], similarity.sources_of
    monkeypatch.setattr(similarity, "sources_of",
                        lambda path, targets: reads.append(str(path)) or read(path, targets))
    graded = batch.run(plan, submissions, tmp_path / "out", jobs=1)
    assert sorted(reads) == sorted(str(s.path) for s in submissions)  # each one once
    data = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    targets, settings = class_report.similarity_inputs(plan, plan.checks)
    alone = similarity.batch_similarity(graded.results, targets, settings, plan.source_notebook)
    assert data["similarity"] == json.loads(json.dumps(alone.to_json()))
    assert any({p["a"], p["b"]} == {"einsum", "einsum_copy"} for p in data["similarity"]["pairs"])


def test_the_starter_code_is_read_only_when_two_students_can_be_compared(monkeypatch):
    """A batch of one (a student's CI, Gradescope) has no pair to compare: the starter code's
    k-grams (``baseline``: the source notebook parsed, ~0.1 s of a cold grading) are not made."""
    from autograder.reports import similarity

    plan = plans.load("attention")
    settings = similarity.Settings(threshold=0.0)
    corpus = Path(__file__).parent / "corpus" / "attention" / "correct"
    codes = [similarity.analyse(path.stem, similarity.sources_of(path, plan.targets), settings)
             for path in sorted(corpus.glob("*.py"))[:2]]
    made = []

    def starter():
        made.append(1)
        return similarity.baseline(plan.targets, settings, plan.source_notebook)

    loaders = [lambda code=code: code for code in codes]
    alone = similarity.compare_loaded(loaders[:1], settings, starter)
    assert alone.compared == (codes[0].student,) and not alone.pairs and not made
    both = similarity.compare_loaded(loaders, settings, starter)
    assert made == [1] and len(both.pairs) == 1
    assert both == similarity.compare(codes, settings, starter())
