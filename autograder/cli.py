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

from rich.markup import escape

from autograder import config, report
from autograder.records import RESULT_STATUSES
from autograder.texts import clean

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
    selfcheck = commands.add_parser(
        "selfcheck", help="build the students' self-check file (cek_mandiri.py)",
        description="build: write DIR/cek_mandiri.py, the public checks a student runs from the "
                    "notebook before submitting (torch only; release it with the notebooks).")
    selfcheck.add_argument("action", choices=("build",))
    selfcheck.add_argument("-o", "--out", required=True, type=Path, metavar="DIR",
                           help="folder to write cek_mandiri.py into")
    selfcheck.add_argument("--lang", choices=config.LANGUAGES,
                           help="the self-check's default language (default: course.toml's)")
    selfcheck.add_argument("--course", type=Path, help="course file (default: as for grade)")
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
        if args.command == "selfcheck":
            return selfcheck_command(args, course, lang, out)
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


# -- grade ------------------------------------------------------------------------------------
def grade_command(args, course, lang, out, err):
    if args.assignment not in course.assignments:  # before any slow import
        raise UsageError(f"unknown assignment {args.assignment!r}; {course.path} defines: "
                         f"{', '.join(course.assignments)}")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} exists and is not a folder")
    from autograder.sandbox import launch

    # The zygote imports torch on another core while we import ours. Its workers see neither
    # the submissions (other students' work) nor the output folder.
    folders = [p if Path(p).is_dir() else Path(p).parent for p in args.paths]
    args.out.mkdir(parents=True, exist_ok=True)
    launch.start_early(hide=[*folders, args.out])
    from autograder import batch, loader, plan as plans  # torch and nbformat: not needed for usage errors

    plan = plans.resolve(course, args.assignment, lang)
    if not plan.checks:
        raise UsageError(f"assignment {plan.name!r} has no checks yet")
    submissions = loader.discover(args.paths, plan.name, plan.notebook)
    if not submissions:
        raise UsageError(f"no submissions found under {', '.join(map(str, args.paths))}")
    _make_names_unique(submissions)
    for path in args.paths:
        if not Path(path).exists():
            _say(err, f"warning: {path} does not exist; it is reported as a missing submission", "yellow")

    counts = dict.fromkeys(RESULT_STATUSES, 0)
    columns = (TextColumn("grading {task.fields[student]:<16}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("[green]full {task.fields[full]}[/] [yellow]partial {task.fields[partial]}[/] "
                          "[red]zero {task.fields[zero]}[/] [bold red]errors {task.fields[errors]}[/]"),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, console=err) as progress:
        task = progress.add_task("grading", total=0, student="", full=0, partial=0, zero=0, errors=0)

        def on_start(todo, reasons, kept):
            progress.update(task, total=len(todo))
            if kept:
                _say(err, f"{kept} report(s) in {args.out} are up to date; grading the other "
                          f"{len(todo)} (--regrade grades everything again)")
                for why, students in _group(reasons).items():
                    _say(err, f"  {why}: {', '.join(map(clean, students))}")

        def on_result(result):
            counts[result.status] += 1
            progress.update(task, advance=1, student=clean(result.student), full=counts["full"],
                            partial=counts["partial"], zero=counts["zero"] + counts["not_graded"],
                            errors=counts["grader_error"])

        graded = batch.run(plan, submissions, args.out, args.jobs, args.regrade, on_start, on_result,
                           sandbox=_isolation)
    if graded.sandbox.startswith("rlimits-only"):
        _say(err, f"WARNING: student code ran WITHOUT namespace isolation or a separate uid: {graded.sandbox}. "
                  "Only resource limits and time-outs protected this machine.", "bold red")
    out.print(_score_table(graded, lang))
    for result in graded.results:
        print(f"Points {report.fmt(result.score)}/{report.fmt(result.max_score)} {clean(result.student)}",
              flush=True)
    _say(out, f"Reports: {args.out}/<student>/feedback.md and results.json; "
              f"{args.out / 'gradebook.csv'}; {args.out / 'summary.json'}")
    faulted = [clean(r.student) for r in graded.results if r.status == "grader_error"]
    if faulted:
        _say(err, f"autograder: the grader itself failed for {', '.join(faulted)} (see the messages "
                  f"above and 'grader_errors' in {args.out / 'summary.json'})", "red")
        return EXIT_GRADER_ERROR
    return EXIT_OK


def _group(reasons):
    grouped = {}
    for student, why in reasons.items():
        grouped.setdefault(why, []).append(student)
    return grouped


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


def _score_table(graded, lang):
    table = Table(title=f"{graded.assignment}: {graded.title}", title_justify="left")
    table.add_column("student", overflow="fold")
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("failed checks", overflow="fold")
    styles = {"full": "green", "partial": "yellow", "zero": "red", "not_graded": "red",
              "grader_error": "bold red"}
    for result in graded.results:
        status = result.status
        if status == "grader_error":
            failed = "; ".join(dict.fromkeys(
                [o.message[lang] for o in result.grader_errors if o.message]
                + ([result.report_error] if result.report_error else [])))
        elif status == "not_graded" and result.problems:
            failed = result.problems[-1][lang]
        else:
            failed = ", ".join(result.failed_ids)
        table.add_row(escape(clean(result.student)), f"{report.fmt(result.score)}/{report.fmt(result.max_score)}",
                      f"[{styles[status]}]{status}[/]", escape(clean(failed)))
    return table


# -- checks -----------------------------------------------------------------------------------
def checks_command(args, course, lang, out):
    from autograder import plan as plans

    names = [args.assignment] if args.assignment else list(course.assignments)
    for name in names:
        plan = plans.resolve(course, name, lang)
        table = Table(title=f"{name}: {plan.title}", title_justify="left",
                      caption=f"{len(plan.checks)} checks, {report.fmt(plan.max_score)} points"
                      if plan.checks else "no checks yet", caption_justify="left")
        table.add_column("id", no_wrap=True)
        table.add_column("category", no_wrap=True)
        table.add_column("points", justify="right", no_wrap=True)
        table.add_column("target", overflow="fold")
        table.add_column("title", overflow="fold")
        for c in plan.checks:
            table.add_row(c.id, c.category, report.fmt(c.points), c.target, escape(c.title[lang]))
        out.print(table)
    return EXIT_OK


# -- selfcheck --------------------------------------------------------------------------------
def selfcheck_command(args, course, lang, out):
    from autograder import selfcheck

    path = selfcheck.build(args.out, lang, course.path)
    _say(out, f"Wrote {path}: release it with the notebooks (students put it next to theirs).")
    return EXIT_OK
