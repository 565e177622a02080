"""The ``autograder`` command.

    autograder grade PATH... --assignment NAME --out DIR [--jobs N] [--lang id|en] [--course course.toml]
    autograder checks [--assignment NAME] [--lang id|en] [--course course.toml]

Exit status of ``grade``: 0 when every submission was graded (whatever the scores),
2 for a usage error (unknown assignment, bad course.toml, nothing to grade),
3 when the grader itself faulted on some check or submission (the reports are
still written; summary.json lists the faults).
"""

import argparse
import os
import time
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

from autograder import config, report
from autograder.checks.registry import all_assignments, checks_for

EXIT_OK, EXIT_USAGE, EXIT_GRADER_ERROR, EXIT_INTERRUPTED = 0, 2, 3, 130

class UsageError(Exception):
    pass


def build_parser():
    parser = argparse.ArgumentParser(
        prog="autograder", description="Grade Transformer-course submissions in a sandboxed worker.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    grade = commands.add_parser(
        "grade", help="grade submissions and write reports",
        description="Grade notebooks or .py files: single files, student folders, a folder of "
                    "students (<student>/<assignment>/<notebook>), or an nbgrader course root.")
    grade.add_argument("paths", nargs="+", metavar="PATH", help="file or folder to grade")
    grade.add_argument("-a", "--assignment", required=True, help="assignment name from course.toml")
    grade.add_argument("-o", "--out", required=True, type=Path, help="folder for the reports")
    grade.add_argument("-j", "--jobs", type=_positive, metavar="N",
                       help="submissions graded at once (default: one per CPU core)")
    grade.add_argument("--regrade", action="store_true",
                       help="grade everything again, even students whose report in --out is "
                            "up to date (by default an interrupted batch resumes)")
    checks = commands.add_parser("checks", help="list the checks and their points")
    checks.add_argument("-a", "--assignment", help="only this assignment")
    for sub in (grade, checks):
        sub.add_argument("--lang", choices=config.LANGUAGES,
                         help="language of student-facing texts (default: course.toml's)")
        sub.add_argument("--course", type=Path, help=f"course file (default: {config.DEFAULT_PATH})")
    return parser


def _positive(value):
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {value!r}")
    return int(value)


def main(argv=None):
    args = build_parser().parse_args(argv)
    out, err = _console(), Console(stderr=True)
    try:
        course = config.load(args.course)
        lang = args.lang or course.language
        if args.command == "grade":
            return grade_command(args, course, lang, out, err)
        return checks_command(args, course, lang, out)
    except (UsageError, config.ConfigError) as error:
        _say(err, f"autograder: error: {error}", "red")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say(err, "autograder: interrupted", "red")
        return EXIT_INTERRUPTED


def _say(console, message, style=None):
    """A plain message: no markup, no highlighting, not wrapped (logs get grepped)."""
    console.print(message, style=style, markup=False, highlight=False, soft_wrap=True)


def _console():
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=160)  # logs and pipes: wide enough that ids are not folded
    return console


def _assignment(course, name):
    if name not in course.assignments:
        raise UsageError(f"unknown assignment {name!r}; {course.path} defines: "
                         f"{', '.join(course.assignments)}")
    return course.assignments[name]


# -- grade ------------------------------------------------------------------------------------
def grade_command(args, course, lang, out, err):
    assignment = _assignment(course, args.assignment)
    from autograder.sandbox import launch

    # The zygote imports torch on another core while we import ours. Its workers see neither
    # the submissions (other students' work) nor the output folder.
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} exists and is not a folder")
    folders = [p if Path(p).is_dir() else Path(p).parent for p in args.paths]
    args.out.mkdir(parents=True, exist_ok=True)
    launch.start_early(hide=[*folders, args.out])
    from autograder import batch, loader  # torch and nbformat: not needed for usage errors

    checks = checks_for(assignment.name, course)
    if not checks:
        raise UsageError(f"assignment {assignment.name!r} has no checks yet")
    submissions = loader.discover(args.paths, assignment.name, assignment.notebook)
    if not submissions:
        raise UsageError(f"no submissions found under {', '.join(map(str, args.paths))}")
    _make_names_unique(submissions)
    for path in args.paths:
        if not Path(path).exists():
            _say(err, f"warning: {path} does not exist; it is reported as a missing submission", "yellow")

    from autograder import resume

    jobs = args.jobs or batch.default_jobs()
    started, clock = datetime.now(timezone.utc), time.monotonic()
    graded, todo = {}, []
    for submission in submissions:
        submission.fingerprint = resume.fingerprint(submission, checks, lang)
        previous = None if args.regrade else resume.previous_result(
            args.out, submission, checks, submission.fingerprint)
        if previous is not None:
            graded[submission.student] = previous
        else:
            todo.append(submission)
    if graded:
        _say(err, f"{len(graded)} report(s) in {args.out} are up to date; grading the other {len(todo)} "
                  "(--regrade grades everything again)")
    counts = {"full": 0, "partial": 0, "zero": 0, "not_graded": 0, "grader_error": 0}
    columns = (TextColumn("grading {task.fields[student]:<16}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("[green]full {task.fields[full]}[/] [yellow]partial {task.fields[partial]}[/] "
                          "[red]zero {task.fields[zero]}[/] [bold red]errors {task.fields[errors]}[/]"),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
    fingerprints = {s.student: s.fingerprint for s in todo}
    with Progress(*columns, console=err) as progress:
        task = progress.add_task("grading", total=len(todo), student="", full=0, partial=0, zero=0, errors=0)
        for result in batch.grade_many(todo, course, jobs):  # in completion order
            result.fingerprint = fingerprints[result.student]
            report.write_student(args.out, result, lang, assignment.title)
            graded[result.student] = result
            counts[report.status(result)] += 1
            progress.update(task, advance=1, student=result.student, full=counts["full"],
                            partial=counts["partial"], zero=counts["zero"] + counts["not_graded"],
                            errors=counts["grader_error"])
    results = [graded[s.student] for s in submissions]  # back in discovery order
    seconds = time.monotonic() - clock
    timing = {"started": started.isoformat(timespec="seconds"),
              "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "seconds": round(seconds, 3), "seconds_per_submission": round(seconds / len(results), 3),
              "jobs": jobs}
    sandbox = _isolation()
    if sandbox.startswith("rlimits-only"):
        _say(err, f"WARNING: student code ran WITHOUT namespace isolation or a separate uid: {sandbox}. "
                  "Only resource limits and time-outs protected this machine.", "bold red")
    report.write_batch(args.out, results, checks, assignment.name, lang, timing, assignment.title, sandbox)

    out.print(_score_table(results, assignment, lang))
    for result in results:
        print(f"Points {report.fmt(result.score)}/{report.fmt(result.max_score)} {result.student}", flush=True)
    _say(out, f"Reports: {args.out}/<student>/feedback.md and results.json; "
              f"{args.out / 'gradebook.csv'}; {args.out / 'summary.json'}")
    faulted = [r.student for r in results if r.grader_errors]
    if faulted:
        _say(err, f"autograder: the grader itself failed for {', '.join(faulted)} (see the messages "
                  f"above and 'grader_errors' in {args.out / 'summary.json'})", "red")
        return EXIT_GRADER_ERROR
    return EXIT_OK


def _isolation():
    """The isolation the workers of this run had, as the sandbox's zygote reported it."""
    from autograder.sandbox.process import sandbox_mode

    mode = sandbox_mode()
    if mode is None:
        return "none (no student code ran)"
    isolation, reason = mode
    return f"{isolation} ({reason})" if reason else isolation


def _make_names_unique(submissions):
    """Two submissions never share a report folder (e.g. a/x.ipynb and b/x.ipynb)."""
    taken = set()
    for submission in submissions:
        name, number = submission.student, 1
        while report.student_folder(submission.student) in taken:
            number += 1
            submission.student = f"{name}-{number}"
        taken.add(report.student_folder(submission.student))


def _score_table(results, assignment, lang):
    table = Table(title=f"{assignment.name}: {assignment.title}", title_justify="left")
    table.add_column("student", overflow="fold")
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("failed checks", overflow="fold")
    styles = {"full": "green", "partial": "yellow", "zero": "red", "not_graded": "red",
              "grader_error": "bold red"}
    for result in results:
        status = report.status(result)
        if status == "grader_error":
            failed = "; ".join(dict.fromkeys(o.message[lang] for o in result.grader_errors if o.message))
        elif status == "not_graded" and result.problems:
            failed = result.problems[-1][lang]
        else:
            failed = ", ".join(report.failed_ids(result))
        table.add_row(result.student, f"{report.fmt(result.score)}/{report.fmt(result.max_score)}",
                      f"[{styles[status]}]{status}[/]", failed.replace("[", r"\["))
    return table


# -- checks -----------------------------------------------------------------------------------
def checks_command(args, course, lang, out):
    if args.assignment:
        names = [_assignment(course, args.assignment).name]
    else:
        names = list(dict.fromkeys([*course.assignments, *all_assignments()]))
    for name in names:
        checks = checks_for(name, course)
        title = course.assignments[name].title if name in course.assignments else name
        table = Table(title=f"{name}: {title}", title_justify="left",
                      caption=f"{len(checks)} checks, {report.fmt(sum(c.points for c in checks))} points"
                      if checks else "no checks yet", caption_justify="left")
        table.add_column("id", no_wrap=True)
        table.add_column("category", no_wrap=True)
        table.add_column("points", justify="right", no_wrap=True)
        table.add_column("target", overflow="fold")
        table.add_column("title", overflow="fold")
        for c in checks:
            table.add_row(c.id, c.category, report.fmt(c.points), c.target,
                          c.title[lang].replace("[", r"\["))
        out.print(table)
    return EXIT_OK
