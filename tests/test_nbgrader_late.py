"""Late submissions across the channels, and quiet nbgrader runs, with real nbgrader.

A copy of the released course gets a deadline for attention and a [late] policy in its
course.toml (grace 30 min, 10% per started day, cap 50%, extensions from a roster column).
Five students hand in with nbgrader's timestamp.txt: ani on time, budi (with a bug) 2.5 days
late, citra within the grace period, dewi 5 h past her 3-day extension, eko 10 days late (the
cap). ``nbgrader autograde`` (the kit's CourseLatePenalty plugin), ``export`` and
``generate_feedback`` and ``autograder grade`` on the same submitted/ folder give every student
the same points and penalty; the student's feedback, gradebook.csv, grades.csv and the Moodle
export show the lateness. Every nbgrader command's output (stdout and stderr, unfiltered) holds
no warning but the kit's line for each student who pays a penalty.
"""

import csv
import json
import re
import shutil
import subprocess
import sys

import pytest

from nbgrader_helpers import (
    COURSE_DIR, is_solution, notebook_name, read_notebook, run_nbgrader, strip_solution_markers,
)

DEADLINE = "2026-03-01T23:59:00+07:00"  # 16:59 UTC
STUDENTS = {  # student: (timestamp.txt, extension days, days counted, percent)
    "ani": ("2026-03-01 10:00:00.000000 UTC", None, 0, 0),
    "budi": ("2026-03-04 04:59:00.000000 UTC", None, 3, 30),
    "citra": ("2026-03-01T17:19:00+00:00", None, 0, 0),
    "dewi": ("2026-03-04 21:59:00 UTC", 3, 1, 10),
    "eko": ("2026-03-11 17:00:00 UTC", None, 11, 50),
}
BUG = ("solution_scaled_dot_product_attention", " / math.sqrt(d_k)", "")
LATE = f"""
[late]
grace_minutes = 30
penalty_per_day = 10
max_penalty = 50
roster = "roster.csv"
"""


def late_course(root):
    """root's released course, under a course.toml with a deadline and a [late] policy."""
    course = root.parent / f"{root.name}-late"
    folder = course / "assignments"
    folder.mkdir(parents=True)
    for name in ("source", "release"):
        shutil.copytree(root / name, folder / name)
    for name in ("nbgrader_config.py", "gradebook.db"):
        shutil.copy(root / name, folder / name)
    text = (COURSE_DIR.parent / "course.toml").read_text(encoding="utf-8")
    text = text.replace('notebook = "attention.ipynb"\n', f'notebook = "attention.ipynb"\ndeadline = {DEADLINE}\n', 1)
    (course / "course.toml").write_text(text + LATE, encoding="utf-8")
    rows = ["student,name,extension_days"] + [f"{s},{s.title()},{ext or ''}" for s, (_, ext, _, _) in STUDENTS.items()]
    (course / "roster.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    release = json.loads((folder / "release" / "attention" / "attention.ipynb").read_text(encoding="utf-8"))
    source = {c.id: c for c in read_notebook(folder / "source" / "attention" / "attention.ipynb").cells}
    for student, (stamp, _, _, _) in STUDENTS.items():
        nb = json.loads(json.dumps(release))
        for cell in nb["cells"]:
            if is_solution(cell):
                code = strip_solution_markers(source[cell["id"]].source)
                if student == "budi" and cell["id"] == BUG[0]:
                    code = code.replace(BUG[1], BUG[2])
                cell["source"] = code
        where = folder / "submitted" / student / "attention"
        where.mkdir(parents=True)
        (where / notebook_name("attention")).write_text(json.dumps(nb), encoding="utf-8")
        (where / "timestamp.txt").write_text(stamp + "\n", encoding="utf-8")
    return course


def run_everything(root):
    course = late_course(root)
    folder = course / "assignments"
    runs = {step: run_nbgrader(*args, cwd=folder) for step, args in (
        ("autograde", ("autograde", "attention")), ("export", ("export",)),
        ("feedback", ("generate_feedback", "attention")))}
    checked = course / "validated"  # ani's notebook as a student validates it (kernels run)
    checked.mkdir()
    shutil.copy(folder / "submitted" / "ani" / "attention" / "attention.ipynb", checked)
    shutil.copy(folder / "release" / "attention" / "cek_mandiri.py", checked)
    runs["validate"] = run_nbgrader("validate", checked / "attention.ipynb", cwd=folder)
    with open(folder / "grades.csv", newline="", encoding="utf-8") as handle:
        grades = {row["student_id"]: row for row in csv.DictReader(handle) if row["assignment"] == "attention"}
    out = course / "reports"
    cli = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder / "submitted"),
                          "-a", "attention", "-o", str(out), "--course", str(course / "course.toml")], cwd=course,
                         capture_output=True, text=True, timeout=900)
    one = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder / "submitted"),
                          "-a", "attention", "-o", str(course / "one"), "--student", "budi",
                          "--course", str(course / "course.toml")], cwd=course,
                         capture_output=True, text=True, timeout=900)
    moodle = subprocess.run([sys.executable, "-m", "autograder", "gradebook", str(out), "--format", "moodle",
                             "-o", str(course / "moodle.csv")], cwd=course, capture_output=True, text=True)
    return dict(course=course, runs=runs, grades=grades, cli=cli, one=one, moodle=moodle)


def start_nbgrader_jobs(root, jobs):
    jobs.start("late", run_everything, root)


@pytest.fixture(scope="module")
def late(nbgrader):
    return nbgrader.result("late")


def test_every_channel_takes_the_same_late_penalty(late):
    runs, grades, cli = late["runs"], late["grades"], late["cli"]
    for step in ("autograde", "export", "feedback", "validate"):
        assert runs[step].returncode == 0, (step, runs[step].output[-4000:])
    assert cli.returncode == 0, cli.stderr[-4000:]
    points = {line.split()[2]: float(line.split()[1].split("/")[0])
              for line in cli.stdout.splitlines() if line.startswith("Points ")}
    out = late["course"] / "reports"
    for student, (_, extension, days, percent) in STUDENTS.items():
        record = json.loads((out / student / "record.json").read_text(encoding="utf-8"))
        raw = sum(o["score"] for o in record["outcomes"])
        penalty = round(raw * percent / 100, 6)
        assert record["late"]["days"] == days and record["late"]["percent"] == percent, (student, record["late"])
        assert record["late"]["extension_days"] == (extension or 0)
        row = grades[student]  # nbgrader's own columns, from its late-submission plugin
        assert float(row["raw_score"]) == pytest.approx(raw), student
        assert float(row["late_submission_penalty"]) == pytest.approx(penalty), student
        assert float(row["score"]) == pytest.approx(raw - penalty) == pytest.approx(points[student]), student
        results = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        assert results["score"] == pytest.approx(raw - penalty)
    assert grades["budi"]["raw_score"] != grades["ani"]["raw_score"]  # the bug costs points too
    assert float(grades["eko"]["late_submission_penalty"]) == pytest.approx(45 * 0.5)  # the cap


def test_the_student_and_the_gradebooks_see_the_lateness(late):
    course = late["course"]
    mine = (course / "reports" / "dewi" / "feedback.md").read_text(encoding="utf-8")
    assert "Terlambat 5 jam (perpanjangan 3 hari): dihitung 1 hari, penalti 10% dari nilai, −4.5 poin." in mine
    assert "Dikumpulkan tepat waktu." in (course / "reports" / "ani" / "feedback.md").read_text(encoding="utf-8")
    assert "masih dalam masa tenggang: tanpa penalti" in (course / "reports" / "citra" / "feedback.md").read_text(encoding="utf-8")
    page = (course / "assignments" / "feedback" / "dewi" / "attention" / "attention.html").read_text(encoding="utf-8")
    assert "Late submission penalty (Score: -4.5)" in page  # nbgrader's own line
    assert "Terlambat 5 jam (perpanjangan 3 hari)" in page  # the kit's, in the first hidden cell
    with open(course / "reports" / "gradebook.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert (rows["eko"]["days_late"], rows["eko"]["late_penalty"], rows["eko"]["score"]) == ("11", "22.5", "22.5")
    assert rows["ani"]["days_late"] == "0" and rows["ani"]["submitted"] == "2026-03-01T10:00:00+00:00"
    assert late["moodle"].returncode == 0, late["moodle"].stderr
    with open(course / "moodle.csv", newline="", encoding="utf-8") as handle:
        moodle = {row["Username"]: row for row in csv.DictReader(handle)}
    assert moodle["budi"]["attention"] == late["grades"]["budi"]["score"].removesuffix(".0") or \
        float(moodle["budi"]["attention"]) == pytest.approx(float(late["grades"]["budi"]["score"]))
    assert "penalti 30%" in moodle["budi"]["attention feedback"] and moodle["ani"]["attention feedback"] == ""


def test_nbgrader_runs_warn_only_about_real_problems(late):
    """Unfiltered stdout and stderr of autograde, export, generate_feedback and validate: no
    'Cell output is True', no display_data_priority, no kernel TCP warning, no nbgrader lateness
    lines counted before the extension; one warning per student who pays a penalty."""
    warnings = []
    for step, done in late["runs"].items():
        text = done.stdout + done.stderr
        warnings += [(step, line) for line in text.splitlines() if "WARNING" in line or "Warning" in line]
    for noise in ("Cell output is True", "display_data_priority", "over TCP without encryption", "seconds late"):
        assert not any(noise in line for _, line in warnings), noise
    late_lines = [line for step, line in warnings if step == "autograde" and " late" in line]
    assert len(late_lines) == 3 and all(any(f"] {s} / attention:" in l for l in late_lines)
                                        for s in ("budi", "dewi", "eko")), late_lines
    assert len(warnings) == 3, warnings


def test_one_student_regrade_prints_that_student_only(late):
    one = late["one"]
    assert one.returncode == 0, one.stderr[-3000:]
    assert [l for l in one.stdout.splitlines() if l.startswith("Points ")] == [
        f"Points {late['grades']['budi']['score'].removesuffix('.0')}/45 budi"]
    progress = [l for l in one.stderr.splitlines() if re.match(r"\[\d+/\d+\]", l)]
    assert len(progress) == 1 and progress[0].startswith("[1/1] budi: ") and "late 3 d" in progress[0]
