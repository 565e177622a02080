"""The ``autograder`` command end to end, on the bundled example submissions."""

import csv
import json
import re
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder import config
from autograder import plan as plans
from conftest import EXAMPLES, ROOT, run_autograder

COURSE = config.load()
CHECKS = plans.resolve(COURSE, "attention").checks
POINTS = {c.id: c.points for c in CHECKS}
MAX = sum(POINTS.values())
# Budi leaves out the 1/sqrt(d_k) scale: only checks that compare values with the reference
# may fail; shapes, the API, parameter counts, gradients and the masks' blocked positions pass.
VALUE_CATEGORIES = {"numeric_vs_reference", "dtype", "hidden_config"}
# MultiHeadAttention is graded around the student's own sdpa: only mha.integration pays again.
BUDI_MUST_FAIL = {"sdpa.numeric", "mha.integration"}


def results(out, student):
    return json.loads((out / student / "results.json").read_text(encoding="utf-8"))


def feedback(out, student):
    return (out / student / "feedback.md").read_text(encoding="utf-8")


def failed(result):
    return {t["extra_data"]["check"] for t in result["tests"] if t["status"] == "failed"}


def test_batch_completes_and_prints_points(attention_batch):
    done, out = attention_batch
    assert done.returncode == 0, done.stderr
    points = [line.split() for line in done.stdout.splitlines() if line.startswith("Points ")]
    assert [(p[0], p[2]) for p in points] == [("Points", s) for s in ("andi", "budi", "citra", "dewi")]
    for (_, score, student) in points:
        result = results(out, student)
        assert score == f"{result['score']:g}/{result['max_score']:g}"
    assert str(out / "gradebook.csv") in done.stdout.replace("\n", "")
    assert sorted(p.name for p in out.iterdir() if p.name not in ("report.html", "report.json")) == [
        "andi", "budi", "citra", "dewi", "gradebook.csv", "summary.json"]  # and the class report
    # Not a terminal (a log, CI): one readable line per student, in the course's language, in
    # place of a progress bar squeezed into "0:0… eta 0:0…".
    lines = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in lines] == ["[1/4", "[2/4", "[3/4", "[4/4"]
    by_student = {line.split("] ")[1].split(":")[0]: line for line in lines}
    assert set(by_student) == {"andi", "budi", "citra", "dewi"}
    assert re.fullmatch(rf"\[\d/4\] andi: {MAX:g}/{MAX:g} \(penuh, \d+\.\d s\)", by_student["andi"])
    assert re.search(r"\(tidak dinilai, \d+\.\d s\): notebook rusak: bukan JSON/format notebook yang "
                     r"sah; buka dan simpan ulang di Jupyter: Unterminated string starting at: "
                     r"line 297 column 5 \(char 13574\)$", by_student["citra"]), by_student["citra"]
    assert "eta" not in done.stderr and "…" not in done.stderr


def test_correct_notebook_gets_full_marks(attention_batch):
    _, out = attention_batch
    andi = results(out, "andi")
    assert andi["score"] == andi["max_score"] == MAX
    assert not failed(andi)
    assert andi["output"] == f"Nilai {MAX:g}/{MAX:g}."  # no loading problems: sanity-check cells are not run
    assert "Semua pemeriksaan lulus" in feedback(out, "andi")


def test_missing_scale_loses_exactly_the_numeric_checks(attention_batch):
    _, out = attention_batch
    budi = results(out, "budi")
    category = {c.id: c.category for c in CHECKS}
    assert BUDI_MUST_FAIL <= failed(budi)
    assert {category[c] for c in failed(budi)} <= VALUE_CATEGORIES
    passed = {t["extra_data"]["check"] for t in budi["tests"] if t["status"] == "passed"}
    assert {"sdpa.shape", "mha.shape", "mha.param_count", "sdpa.causal_masking", "mha.numeric"} <= passed
    assert budi["score"] == MAX - sum(POINTS[c] for c in failed(budi))
    numeric = next(t for t in budi["tests"] if t["extra_data"]["check"] == "sdpa.numeric")
    assert numeric["score"] == 0 and "tanpa skala 1/√d_k" in numeric["output"]
    assert "Petunjuk" in numeric["output"]  # the hint comes with the failure
    text = feedback(out, "budi")
    assert "| ✗ | `sdpa.numeric`" in text and "Petunjuk" in text
    assert budi["extra_data"]["diagnosis"][0]["mistake"] == "sdpa.missing_scale"  # named once, at its root
    assert text.count("Kesalahan yang dikenali") == 1


def test_broken_json_gets_zero_and_a_clear_message(attention_batch):
    _, out = attention_batch
    citra = results(out, "citra")
    assert citra["score"] == 0 and citra["max_score"] == MAX
    assert citra["output"].splitlines()[1].startswith("notebook rusak: bukan JSON")
    assert all(t["score"] == 0 and t["status"] == "failed" for t in citra["tests"])
    text = feedback(out, "citra")
    assert f"Nilai: 0/{MAX:g}" in text and "Notebook rusak" in text


def test_syntax_error_is_reported_and_other_cells_still_count(attention_batch):
    _, out = attention_batch
    dewi = results(out, "dewi")
    notebook = json.loads((EXAMPLES / "dewi" / "attention" / "attention.ipynb").read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    cell = next(n for n, source in enumerate(code, 1) if "def causal_mask(t)\n" in source)
    assert "kesalahan sintaks" in dewi["output"]
    assert f"sel {cell}, baris" in dewi["output"] or f"cell {cell}, line" in dewi["output"]  # the cell, in either language
    assert "kesalahan sintaks" in feedback(out, "dewi")
    assert "causal.present" in failed(dewi)
    assert not any(c.startswith(("sdpa.", "mha.")) for c in failed(dewi))


def test_results_json_has_gradescope_fields(attention_batch):
    _, out = attention_batch
    for student in ("andi", "budi", "citra", "dewi"):
        result = results(out, student)
        assert isinstance(result["score"], (int, float)) and isinstance(result["max_score"], (int, float))
        assert isinstance(result["execution_time"], (int, float)) and isinstance(result["output"], str)
        assert [t["extra_data"]["check"] for t in result["tests"]] == [c.id for c in CHECKS]
        for test, check in zip(result["tests"], CHECKS):
            assert set(test) == {"name", "score", "max_score", "status", "output", "visibility",
                                 "extra_data"}
            assert test["name"].startswith(check.id) and check.title["id"] in test["name"]
            assert test["max_score"] == check.points and 0 <= test["score"] <= check.points
            assert test["status"] in ("passed", "failed") and test["visibility"] == "visible"
            extra = {"check": check.id, "category": check.category, "outcome": test["extra_data"]["outcome"]}
            if "diagnosis" in test["extra_data"]:
                extra["diagnosis"] = test["extra_data"]["diagnosis"]
            assert test["extra_data"] == extra
            assert test["extra_data"]["outcome"] in ("passed", "failed", "skipped", "timeout", "error")
            assert (test["output"] == "") == (test["status"] == "passed")
        assert result["score"] == sum(t["score"] for t in result["tests"])


def test_gradebook_and_summary(attention_batch):
    _, out = attention_batch
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", "assignment", "score", "max_score"] + [c.id for c in CHECKS]
    assert [r["student"] for r in rows] == ["andi", "budi", "citra", "dewi"]
    budi = rows[1]
    assert budi["sdpa.numeric"] == "0" and budi["sdpa.shape"] == "1"
    assert float(budi["score"]) == sum(float(budi[c.id]) for c in CHECKS)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["assignment"] == "attention" and summary["language"] == "id"
    assert summary["sandbox"].split()[0] in ("namespaces+uid", "rlimits-only")  # as the zygote said
    assert summary["grader_errors"] == []
    assert summary["counts"]["students"] == 4 and summary["counts"]["full"] == 1
    assert summary["counts"]["not_graded"] == 1
    assert {s["student"]: s["status"] for s in summary["students"]} == {
        "andi": "full", "budi": "partial", "citra": "not_graded", "dewi": "partial"}
    assert summary["timing"]["seconds"] > 0


@pytest.mark.slow  # a batch
def test_lang_en_switches_the_feedback_language(tmp_path):
    notebook = EXAMPLES / "budi" / "attention" / "attention.ipynb"
    same_name = EXAMPLES / "andi" / "attention" / "attention.ipynb"
    done = run_autograder("grade", notebook, same_name, "--assignment", "attention", "--out", tmp_path,
                          "--lang", "en")
    assert done.returncode == 0, done.stderr
    assert results(tmp_path, "attention-2")["score"] == MAX  # two files named alike: two folders
    text = (tmp_path / "attention" / "feedback.md").read_text(encoding="utf-8")  # single file: its stem
    assert "# Feedback" in text and "Where to look" in text and "without the 1/√d_k scale" in text
    assert "Petunjuk" not in text
    result = results(tmp_path, "attention")
    assert result["output"].startswith("Score ")
    assert any(t["name"] == "sdpa.numeric: Values match the reference" for t in result["tests"])
    assert json.loads((tmp_path / "summary.json").read_text())["language"] == "en"


def test_checks_lists_the_registry():
    done = run_autograder("checks", "--assignment", "attention", "--lang", "en")
    assert done.returncode == 0, done.stderr
    assert "sdpa.numeric" in done.stdout and "numeric_vs_reference" in done.stdout
    assert "Values match the reference" in done.stdout
    assert f"{len(CHECKS)} checks, {MAX:g} points" in done.stdout


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "autograder"
    done = subprocess.run([str(script), "checks"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "sdpa.numeric" in done.stdout and "attention" in done.stdout


@pytest.mark.parametrize("args, message", [
    (["grade", "examples/submissions", "--assignment", "nope", "--out", "x"], "unknown assignment 'nope'"),
    (["checks", "--assignment", "nope"], "unknown assignment 'nope'"),
    (["grade", "--assignment", "attention", "--out", "x"], "the following arguments are required: PATH"),
    (["grade", "x.ipynb", "--assignment", "attention", "--out", "x", "--lang", "fr"], "invalid choice"),
    (["grade", "x.ipynb", "--assignment", "attention", "--out", "x", "--jobs", "0"], "whole number >= 1"),
])
def test_usage_errors_exit_2(args, message, tmp_path):
    done = run_autograder(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "x").exists()


def test_bad_course_toml_exits_2_naming_the_key(tmp_path):
    course = tmp_path / "course.toml"
    course.write_text((ROOT / "course.toml").read_text().replace('language = "id"', 'language = "fr"'))
    done = run_autograder("grade", EXAMPLES, "--assignment", "attention", "--out", tmp_path / "out",
                          "--course", course)
    assert done.returncode == 2 and "course.language" in done.stderr
    course.write_text("[course\n")
    done = run_autograder("checks", "--course", course)
    assert done.returncode == 2 and "not valid TOML" in done.stderr


@pytest.mark.slow  # a batch
def test_missing_and_broken_submissions_do_not_stop_the_batch(tmp_path):
    # A notebook whose cell source is a number: valid JSON, but not what any notebook tool writes.
    odd = tmp_path / "in" / "odd.ipynb"
    odd.parent.mkdir()
    odd.write_text(json.dumps({"cells": [{"cell_type": "code", "source": 5, "metadata": {},
                                          "outputs": [], "execution_count": None}],
                               "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    good = EXAMPLES / "andi" / "attention" / "attention.ipynb"
    out = tmp_path / "out"
    done = run_autograder("grade", odd, tmp_path / "absent.ipynb", good, "--assignment", "attention",
                          "--out", out, "--lang", "en")
    assert done.returncode in (0, 3), done.stderr  # 3 if the loader trips over it: a grader fault
    assert "does not exist" in done.stderr
    summary = json.loads((out / "summary.json").read_text())
    odd, absent, good = (results(out, s["folder"]) for s in summary["students"])
    assert summary["students"][0]["student"] == "odd" and odd["score"] == 0
    assert summary["students"][1]["student"].startswith("absent")
    assert absent["score"] == 0 and "not found" in absent["output"]
    assert summary["students"][2]["student"] == "attention"
    assert good["score"] == MAX  # graded after the broken ones
    assert (done.returncode == 3) == (summary["counts"]["grader_error"] > 0)


def test_a_fault_in_a_check_exits_3_and_is_reported(tmp_path):
    """A check that raises (a bug in the grader, not in the student's code) exits 3."""
    course = tmp_path / "course.toml"
    course.write_text('[assignments.faulty]\nnotebook = "attention.ipynb"\n')
    driver = textwrap.dedent("""
        import sys
        from autograder.checks import registry, targets
        from autograder.checks.registry import check
        from autograder.texts import bilingual as text
        registry._load_all()
        t = text("t", "t")
        targets.declare(targets.Target("x", targets.FUNCTION, "faulty", "faulty", print,
                                       targets.Signature("x()")))
        @check("faulty.ok", assignment="faulty", target="x", category="api", points=1, title=t, hint=t)
        def ok(ctx):
            pass
        @check("faulty.bug", assignment="faulty", target="x", category="api", points=2, title=t, hint=t)
        def bug(ctx):
            raise RuntimeError("a bug in the grader")
        from autograder.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", driver, "grade", str(EXAMPLES / "andi" / "attention"), "--assignment",
                           "faulty", "--out", str(out), "--course", str(course), "--lang", "en"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONUTF8": "1"})
    assert done.returncode == 3, done.stdout + done.stderr
    assert "a bug in the grader" in done.stderr and "grader itself failed" in done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["grader_errors"] == [{"student": "attention", "check": "faulty.bug",
                                         "message": "Internal autograder error in this check; "
                                                    "please tell the instructor."}]
    result = results(out, "attention")
    assert result["score"] == 1 and result["max_score"] == 3
    assert "a bug in the grader" not in json.dumps(result)  # tracebacks are for the instructor


def test_examples_are_up_to_date():
    """examples/submissions/ is what examples/make_examples.py makes from the source notebooks."""
    done = subprocess.run([sys.executable, "examples/make_examples.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ci_workflow_parses_and_its_grade_step_runs(tmp_path):
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "grade.yml").read_text(encoding="utf-8"))
    job = workflow["jobs"]["grade"]
    assert workflow[True] == {"push": None, "workflow_dispatch": None}  # YAML 1.1 reads `on` as True
    assert workflow["defaults"]["run"]["shell"] == "bash"
    steps = {step["name"]: step for step in job["steps"]}
    assert steps["Set up Python"]["with"]["python-version"] == "3.11"
    assert steps["Install the kit"]["run"].strip() == "bash kit/scripts/setup.sh --install-only"
    assert steps["Upload the reports"]["with"]["path"] == "reports/"
    # Run the Grade step as GitHub would (bash -eo pipefail), on Andi's notebook, with this kit as kit/.
    (tmp_path / "submission").mkdir()
    notebook = EXAMPLES / "andi" / "attention" / "attention.ipynb"
    (tmp_path / "submission" / "attention.ipynb").write_bytes(notebook.read_bytes())
    (tmp_path / "kit" / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / "kit" / ".venv" / "bin" / "autograder").symlink_to(Path(sys.executable).parent / "autograder")
    (tmp_path / "kit" / "course.toml").symlink_to(ROOT / "course.toml")
    env = {**os.environ, **job["env"], **steps["Grade"]["env"],
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", steps["Grade"]["run"]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith(f"Points {MAX:g}/{MAX:g} attention")  # the grep's line
    assert "::notice title=attention%3A attention::Points" in done.stdout  # --format github
    assert "course: kit/course.toml ($AUTOGRADER_COURSE)" in done.stderr
    assert json.loads((tmp_path / "reports" / "attention" / "results.json").read_text())["score"] == MAX
    assert "# Umpan balik" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert (tmp_path / "reports" / "junit.xml").read_text().startswith("<?xml")


def _failed_checks(reports):
    return {student: sorted(t["extra_data"]["check"] for t in r["tests"] if t["status"] != "passed")
            for student, (r, _, _) in reports.items()}


def _reports_without_timing(out):
    reports = {}
    for path in sorted(out.glob("*/results.json")):
        data = json.loads(path.read_text())
        data.pop("execution_time")
        record = json.loads((path.parent / "record.json").read_text())
        record.pop("execution_time")
        record.pop("fingerprint")  # the submission's bytes: changed on purpose below
        reports[path.parent.name] = data, record, (path.parent / "feedback.md").read_text()
    return reports


def _students_without_timing(out):
    students = json.loads((out / "summary.json").read_text())["students"]
    return [{k: v for k, v in s.items() if k != "execution_time"} for s in students]


def test_a_deleted_report_is_regraded_and_every_other_record_is_kept_exactly(tmp_path, attention_batch):
    done, graded = attention_batch
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    shutil.copytree(graded, out)  # the class graded from EXAMPLES: the same bytes as below
    records = {p.parent.name: p.read_bytes() for p in out.glob("*/record.json")}
    reports = {p.parent.name: p.read_bytes() for p in out.glob("*/feedback.md")}
    before = _students_without_timing(out)
    assert {s["student"]: s["status"] for s in before}["citra"] == "not_graded"
    shutil.rmtree(out / "andi")
    again = run_autograder("grade", EXAMPLES, "-a", "attention", "-o", out)
    assert again.returncode == 0, again.stderr
    assert "3 report(s) in" in again.stderr and "no report yet: andi" in again.stderr
    for student in ("budi", "citra", "dewi"):  # kept as they were, byte for byte
        assert (out / student / "record.json").read_bytes() == records[student]
        assert (out / student / "feedback.md").read_bytes() == reports[student]
    assert _students_without_timing(out) == before  # citra is still not_graded, andi is back


@pytest.mark.slow  # three batches
def test_interrupted_batch_resumes_and_regrading_gives_the_same_reports(tmp_path):
    students = tmp_path / "submitted"
    shutil.copytree(EXAMPLES, students)
    out = tmp_path / "out"
    assert run_autograder("grade", students, "-a", "attention", "-o", out).returncode == 0
    first = _reports_without_timing(out)
    # An interrupted run leaves some reports behind: take one away, change another submission.
    shutil.rmtree(out / "andi")
    notebook = students / "budi" / "attention" / "attention.ipynb"
    data = json.loads(notebook.read_text())
    data["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "Catatan baru."})
    notebook.write_text(json.dumps(data))
    again = run_autograder("grade", students, "-a", "attention", "-o", out)
    assert again.returncode == 0
    assert "2 report(s) in" in again.stderr and "grading the other 2" in again.stderr
    assert _failed_checks(_reports_without_timing(out)) == _failed_checks(first)
    assert _reports_without_timing(out) == first
    regraded = run_autograder("grade", students, "-a", "attention", "-o", out, "--regrade")
    assert regraded.returncode == 0 and "up to date" not in regraded.stderr
    assert _failed_checks(_reports_without_timing(out)) == _failed_checks(first)
    assert _reports_without_timing(out) == first
    assert f"Points {MAX:g}/{MAX:g} andi" in regraded.stdout


def _gradebook(out):
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_regrading_one_student_keeps_everyone_else(tmp_path, attention_batch):
    """grade submitted/budi into the class's OUT updates budi's row and keeps the others'."""
    _, graded = attention_batch
    out, students = tmp_path / "out", tmp_path / "submitted"
    shutil.copytree(graded, out)  # the class, graded from the same bytes
    shutil.copytree(EXAMPLES, students)
    before = _gradebook(out)
    # Budi fixes his notebook (he hands in Andi's), and only Budi is graded again.
    shutil.copy(EXAMPLES / "andi" / "attention" / "attention.ipynb", students / "budi" / "attention" / "attention.ipynb")
    done = run_autograder("grade", students / "budi", "-a", "attention", "-o", out)
    assert done.returncode == 0, done.stderr
    assert "the class files keep 3 other student(s)" in done.stderr
    after = _gradebook(out)
    assert list(after) == ["andi", "budi", "citra", "dewi"]  # same rows, same order
    assert after["budi"]["score"] == f"{MAX:g}" and before["budi"]["score"] != after["budi"]["score"]
    assert {k: after[k] for k in ("andi", "citra", "dewi")} == {k: before[k] for k in ("andi", "citra", "dewi")}
    summary = json.loads((out / "summary.json").read_text())
    assert [s["student"] for s in summary["students"]] == ["andi", "budi", "citra", "dewi"]
    assert summary["counts"]["students"] == 4 and summary["counts"]["full"] == 2
    assert summary["course"].startswith(str(ROOT / "course.toml"))
    # --student picks students out of the class folder; an unknown name is a usage error.
    done = run_autograder("grade", students, "-a", "attention", "-o", out, "--student", "dewi", "--student", "budy")
    assert done.returncode == 2 and "no student 'budy' (did you mean budi?)" in done.stderr
    done = run_autograder("grade", students, "-a", "attention", "-o", out, "--student", "dewi", "--regrade")
    assert done.returncode == 0, done.stderr
    assert "the class files keep 3 other student(s)" in done.stderr
    # Only dewi's line (the class files keep the others; they are not printed again).
    assert [line for line in done.stdout.splitlines() if line.startswith("Points")] == [
        f"Points {after['dewi']['score']}/{MAX:g} dewi"]
    assert [line.split(" (")[0] for line in done.stderr.splitlines() if line.startswith("[")] == [
        f"[1/1] dewi: {after['dewi']['score']}/{MAX:g}"]
    table = done.stdout.split("Points")[0]
    assert "dewi" in table and not any(name in table for name in ("andi", "budi", "citra"))


@pytest.mark.slow  # three batches
def test_a_changed_tolerance_in_a_course_file_found_upwards_regrades_and_says_why(tmp_path):
    course = tmp_path / "course" / "course.toml"
    course.parent.mkdir()
    text = (ROOT / "course.toml").read_text()
    course.write_text(text)
    notebook = EXAMPLES / "andi" / "attention" / "attention.ipynb"
    work = course.parent / "grading"
    work.mkdir()
    first = run_autograder("grade", notebook, "-a", "attention", "-o", "out", cwd=work)
    assert first.returncode == 0, first.stderr
    assert f"course: {course} (found from the working directory)" in first.stderr
    assert json.loads((work / "out" / "summary.json").read_text())["course"].startswith(str(course))
    again = run_autograder("grade", notebook, "-a", "attention", "-o", "out", cwd=work)
    assert "1 report(s) in out are up to date" in again.stderr
    float32 = text.index("[tolerances.float32]")
    course.write_text(text[:float32] + text[float32:].replace("rtol = 1e-4", "rtol = 2e-4", 1))
    changed = run_autograder("grade", notebook, "-a", "attention", "-o", "out", cwd=work)
    assert changed.returncode == 0, changed.stderr
    assert "up to date" not in changed.stderr
    assert "the course settings changed: attention" in changed.stderr


def test_a_misspelt_course_key_exits_2_before_grading(tmp_path):
    course = tmp_path / "course.toml"
    course.write_text((ROOT / "course.toml").read_text().replace("request_timeout", "check_timout"))
    done = run_autograder("grade", EXAMPLES, "-a", "attention", "-o", tmp_path / "out", "--course", course)
    assert done.returncode == 2
    assert "grading.check_timout" in done.stderr and "did you mean grading.request_timeout?" in done.stderr
    assert not (tmp_path / "out").exists()


def test_grade_imports_torch_and_the_grader_without_a_full_collection(tmp_path):
    """Every full collection during those imports walks all the objects made so far (torch's):
    ~0.1-0.2 s of a cold ``autograder grade``. None runs until they are frozen."""
    probe = textwrap.dedent(f"""
        import gc, json, sys
        during = []

        def count(phase, info):
            if phase == "start" and info["generation"] == 2 and "torch" in sys.modules \\
                    and "autograder.grading.pool" not in sys.modules:
                during.append(1)

        gc.callbacks.append(count)
        from autograder import cli
        status = cli.main(["grade", {str(EXAMPLES / "andi" / "attention" / "attention.ipynb")!r},
                           "--assignment", "attention", "--out", {str(tmp_path / "out")!r}, "--jobs", "1"])
        print(json.dumps({{"status": status, "during": len(during), "frozen": gc.get_freeze_count()}}))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == 0 and result["frozen"] > 100_000
    assert result["during"] == 0
