"""One language at a time: under ``--lang en`` a student reads no Indonesian (assignment titles
included), and under Indonesian no English sentence slips through.

Only prose is searched: code spans, check ids and code identifiers are English by design, and
what a student wrote (their names, their exception messages) is theirs.
"""

import html
import json
import os
import re

import pytest

from autograder.grading import messages
from autograder.checks import catalogue, registry
from autograder.selfcheck import OWN_TEXTS
from conftest import EXAMPLES, run_autograder

SLOW_FIXTURES = {"graded"}  # the examples graded in both languages: their tests are slow (conftest.py)

# Common Indonesian words that no English sentence contains.
INDONESIAN = frozenset("""
    yang dan tidak dengan untuk pada kelas fungsi keluaran masukan nilai pemeriksaan mahasiswa
    lulus gagal dilewati bobot harus bukan petunjuk berkas sel baris kode anda atau ini itu dari
    sudah belum boleh karena dapat bisa jangan tanpa setiap tiap diblokir tersembunyi kesalahan
    perubahan penilaian umpan balik poin masalah blok
""".split())
# Common English function words that no Indonesian sentence contains (terms such as mask,
# token, batch or head are the course's own in both languages).
ENGLISH = frozenset("""
    the of and with must should is are does your when where which was were been this that
    passed failed skipped score check checks look fix file
""".split())
# Students whose attention feedback holds failed and skipped checks, a recognised mistake and a
# loading problem (budi: no 1/√d_k scale; dewi: a syntax error, so causal_mask is missing).
STUDENTS = ("budi", "dewi")


def foreign(text, words):
    """The words of ``words`` in the prose of ``text`` (code spans and ``<...>`` left out)."""
    text = re.sub(r"(`+).*?\1", " ", str(text), flags=re.S)
    return sorted(set(re.findall(r"[A-Za-z]+", text.lower())) & words)


def html_text(page):
    page = re.sub(r"<(style|script|svg)\b.*?</\1>", " ", page, flags=re.S | re.I)
    page = re.sub(r"<code\b.*?</code>", " ", page, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def prose(folder):
    """{what: text} for every student-facing prose field of one student's reports."""
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    found = {"results.json output": results["output"],
             "feedback.md": (folder / "feedback.md").read_text(encoding="utf-8"),
             "feedback.html": html_text((folder / "feedback.html").read_text(encoding="utf-8"))}
    for test in results["tests"]:
        check = test["extra_data"]["check"]
        found[f"results.json {check} name"] = test["name"].removeprefix(f"{check}: ")
        found[f"results.json {check} output"] = test["output"]
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The examples graded in each language: {lang: (completed process, output folder)}."""
    done = {}
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "250"  # one line per table row: no word broken by the wrapping
    try:
        for lang in ("en", "id"):
            out = tmp_path_factory.mktemp(lang) / "attention"
            paths = [EXAMPLES / student for student in STUDENTS]
            # the CI channels too: annotations, the step summary and JUnit, in the same language
            os.environ["GITHUB_STEP_SUMMARY"] = str(out.parent / "step_summary.md")
            done[lang] = run_autograder("grade", *paths, "--assignment", "attention", "--out", out,
                                        "--lang", lang, "--jobs", "2", "--format", "github",
                                        "--junit", out.parent / "junit.xml"), out
    finally:
        os.environ.pop("GITHUB_STEP_SUMMARY", None)
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return done


def test_english_feedback_has_no_indonesian(graded):
    process, out = graded["en"]
    assert process.returncode == 0, process.stderr
    for student in STUDENTS:
        texts = prose(out / student)
        assert "✗" in texts["feedback.md"]  # failures, so their messages and hints are read too
        for what, text in texts.items():
            assert not foreign(text, INDONESIAN), f"{student} {what}: {text}"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["title"] == "Scaled dot-product attention and multi-head attention"
    assert (out / "budi" / "feedback.md").read_text(encoding="utf-8").startswith(
        "# Feedback: Scaled dot-product attention and multi-head attention")
    # the terminal: the table's title line and rows (failed checks, loading problems)
    assert not foreign(process.stdout, INDONESIAN), process.stdout
    assert "attention: Scaled dot-product attention and multi-head attention" in process.stdout


def test_indonesian_feedback_has_no_english_sentences(graded):
    process, out = graded["id"]
    assert process.returncode == 0, process.stderr
    for student in STUDENTS:
        texts = prose(out / student)
        assert "✗" in texts["feedback.md"]
        for what, text in texts.items():
            assert not foreign(text, ENGLISH), f"{student} {what}: {text}"
    assert (out / "budi" / "feedback.md").read_text(encoding="utf-8").startswith(
        "# Umpan balik: Scaled dot-product attention dan multi-head attention")


def channel_texts(process, out):
    """{what: text} of what the class and CI see: the class report's rows (loading problems
    included), the GitHub annotations (titles and messages), the step summary and JUnit."""
    page = (out / "report.html").read_text(encoding="utf-8")  # without the students' code
    found = {"report.html": html_text(re.sub(r"<pre\b.*?</pre>", " ", page, flags=re.S | re.I))}
    for number, line in enumerate(process.stdout.splitlines()):
        match = re.match(r"::(error|warning|notice)(?: ([^:]*))?::(.*)$", line)
        if match and match.group(1) != "notice":  # the notice is the fixed `Points a/b` line
            title = re.sub(r"%[0-9A-F]{2}", " ", match.group(2) or "")
            found[f"annotation {number} title"] = title
            found[f"annotation {number}"] = re.sub(r"%[0-9A-F]{2}", " ", match.group(3))
    found["step summary"] = (out.parent / "step_summary.md").read_text(encoding="utf-8")
    junit = (out.parent / "junit.xml").read_text(encoding="utf-8")
    for number, name in enumerate(re.findall(r'<testcase name="([^"]*)"|message="([^"]*)"', junit)):
        found[f"junit attribute {number}"] = html.unescape(" ".join(name))
    junit = re.sub(r"<properties>.*?</properties>", " ", junit, flags=re.S)
    found["junit texts"] = html.unescape(re.sub(r"<[^>]+>", " ", junit))
    return found


@pytest.mark.parametrize("lang, words", [("en", INDONESIAN), ("id", ENGLISH)])
def test_class_report_and_ci_channels_are_in_one_language(graded, lang, words):
    """The class report (its loading problems too), the GitHub annotations and step summary,
    and the JUnit titles and messages: all in the language graded in."""
    process, out = graded[lang]
    assert process.returncode == 0, process.stderr
    texts = channel_texts(process, out)
    assert any(k.startswith("annotation") for k in texts), process.stdout
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert any(s["problems"] for s in report["students"])  # dewi's syntax error is read too
    slips = [f"{what}: {text!r} ({', '.join(foreign(text, words))})"
             for what, text in texts.items() if foreign(text, words)]
    assert not slips, "\n".join(slips)


def _every_text():
    """(where, Bilingual) for the student-facing texts the examples may not reach."""
    for assignment in registry.all_assignments():
        for check in registry.declared(assignment):
            yield f"{check.id} title", check.title
            yield f"{check.id} hint", check.hint
    for mistake in catalogue.CATALOGUE:
        yield f"mistake {mistake.id} title", mistake.title
        yield f"mistake {mistake.id} hint", mistake.hint
    for check_id, (title, hint) in OWN_TEXTS.items():
        yield f"self-check {check_id} title", title
        yield f"self-check {check_id} hint", hint
    for code, text in messages.LOAD_PROBLEMS.items():
        yield f"load problem {code}", text
    places = [("cell 4", 3), ("cell 4", 7), ("cell given_attention", 2)]
    problems = [{"code": "dropped", "places": places},
                {"code": "unavailable_module", "detail": "einops", "places": places},
                {"code": "syntax_error", "detail": "invalid syntax", "places": places}]
    for code in ("changed_cell", "deleted_cell"):
        for kind in messages.KIND_NAMES:
            problems.append({"code": code, "detail": "check_causal_mask", "kind": kind})
            problems.append({"code": code, "detail": "imports", "kind": kind, "names": ["helper"]})
    for problem in problems:
        yield f"load problem {problem}", messages.load_problem(problem)
    error = {"type": "RuntimeError", "message": "",
             "where": ["cell 4, line 18, in forward", "cell 4, line 9, in <module>"]}
    yield "student error", messages.student_error(error)
    yield "student error in a cell", messages.student_error(error, origin="cell 4")

    class Failure:
        def __init__(self, kind):
            self.kind, self.detail = kind, "signal 9"

    for kind in ("timeout", "load_timeout", "crashed", "gave_up", "protocol"):
        yield f"worker failure {kind}", messages.worker_failure(Failure(kind))
    from autograder.channels import github
    from autograder.reports.words import NOT_GRADED
    from autograder.texts import Bilingual

    for table in (NOT_GRADED, github.WORDS):  # the reports' and channels' own words
        for key in table["en"]:
            yield f"words {key}", Bilingual(table["id"][key], table["en"][key])


@pytest.mark.parametrize("lang, words", [("en", INDONESIAN), ("id", ENGLISH)])
def test_every_student_facing_text_is_in_one_language(lang, words):
    """Every check's title and hint, every mistake, the self-check's own texts and the loading
    and crash messages: each language's text holds no common word of the other."""
    slips = [f"{where}: {text[lang]!r} ({', '.join(foreign(text[lang], words))})"
             for where, text in _every_text() if foreign(text[lang], words)]
    assert not slips, "\n".join(slips)
