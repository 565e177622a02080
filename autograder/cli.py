"""The ``autograder`` command.

    autograder grade PATH... --assignment NAME --out DIR [--student NAME]... [--jobs N]
                     [--scheduler ADDRESS|local [--scheduler-timeout SECONDS]]
                     [--format text|github] [--junit FILE] [--lang id|en] [--course course.toml]
    autograder checks [--assignment NAME] [--lang id|en] [--course course.toml]
    autograder gradebook OUT... --format csv|moodle|canvas -o FILE [--roster roster.csv]
    autograder bundle gradescope --assignment NAME -o autograder.zip [--course course.toml]
                                 [--extra-index-url URL]

The course file: --course, else $AUTOGRADER_COURSE, else the first course.toml from the
working directory upwards, else the kit's own; the command says which on stderr.

Exit status of ``grade``: 0 when every submission was graded (whatever the scores),
2 for a usage error (unknown assignment, bad course.toml, nothing to grade),
3 when the grader itself faulted on some check or submission (the reports are
still written; summary.json lists the faults).
"""

import argparse
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from autograder import config
from autograder.texts import clean

# rich, the reports and the records are imported where they are used: ``grade`` starts the
# sandbox's zygote (which imports torch, seconds) before them (``_start_zygote``).

EXIT_OK, EXIT_USAGE, EXIT_GRADER_ERROR, EXIT_INTERRUPTED = 0, 2, 3, 130
# What ``grade`` writes into --out (reports.write_student, reports.write_batch, class_report.write),
# named on its last line; scripts/docs.py checks that the line names every file a real run writes.
STUDENT_FILES = ("feedback.md", "feedback.html", "results.json", "record.json")
CLASS_FILES = ("report.html", "report.json", "gradebook.csv", "summary.json")

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
    grade.add_argument("-s", "--student", action="append", metavar="NAME",
                       help="grade only this student of the class folder (repeatable); the "
                            "others' reports in --out stay in the class files")
    grade.add_argument("--scheduler", metavar="ADDRESS",
                       help="grade on a Dask cluster: its scheduler's address "
                            "(tcp://host:8786), or 'local' for a LocalCluster of --jobs processes")
    grade.add_argument("--scheduler-timeout", type=_seconds, metavar="SECONDS",
                       help="with --scheduler ADDRESS: how long to try to reach the scheduler "
                            "before giving up (default: 3)")
    grade.add_argument("--format", choices=("text", "github"), default="text",
                       help="github: also print GitHub Actions annotations (::error per failed "
                            "check) and append a Markdown summary to $GITHUB_STEP_SUMMARY")
    grade.add_argument("--junit", type=Path, metavar="FILE",
                       help="also write the batch as JUnit XML (a testcase per check)")
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
    bundle = commands.add_parser(
        "bundle", help="build an upload for another grading service",
        description="gradescope: the autograder zip (setup.sh, run_autograder, the kit).")
    bundle.add_argument("target", choices=("gradescope",))
    bundle.add_argument("-a", "--assignment", required=True, help="assignment name from course.toml")
    bundle.add_argument("-o", "--output", required=True, type=Path, help="the zip to write")
    bundle.add_argument("--extra-index-url", metavar="URL",
                        help="a package index for setup.sh's pip besides the one pip is configured "
                             "with (e.g. PyTorch's CPU wheels); by default setup.sh names none")
    for sub in (grade, checks, bundle):
        sub.add_argument("--lang", choices=config.LANGUAGES,
                         help="language of student-facing texts (default: course.toml's)")
        sub.add_argument("--course", type=Path,
                         help=f"course file (default: ${config.ENVIRONMENT}, else course.toml in the "
                              "working directory or above, else the kit's own)")
    gradebook = commands.add_parser(
        "gradebook", help="merge several output folders into one semester gradebook",
        description="One row per student, one column per assignment (each OUT is the --out "
                    "of one assignment's grade), as CSV or for Moodle's or Canvas's import.")
    gradebook.add_argument("outs", nargs="+", type=Path, metavar="OUT", help="a grade --out folder")
    gradebook.add_argument("--format", choices=("csv", "moodle", "canvas"), default="csv")
    gradebook.add_argument("-o", "--output", required=True, type=Path, help="the file to write")
    gradebook.add_argument("--roster", type=Path,
                           help="CSV: student plus the LMS identities (name, id, sis_user_id, "
                                "sis_login_id, section, username, email, idnumber)")
    gradebook.add_argument("--lms-id", action="append", default=[], metavar="ASSIGNMENT=ID",
                           help="Canvas: the assignment's id, so its column updates that assignment")
    return parser


def _seconds(value):
    try:
        seconds = float(value)
    except ValueError:
        seconds = None
    if seconds is None or not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, not {value!r}")
    return seconds


def _positive(value):
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {value!r}")
    return int(value)


def main(argv=None):
    status = _main(argv)
    # The command itself (not a caller's test), done: every report is written. The interpreter's
    # tear-down of torch alone takes seconds on a busy machine, so end now, the sandbox first.
    # After a run on Dask (its cluster and client closed by then) the exit handlers still run
    # first: Dask's, and the removal of the spool folder (``launch.spool_root``).
    if argv is None:
        process = sys.modules.get("autograder.sandbox.process")
        if process is not None:
            process.stop()
        if "distributed" in sys.modules and status != EXIT_INTERRUPTED:
            import atexit

            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    return status


def _main(argv):
    args = build_parser().parse_args(argv)
    try:
        if args.command == "grade":
            _start_zygote(args)
    except UsageError as error:
        print(f"autograder: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    from rich.console import Console

    out, err = _console(), Console(stderr=True)
    try:
        if args.command == "gradebook":  # reads records only: no course file
            return gradebook_command(args, err)
        course = config.load(args.course)
        _say(err, f"course: {course.origin}")
        lang = args.lang or course.language
        if args.command == "grade":
            return grade_command(args, course, lang, out, err)
        if args.command == "bundle":
            return bundle_command(args, course, lang, err)
        if args.command == "selfcheck":
            return selfcheck_command(args, course, lang, out)
        return checks_command(args, course, lang, out)
    except (UsageError, config.ConfigError) as error:
        _stop_sandbox()  # started before the arguments were checked against the course
        _say(err, f"autograder: error: {error}", "red")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _stop_sandbox()
        _say(err, "autograder: interrupted", "red")
        return EXIT_INTERRUPTED


def _stop_sandbox():
    """After Ctrl-C outside the batch (e.g. while it was being prepared): no zygote or worker
    outlives the command. Without importing what was not imported (torch)."""
    process = sys.modules.get("autograder.sandbox.process")
    if process is not None:
        process.stop()
        return
    launch = sys.modules.get("autograder.sandbox.launch")
    early = launch.take_early() if launch is not None else None
    if early is not None:
        early.process.kill()


def _say(console, message, style=None):
    """A plain message: no markup, no highlighting, not wrapped (logs get grepped)."""
    console.print(message, style=style, markup=False, highlight=False, soft_wrap=True)


def _console():
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=160)  # logs and pipes: wide enough that ids are not folded
    return console


# -- grade ------------------------------------------------------------------------------------
def grade_command(args, course, lang, out, err):
    if args.assignment not in course.assignments:  # before any slow import
        raise UsageError(f"unknown assignment {args.assignment!r}; {course.path} defines: "
                         f"{', '.join(course.assignments)}")
    folders = [p if Path(p).is_dir() else Path(p).parent for p in args.paths]
    args.out.mkdir(parents=True, exist_ok=True)
    from autograder import imports_uncollected

    with imports_uncollected():  # torch and nbformat: not needed for usage errors
        from autograder import loading, plan as plans
        from autograder.grading import batch
        from autograder.grading.messages import hide_host_paths
        from autograder.grading.pool import GradingPool

    hide_host_paths(*folders, args.out, Path(course.path).parent if getattr(course, "path", None) else None)

    plan = plans.resolve(course, args.assignment, lang)
    if not plan.checks:
        raise UsageError(f"assignment {plan.name!r} has no checks yet")
    submissions = loading.discover(args.paths, plan.name, plan.notebook)
    if not submissions:
        raise UsageError(f"no submissions found under {', '.join(map(str, args.paths))}")
    _make_names_unique(submissions)
    if args.student:
        submissions = _pick_students(submissions, args.student, args.paths)
    for path in args.paths:
        if not Path(path).exists():
            _say(err, f"warning: {path} does not exist; it is reported as a missing submission", "yellow")

    pool = None
    jobs = min(args.jobs or batch.default_jobs(), len(submissions))
    if not args.scheduler and jobs > 1 and GradingPool.possible():
        pool = GradingPool(plan, jobs)  # forked before the progress bar starts its thread
    try:
        return _grade_batch(args, plan, submissions, pool, lang, course, out, err)
    finally:
        if pool is not None:
            pool.close()


def _start_zygote(args):
    """First thing ``grade`` does, before rich, the course file and the kit are imported: start
    the sandbox's zygote, which imports torch on another core while we import ours. Its workers
    see neither the submissions (other students' work) nor the output folder. A LocalCluster's
    worker processes are forks of this one and use it too (their copies of the submissions go
    in the spool root); on a cluster elsewhere each worker process starts its own. A usage error
    found later ends it (``_stop_sandbox``)."""
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} exists and is not a folder")
    if args.scheduler:
        _check_scheduler()
    from autograder.sandbox import launch

    folders = [p if Path(p).is_dir() else Path(p).parent for p in args.paths]
    if not args.scheduler:
        launch.start_early(hide=[*folders, args.out])
    elif args.scheduler == "local":
        launch.start_early(hide=[*folders, args.out, launch.spool_root()])


def _grade_batch(args, plan, submissions, pool, lang, course, out, err):
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    from autograder import reports
    from autograder.grading import batch
    from autograder.records import RESULT_STATUSES

    counts = dict.fromkeys(RESULT_STATUSES, 0)
    written, interrupted = [], False  # the students whose reports this run wrote
    columns = (TextColumn("grading {task.fields[student]:<16}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("[green]full {task.fields[full]}[/] [yellow]partial {task.fields[partial]}[/] "
                          "[red]zero {task.fields[zero]}[/] [bold red]errors {task.fields[errors]}[/]"),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
    # A terminal gets the progress bar; a log or a pipe one readable line per student instead
    # (a bar drawn once at the end, 80 columns wide, reads "0:0… eta 0:0…").
    progress = Progress(*columns, console=err) if err.is_terminal else _LogLines(err, lang)
    with progress:
        task = progress.add_task("grading", total=0, student="", full=0, partial=0, zero=0, errors=0)

        def on_start(todo, reasons, kept):
            progress.update(task, total=len(todo))
            if kept:
                _say(err, f"{kept} report(s) in {args.out} are up to date; grading the other "
                          f"{len(todo)} (--regrade grades everything again)")
            else:  # nothing kept: still say why a record that was there is not
                reasons = {s: why for s, why in reasons.items() if why not in ("no report yet", "--regrade")}
                if reasons:
                    _say(err, f"the reports in {args.out} are out of date; grading again:")
            for why, students in _group(reasons).items():
                _say(err, f"  {why}: {', '.join(map(clean, students))}")

        def on_result(result):
            written.append(result.student)
            counts[result.status] += 1
            progress.update(task, advance=1, student=clean(result.student), full=counts["full"],
                            partial=counts["partial"], zero=counts["zero"] + counts["not_graded"],
                            errors=counts["grader_error"], result=result)

        def on_others(records, outdated):
            _say(err, f"the class files keep {len(records)} other student(s) graded earlier in {args.out}")
            for why, students in _group(outdated).items():
                _say(err, f"  warning: {why} since they were graded: {', '.join(map(clean, students))} "
                          "(grade the whole class to update them)", "yellow")

        lateness = _lateness(plan, submissions, err)
        try:
            graded = batch.run(plan, submissions, args.out, args.jobs, args.regrade, on_start, on_result,
                               sandbox=_isolation, scheduler=args.scheduler, course=course.origin,
                               on_others=on_others, pool=pool, scheduler_timeout=args.scheduler_timeout,
                               lateness=lateness)
        except ConnectionError as error:  # --scheduler: nothing was graded
            raise UsageError(str(error)) from None
        except KeyboardInterrupt:  # batch.run has stopped every worker; the progress bar ends
            interrupted = True
    if interrupted:
        _say(err, f"autograder: interrupted; the reports of the {len(written)} student(s) graded "
                  f"in this run are kept in {args.out}; run the same command again to grade the rest",
             "red")
        return EXIT_INTERRUPTED
    if "rlimits-only" in graded.sandbox:  # on Dask: any worker of several
        _say(err, f"WARNING: student code ran WITHOUT namespace isolation or a separate uid: {graded.sandbox}. "
                  "Only resource limits and time-outs protected this machine.", "bold red")
    elif "no-seccomp" in graded.sandbox.split(" (")[0]:
        _say(err, f"WARNING: student code ran WITHOUT the system-call filter (degraded mode): {graded.sandbox}.",
             "bold red")
    # The table and the Points lines are this run's students (--student, a folder of one): the
    # class files keep everyone else's, who would otherwise fill the terminal on each regrade.
    ours = {s.student for s in submissions}
    mine = [r for r in graded.results if r.student in ours]
    out.print(_score_table(graded, lang, mine))
    _channels(args, graded, lang, err)
    for result in mine:
        print(f"Points {reports.fmt(result.score)}/{reports.fmt(result.max_score)} {clean(result.student)}",
              flush=True)
    _say(out, f"Reports: {args.out / '<student>'}{os.sep} ({', '.join(STUDENT_FILES)}); "
              + "; ".join(str(args.out / name) for name in CLASS_FILES))
    faulted = [clean(r.student) for r in graded.results if r.status == "grader_error"]
    if faulted:
        _say(err, f"autograder: the grader itself failed for {', '.join(faulted)} (see the messages "
                  f"above and 'grader_errors' in {args.out / 'summary.json'})", "red")
        return EXIT_GRADER_ERROR
    return EXIT_OK


def _channels(args, graded, lang, err):
    """The batch in the other formats asked for: GitHub annotations and step summary, JUnit."""
    from dataclasses import replace

    from autograder import reports
    from autograder.reports import kept

    if args.format == "github" or args.junit:  # they show each check's message: the whole records
        graded = replace(graded, results=tuple(kept.full(args.out, r) for r in graded.results))

    if args.format == "github":
        from autograder.channels import github

        for line in github.workflow_commands(graded, lang):
            print(line, flush=True)
        written = github.write_step_summary(graded, lang)
        if written:
            _say(err, f"step summary appended to {written}")
    if args.junit:
        from autograder.channels import junit

        reports.write_atomic(args.junit, junit.junit_xml([graded], lang))
        _say(err, f"JUnit XML: {args.junit}")


def _lateness(plan, submissions, err):
    """{student: late.Lateness}; says which submissions have no readable time."""
    from autograder.grading import batch

    found, problems = batch.late_of(plan, submissions)
    if plan.deadline is None:
        return found
    _say(err, f"deadline {plan.deadline.isoformat()}: {sum(1 for x in found.values() if x.days)} "
              f"late submission(s) with a penalty, {sum(1 for x in found.values() if x.late and not x.days)} "
              "within the grace period")
    for student, why in problems.items():
        _say(err, f"warning: {clean(student)}: {clean(why)}; not checked against the deadline", "yellow")
    untimed = [s.student for s in submissions if s.path and s.student not in found and s.student not in problems]
    if untimed:
        _say(err, f"warning: no timestamp.txt beside the submission of {', '.join(map(clean, untimed))}: "
                  "not checked against the deadline", "yellow")
    return found


def _check_scheduler():
    """Whether distributed is installed, without importing it (~0.6 s of CPU, before the
    zygote starts: it is imported where the cluster is made)."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None:
        raise UsageError("--scheduler needs dask's distributed package (pinned in requirements.txt)") from None


def _pick_students(submissions, names, paths):
    """The submissions of the students named with --student (an unknown name is a usage error)."""
    import difflib

    found = {s.student: s for s in submissions}
    missing = [n for n in names if n not in found]
    if missing:
        hints = []
        for name in missing:
            close = difflib.get_close_matches(name, list(found), n=3)
            hints.append(f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        raise UsageError(f"no student {', '.join(hints)} under {', '.join(map(str, paths))}")
    return [found[n] for n in dict.fromkeys(names)]


def _group(reasons):
    grouped = {}
    for student, why in reasons.items():
        grouped.setdefault(why, []).append(student)
    return grouped


def _isolation():
    """The isolation the workers of this run had, as the sandbox's zygote reported it."""
    from autograder.sandbox.process import sandbox_description

    return sandbox_description()


def _make_names_unique(submissions):
    """Two submissions never share a report folder (e.g. a/x.ipynb and b/x.ipynb)."""
    from autograder import reports

    taken = set()
    for submission in submissions:
        name, number = submission.student, 1
        while reports.student_folder(submission.student) in taken:
            number += 1
            submission.student = f"{name}-{number}"
        taken.add(reports.student_folder(submission.student))


TABLE = {"id": ("mahasiswa", "nilai", "status", "pemeriksaan yang belum lulus"),
         "en": ("student", "score", "status", "failed checks")}


class _LogLines:
    """What the progress bar tells, for a log or a pipe: one line per graded student,
    "[3/259] budi: 40/45 (sebagian, 1.2 s)", with the reason when nothing could be graded or
    the grader failed. The same calls as ``rich.progress.Progress``."""

    def __init__(self, console, lang):
        self.console, self.lang, self.total, self.done = console, lang, 0, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, description, total=0, **fields):
        self.total = total
        return 0

    def update(self, task, total=None, advance=0, result=None, **fields):
        if total is not None:
            self.total = total
        self.done += advance
        if result is None:
            return
        from autograder import reports
        from autograder.reports.class_report import WORDS

        status = WORDS[self.lang][result.status].lower()
        why = reports.no_grade(result, self.lang)
        late = f", late {result.late.days} d −{reports.fmt(result.late_penalty)}" if result.late and result.late.days else ""
        _say(self.console, f"[{self.done}/{self.total}] {clean(result.student)}: {reports.fmt(result.score)}/"
                           f"{reports.fmt(result.max_score)} ({status}{late}, {result.execution_time:.1f} s)"
                           + (f": {clean(why)}" if why else ""))


def _score_table(graded, lang, results=None):
    from rich.markup import escape
    from rich.table import Table

    from autograder import reports
    from autograder.reports.class_report import WORDS

    table = Table(title=f"{graded.assignment}: {graded.title}", title_justify="left")
    student, score, status_, failed_ = TABLE[lang]
    table.add_column(student, overflow="fold")
    table.add_column(score, justify="right", no_wrap=True)
    table.add_column(status_, no_wrap=True)
    table.add_column(failed_, overflow="fold")
    styles = {"full": "green", "partial": "yellow", "zero": "red", "not_graded": "red",
              "grader_error": "bold red"}
    for result in graded.results if results is None else results:
        status = result.status
        if status == "grader_error":
            failed = "; ".join(dict.fromkeys(
                [o.message[lang] for o in result.grader_errors if o.message]
                + ([result.report_error] if result.report_error else [])))
        elif status == "not_graded":
            failed = reports.not_graded(result, lang)
        else:
            failed = ", ".join(result.failed_ids)
        table.add_row(escape(clean(result.student)), f"{reports.fmt(result.score)}/{reports.fmt(result.max_score)}",
                      f"[{styles[status]}]{escape(WORDS[lang][status].lower())}[/]", escape(clean(failed)))
    return table


# -- bundle, gradebook --------------------------------------------------------------------------
def bundle_command(args, course, lang, err):
    from autograder import plan as plans, reports
    from autograder.channels import gradescope

    plan = plans.resolve(course, args.assignment, lang)
    if not plan.checks:
        raise UsageError(f"assignment {plan.name!r} has no checks yet")
    try:
        names = gradescope.bundle(course, plan, args.output, language=args.lang,
                                  extra_index_url=args.extra_index_url)
    except gradescope.BundleError as error:
        raise UsageError(str(error)) from None
    _say(err, f"Gradescope autograder for {plan.name}: {args.output} ({len(names)} files; upload it "
              f"as the assignment's autograder zip)")
    return EXIT_OK


def gradebook_command(args, err):
    from autograder import reports
    from autograder.channels import lms

    try:
        ids = dict(item.split("=", 1) for item in args.lms_id)
    except ValueError:
        raise UsageError("--lms-id takes ASSIGNMENT=ID") from None
    try:
        book = lms.collect(args.outs)
        roster = lms.read_roster(args.roster) if args.roster else None
        text = lms.render(book, args.format, roster, ids)
    except lms.GradebookError as error:
        raise UsageError(str(error)) from None
    reports.write_atomic(args.output, text)
    _say(err, f"gradebook ({args.format}): {args.output}: {len(book.scores)} student(s), "
              f"{', '.join(c.assignment for c in book.columns)}")
    return EXIT_OK


# -- checks -----------------------------------------------------------------------------------
def checks_command(args, course, lang, out):
    from rich.markup import escape
    from rich.table import Table

    from autograder import plan as plans, reports

    names = [args.assignment] if args.assignment else list(course.assignments)
    for name in names:
        plan = plans.resolve(course, name, lang)
        table = Table(title=f"{name}: {plan.title}", title_justify="left",
                      caption=f"{len(plan.checks)} checks, {reports.fmt(plan.max_score)} points"
                      if plan.checks else "no checks yet", caption_justify="left")
        table.add_column("id", no_wrap=True)
        table.add_column("category", no_wrap=True)
        table.add_column("points", justify="right", no_wrap=True)
        table.add_column("target", overflow="fold")
        table.add_column("title", overflow="fold")
        for c in plan.checks:
            table.add_row(c.id, c.category, reports.fmt(c.points), c.target, escape(c.title[lang]))
        out.print(table)
    return EXIT_OK


# -- selfcheck --------------------------------------------------------------------------------
def selfcheck_command(args, course, lang, out):
    from autograder import selfcheck

    path = selfcheck.build(args.out, lang, course.path)
    _say(out, f"Wrote {path}: release it with the notebooks (students put it next to theirs).")
    return EXIT_OK
