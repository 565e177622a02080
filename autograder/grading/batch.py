"""Grade a batch of submissions under one plan: resume what is up to date, grade the rest in
parallel (one thread per job, each driving its own sandboxed worker under its own uid, or
on a Dask cluster: ``autograder.distributed``), write each student's reports as soon as they
are graded, then the class files. The class files cover every student with a record in the
output folder for this assignment, not only this batch's: regrading one student keeps the
others' rows."""

import contextlib
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import torch

from autograder import reports
from autograder.grading import finish as finishing, resume
from autograder.reports import class_report, kept
from autograder.grading.grader import grade, grader_fault, warm_up_shared
from autograder.records import BatchResult


def default_jobs():
    return max(1, len(os.sched_getaffinity(0)))


def grade_many(submissions, plan, jobs=None):
    """Yield each submission's record as soon as it is graded (in completion order).
    A fault while grading one submission becomes that submission's error record.

    ``jobs`` daemon threads each take the next submission and grade it on their own sandbox
    uid slot. Daemon threads, not an executor's: when the consumer stops (Ctrl-C), the ones
    still grading are abandoned and the interpreter does not wait for them at exit (an
    executor's threads are joined, i.e. a hung check's whole time-out); no thread starts
    another submission, and ``run`` has killed their workers (``process.stop``)."""
    submissions = list(submissions)
    todo, done = queue.SimpleQueue(), queue.SimpleQueue()
    for submission in submissions:
        todo.put(submission)
    stopping = threading.Event()

    def work(slot):
        while not stopping.is_set():
            try:
                submission = todo.get_nowait()
            except queue.Empty:
                return
            try:
                result = grade(submission, plan, slot=slot)
            except Exception:  # a fault of the grader: keep the batch going, report it loudly
                if stopping.is_set():
                    return  # abandoned: nobody reads it, and stderr is the console's now
                print(f"grader error on {submission.student}:\n{traceback.format_exc()}", file=sys.stderr)
                result = grader_fault(submission, plan)
            done.put(result)

    threads = [threading.Thread(target=work, args=(slot,), name=f"grade-{slot}", daemon=True)
               for slot in range(min(max(1, jobs or default_jobs()), len(submissions)))]
    for thread in threads:
        thread.start()
    try:
        for _ in submissions:
            yield done.get()
    finally:
        stopping.set()


def _pool_fault(plan):
    def fault(submission, text):
        if "\n" not in text:  # a traceback was printed by the grading process itself
            print(f"grader error on {submission.student}: {text}", file=sys.stderr)
        return grader_fault(submission, plan)
    return fault


def run(plan, submissions, out_dir, jobs=None, regrade=False, on_start=None, on_result=None,
        sandbox=lambda: "unknown", scheduler=None, course=None, on_others=None, pool=None,
        scheduler_timeout=None, lateness=None):
    """Grade ``submissions`` into ``out_dir`` and return the ``BatchResult``. Its records are
    what the class files need of each student (``kept.Slim``; ``kept.full`` reads the whole
    record back from out_dir), so that memory does not grow with the class.

    ``on_start(todo, kept)`` is told which students will be graded and why the others were
    kept; ``on_result(result)`` hears of each record once its reports are written.
    ``sandbox()`` says, after grading, how the workers were isolated. ``scheduler``: a Dask
    scheduler's address, or "local" for a LocalCluster of ``jobs`` worker processes (None:
    threads in this process); ``scheduler_timeout``: seconds to reach it (None:
    ``distributed.CONNECT_SECONDS``). ``course``: which course file, for summary.json.
    ``on_others(records, outdated)`` hears of the records in ``out_dir`` of students outside
    this batch (kept in the class files) and, per student, why one is out of date. ``pool``: a
    ``pool.GradingPool`` forked for ``plan`` grades instead of threads. ``lateness``: {student:
    late.Lateness} (see ``late_of``), kept in each record and taken from its points."""
    lateness = lateness or {}
    out_dir = Path(out_dir)
    jobs = max(1, jobs or default_jobs())
    # The grader's own tensors are tiny; torch's thread pool only makes the jobs contend.
    torch.set_num_threads(1)
    started, clock = datetime.now(timezone.utc), time.monotonic()
    graded, todo, reasons = {}, [], {}
    for submission in submissions:
        expected = resume.fingerprint(submission, plan, lateness.get(submission.student))
        previous, why = (None, "--regrade") if regrade else resume.previous_result(out_dir, submission, expected)
        if previous is not None:
            graded[submission.student] = previous
        else:
            todo.append((submission, expected))
            reasons[submission.student] = why
    if on_start:
        on_start([s for s, _ in todo], reasons, len(graded))
    expected_by_student = dict((s.student, e) for s, e in todo)
    # Each student's code is read for the similarity section as soon as it is graded (in its
    # grading process with --jobs), while the others are still being graded, not all at the
    # end; it waits on disk (a Spool), as the batch keeps only each student's Slim record.
    try:
        similar_inputs = class_report.similarity_inputs(plan, plan.checks)
    except Exception:  # a bad [similarity] table: the class report says so
        similar_inputs = None
    shared = kept.Outcomes()
    graded = {student: kept.slim(record, shared) for student, record in graded.items()}
    cluster = None
    if scheduler and todo:
        from autograder.grading import distributed

        cluster = distributed.DaskGrading(scheduler, jobs, scheduler_timeout, plan=plan)
        sandbox = cluster.sandbox
    tasks = [(s, {"fingerprint": e, "late": lateness.get(s.student)}) for s, e in todo]
    if cluster:
        stream = cluster.grade_many(tasks, plan, similar_inputs)
    elif pool is not None and pool.size:
        stream = pool.grade_many(tasks, plan, _pool_fault(plan), similar_inputs)
    else:
        if todo:
            # While the zygote is still starting (it imports torch, seconds), this process would
            # only wait for it: prepare what the checks share meanwhile (warm_up: Hypothesis,
            # the sizes, the reference modules; a pool did so before forking), as the grading
            # threads would on their first submission. Check by check, until it is ready.
            from autograder.sandbox import launch

            warm_up_shared(plan, until=lambda: not launch.early_starting())
        stream = grade_many([s for s, _ in todo], plan, jobs)
    analysed = kept.Spool()
    try:
        for item in stream:  # in completion order: Finished (grading processes) or a record
            if not isinstance(item, finishing.Finished):
                item = finishing.finish(item.with_changes(fingerprint=expected_by_student[item.student],
                                                          late=lateness.get(item.student)),
                                        plan, similar_inputs, shared)
            # A student's reports are written whole or not at all, and one that is written is
            # counted (``on_result``) before a Ctrl-C held back meanwhile is delivered.
            with _no_interrupt():
                result = _store(out_dir, item, shared)
                graded[result.student] = result
                if on_result:
                    on_result(result)
            if item.code is not None:
                analysed.put_pickled((result.student, result.source), item.code)
    except KeyboardInterrupt:
        # The reports written so far stay (a rerun resumes from them); what is still being
        # graded is dropped, never written: kill its workers now rather than wait for them.
        from autograder.sandbox import process

        stream.close()  # first: no thread starts another submission, none reports a fault
        process.stop()
        analysed.close()
        raise
    except BaseException:
        analysed.close()
        raise
    finally:
        stream.close()
        if cluster:
            cluster.close()
    others = _other_records(out_dir, plan, submissions)
    if others and on_others:
        on_others(others, {r.student: why for r in others if (why := resume.outdated(r, plan))})
    others = [kept.slim(r, shared) for r in others]
    results = _class_order(out_dir, [graded[s.student] for s in submissions], others)
    seconds = time.monotonic() - clock
    timing = {"started": started.isoformat(timespec="seconds"),
              "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "seconds": round(seconds, 3),
              "seconds_per_submission": round(seconds / max(1, len(todo)), 3),
              "graded": len(todo), "jobs": jobs}
    batch = BatchResult(plan.name, plan.title, plan.language, tuple(c.info for c in plan.checks),
                        results, timing, sandbox(), resumed=len(submissions) - len(todo),
                        course=course)
    reports.write_batch(out_dir, batch)
    with analysed:
        class_report.write(out_dir, batch, plan, analysed)
    return batch


def late_of(plan, submissions):
    """({student: late.Lateness}, {student: why its time could not be read}) for the
    submissions with a timestamp.txt, under the plan's deadline (none: nothing is late)."""
    from autograder import late

    found, problems = {}, {}
    if plan.deadline is None:
        return found, problems
    for submission in submissions:
        try:
            when = late.submission_time(submission.path)
        except late.LateError as error:
            problems[submission.student] = str(error)
            continue
        lateness = plan.lateness(submission.student, when)
        if lateness is not None:
            found[submission.student] = lateness
    return found, problems


def _other_records(out_dir, plan, submissions):
    """The readable records in ``out_dir`` of this assignment's students outside the batch."""
    ours = {reports.student_folder(s.student) for s in submissions}
    others = []
    for path in sorted(Path(out_dir).glob("*/record.json")):
        folder = path.parent.name
        if folder in ours:
            continue
        try:
            record = reports.read_record(out_dir, folder)
        except (OSError, ValueError, KeyError, TypeError):
            print(f"warning: {path} is unreadable; that student is left out of the class files",
                  file=sys.stderr)
            continue
        if record.assignment == plan.name and reports.student_folder(record.student) == folder:
            others.append(record)
    return others


def _class_order(out_dir, batch_results, others):
    """Every record of the class: in the previous summary.json's order where it had them
    (a regraded student keeps its row), then the others, then the batch's new students in
    discovery order."""
    by_folder = {reports.student_folder(r.student): r for r in (*others, *batch_results)}
    try:
        previous = json.loads((Path(out_dir) / "summary.json").read_text(encoding="utf-8"))
        order = [s["folder"] for s in previous["students"]]
    except (OSError, ValueError, KeyError, TypeError):
        order = []
    if not others:  # the batch is the whole class: its discovery order
        order = []
    order = [f for f in dict.fromkeys(order) if f in by_folder]
    order += [reports.student_folder(r.student) for r in others]
    order += [reports.student_folder(r.student) for r in batch_results]
    return tuple(by_folder[f] for f in dict.fromkeys(order))


@contextlib.contextmanager
def _no_interrupt():
    """Hold Ctrl-C (SIGINT) back until the block is done, then deliver it. Only the main
    thread can handle signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)  # to whatever handled it before (KeyboardInterrupt)


def _store(out_dir, finished, shared):
    """Write one student's reports (``finish.Finished``) and return the record the batch keeps:
    its Slim record, or the whole one, marked, when a report could not be rendered or written
    (e.g. a full disk or text no encoder accepts); the batch goes on."""
    folder = Path(out_dir) / reports.student_folder(finished.student)
    failure, trace = finished.failure, finished.trace
    try:
        for name, text in finished.files:
            reports.write_atomic(folder / name, text)
    except Exception as error:
        failure, trace = f"{type(error).__name__}: {error}", traceback.format_exc()
    if failure is None:
        return kept.slim(finished.slim, shared)  # its outcomes shared with the others'
    print(f"could not write the reports of {finished.student}:\n{trace}", file=sys.stderr)
    if finished.failure is not None:  # the record is whole, and already marked
        return finished.slim
    return finished.record().with_changes(report_error=failure)
