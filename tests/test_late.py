"""The late rule (autograder/late.py) and its course.toml keys; tests/test_nbgrader_late.py runs
it through nbgrader and the command line."""

from datetime import datetime, timedelta, timezone

import pytest

from autograder import config, late

DEADLINE = datetime(2026, 3, 1, 23, 59, tzinfo=timezone(timedelta(hours=7)))
POLICY = late.Policy(grace_minutes=30, penalty_per_day=10, max_penalty=50, extensions={"dewi": 3})


@pytest.mark.parametrize("student, after, days, percent", [
    ("ani", timedelta(hours=-1), 0, 0),
    ("ani", timedelta(minutes=30), 0, 0),  # the grace period's last second
    ("ani", timedelta(minutes=30, seconds=1), 1, 10),
    ("ani", timedelta(days=1), 1, 10),
    ("ani", timedelta(days=1, seconds=1), 2, 20),
    ("ani", timedelta(days=30), 30, 50),  # the cap
    ("dewi", timedelta(days=3), 0, 0),  # her extension
    ("dewi", timedelta(days=3, hours=5), 1, 10),
])
def test_started_days_after_grace_and_extension(student, after, days, percent):
    found = late.assess(POLICY, DEADLINE, student, DEADLINE + after)
    assert (found.days, found.percent) == (days, percent)
    assert found.penalty(40) == pytest.approx(40 * percent / 100)
    assert found.late == (after.total_seconds() > (3 * 86400 if student == "dewi" else 0))
    assert late.Lateness.from_json(found.to_json()) == found
    if found.late:  # nbgrader's view: seconds past the extended deadline
        assert late.percent_for(POLICY, found.seconds_late) == percent


def test_no_deadline_or_no_time_is_never_late():
    assert late.assess(POLICY, None, "ani", DEADLINE) is None
    assert late.assess(POLICY, DEADLINE, "ani", None) is None


@pytest.mark.parametrize("text", ["2026-03-01 16:59:00.000000 UTC", "2026-03-01T23:59:00+07:00",
                                  "2026-03-01 16:59:00", "2026-03-01T16:59:00Z"])
def test_timestamps_as_nbgrader_writes_them(text):
    assert late.parse_time(text) == DEADLINE


def test_a_bad_timestamp_names_its_file(tmp_path):
    (tmp_path / "timestamp.txt").write_text("yesterday")
    with pytest.raises(late.LateError, match="timestamp.txt: not a time"):
        late.submission_time(tmp_path / "attention.ipynb")
    assert late.submission_time(tmp_path / "elsewhere" / "attention.ipynb") is None


@pytest.mark.parametrize("text, roster, message", [
    ("[assignments.attention]\ndeadline = 2026-03-01T23:59:00\n", None,
     "assignments.attention.deadline must be a date-time with its UTC offset"),
    ("[assignments.attention]\ndeadline = \"soon\"\n", None, "assignments.attention.deadline must be"),
    ("[late]\nmax_penalty = 150\n[assignments.attention]\n", None, "late.max_penalty must be a number from 0 to 100"),
    ("[late]\npenalty_per_day = -1\n[assignments.attention]\n", None, "late.penalty_per_day must be a number >= 0"),
    ("[late]\nroster = \"r.csv\"\n[assignments.attention]\n", None, "cannot read the roster"),
    ("[late]\nroster = \"r.csv\"\n[assignments.attention]\n", "student,days\nani,1\n",
     "needs the columns 'student' and 'extension_days'"),
    ("[late]\nroster = \"r.csv\"\n[assignments.attention]\n", "student,extension_days\nani,two\n",
     "line 2: extension_days must be a number of days >= 0, not 'two'"),
])
def test_late_settings_are_strict(tmp_path, text, roster, message):
    if roster is not None:
        (tmp_path / "r.csv").write_text(roster)
    (tmp_path / "course.toml").write_text(text)
    with pytest.raises(config.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config.load(tmp_path / "course.toml")


def test_a_course_with_a_deadline_and_a_roster(tmp_path):
    (tmp_path / "r.csv").write_text("student,name,extension_days\nani,Ani,\nbudi,Budi,1.5\n")
    (tmp_path / "course.toml").write_text(
        '[late]\nroster = "r.csv"\npenalty_per_day = 5\n'
        '[assignments.attention]\ndeadline = 2026-03-01T23:59:00+07:00\n')
    course = config.load(tmp_path / "course.toml")
    assert course.late.extensions == {"budi": 1.5} and course.assignments["attention"].deadline == DEADLINE
    from autograder import plan as plans

    plan = plans.resolve(course, "attention")
    assert plan.lateness("budi", DEADLINE + timedelta(days=2)).percent == 5
    other = plans.resolve(config.load(tmp_path / "course.toml"), "attention")
    assert other.fingerprint() == plan.fingerprint()
    (tmp_path / "course.toml").write_text(
        '[late]\nroster = "r.csv"\npenalty_per_day = 10\n'
        '[assignments.attention]\ndeadline = 2026-03-01T23:59:00+07:00\n')
    assert plans.resolve(config.load(tmp_path / "course.toml"), "attention").fingerprint() != plan.fingerprint()


def test_the_command_line_reads_timestamps_and_regrades_when_one_changes(tmp_path):
    """autograder grade: a submission without timestamp.txt is named; a new time (or extension)
    regrades that student only, and says why."""
    import shutil

    from conftest import EXAMPLES, ROOT, run_autograder

    for student in ("andi", "budi"):
        shutil.copytree(EXAMPLES / student / "attention", tmp_path / "class" / student / "attention")
    (tmp_path / "assignments").symlink_to(ROOT / "assignments")  # the source notebooks
    text = (ROOT / "course.toml").read_text().replace(
        'notebook = "attention.ipynb"\n', 'notebook = "attention.ipynb"\ndeadline = 2026-03-01T23:59:00+07:00\n', 1)
    (tmp_path / "course.toml").write_text(text + "\n[late]\npenalty_per_day = 25\n")
    stamp = tmp_path / "class" / "andi" / "attention" / "timestamp.txt"
    stamp.write_text("2026-03-02 17:00:00 UTC\n")  # a day and a minute late: 50%
    args = ("grade", tmp_path / "class", "-a", "attention", "-o", tmp_path / "out", "--course", tmp_path / "course.toml")
    done = run_autograder(*args)
    assert done.returncode == 0, done.stderr
    assert "Points 22.5/45 andi" in done.stdout
    assert "no timestamp.txt beside the submission of budi: not checked against the deadline" in done.stderr
    assert "[2/2] andi: 22.5/45 (penuh, late 2 d −22.5" in done.stderr or \
        "[1/2] andi: 22.5/45 (penuh, late 2 d −22.5" in done.stderr
    stamp.write_text("2026-03-01 16:00:00 UTC\n")
    again = run_autograder(*args)
    assert "its submission time or extension changed: andi" in again.stderr, again.stderr
    assert "Points 45/45 andi" in again.stdout and "[1/1] andi" in again.stderr


def test_the_gradescope_bundle_carries_the_roster_its_course_file_names(tmp_path):
    import zipfile

    from autograder import plan as plans
    from autograder.channels import gradescope

    (tmp_path / "r.csv").write_text("student,extension_days\nani,1\n")
    (tmp_path / "course.toml").write_text(
        '[late]\nroster = "r.csv"\n[assignments.attention]\ndeadline = 2026-03-01T23:59:00+07:00\n')
    course = config.load(tmp_path / "course.toml")
    gradescope.bundle(course, plans.resolve(course, "attention"), tmp_path / "autograder.zip")
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        archive.extractall(tmp_path / "unpacked")
    assert config.load(tmp_path / "unpacked" / "kit" / "course.toml").late.extensions == {"ani": 1.0}
