"""CPU time per kind of process, per submission, for one ``autograder grade`` batch.

    .venv/bin/python bench/batch_cpu.py                       # 100 copies of andi's notebook
    .venv/bin/python bench/batch_cpu.py --n 200 --jobs 2 --assignment encoder
    .venv/bin/python bench/batch_cpu.py --folder CLASS_FOLDER  # a class of your own
    .venv/bin/python bench/batch_cpu.py --kit /tmp/old-checkout  # another commit's kit, to compare

Each kind's CPU is split into what it spent before the batch started grading (imports, the
zygote's start up to its "ready", however late that comes: fixed) and what it spent after,
per submission. The command runs in a
wrapper process (the real CLI, in-process) that reads, from /proc, the
CPU time (user + system) of:

- the grader (the command's own process: discovery, resume, writing the files, the class files);
- its grading processes (``--jobs N``: autograder.grading.pool), read just before they end;
- the sandbox's zygote itself, read just before it ends;
- the sandbox's workers: each one's process tree, read as it is closed (the zygote ignores
  SIGCHLD, so no process's ``cutime`` holds them); a worker already gone then (killed after a
  time-out) is counted as 0 and the number of those is printed.

Wall time is printed beside it: on a busy machine it says little, the CPU times more.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WRAPPER = r'''
import os, sys
from autograder.grading import batch, pool
from autograder.sandbox import process
from autograder.cli import main

TICK = os.sysconf("SC_CLK_TCK")


def times(pid):
    """(own CPU seconds, reaped children's CPU seconds) of ``pid``, from /proc."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK, (int(fields[13]) + int(fields[14])) / TICK


close = pool.GradingPool.close


def measured_close(self):
    for pid in list(self._children):
        print("CPU grading", times(pid)[0], file=sys.stderr, flush=True)
    close(self)


end_zygote = process._end_zygote


def measured_end(control, owned, *rest):
    if owned is not None and owned.poll() is None:
        print("CPU zygote", times(owned.pid)[0], file=sys.stderr, flush=True)
    return end_zygote(control, owned, *rest)


# The zygote ignores SIGCHLD (the kernel reaps its workers), so their time is in no one's
# cutime: each worker's is read as it is closed (its process tree, from /proc), in the
# process that talked to it (a grading process, a thread of the grader).
close_worker = process.WorkerConnection.close


def measured_worker_close(self):
    if not self._closed:
        seconds = self.cpu_seconds()
        if seconds is not None:
            print("CPU workers", seconds, file=sys.stderr, flush=True)
        else:
            print("CPU gone 1", file=sys.stderr, flush=True)
    close_worker(self)


def zygote_pid():
    from autograder.sandbox import launch

    owned = process._zygote.process if process._zygote is not None else None
    owned = owned or (launch._early.process if launch._early is not None else None)
    return owned.pid if owned is not None else None


zygote_init = process.Zygote.__init__


def measured_ready(self, *args, **kwargs):
    """The zygote's start (torch imported, warmed up, its isolation probed) is fixed cost:
    read its CPU as it says it is ready. At ``batch.run`` it may still be starting (the CLI
    starts it first thing), and that time is not the submissions'."""
    zygote_init(self, *args, **kwargs)
    if self.process is not None:
        print("READY zygote", times(self.process.pid)[0], file=sys.stderr, flush=True)


batch_run = batch.run


def measured_run(*args, **kwargs):
    """What was spent before the batch started grading (imports, the zygote's start)."""
    own = os.times()
    print("START grader", own.user + own.system, file=sys.stderr, flush=True)
    if zygote_pid() is not None:
        print("START zygote", times(zygote_pid())[0], file=sys.stderr, flush=True)
    return batch_run(*args, **kwargs)


batch.run = measured_run
pool.GradingPool.close = measured_close
process._end_zygote = measured_end
process.Zygote.__init__ = measured_ready
process.WorkerConnection.close = measured_worker_close
try:
    status = main(sys.argv[1:])
finally:
    process.close_shared()  # the zygote ends here (measured), not at exit
    own = os.times()
    print("CPU grader", own.user + own.system, file=sys.stderr, flush=True)
sys.exit(status)
'''

KINDS = ("grader", "grading", "workers", "zygote")
NAMES = {"grader": "grader (parent)", "grading": "grading processes", "workers": "sandbox workers",
         "zygote": "zygote itself"}


def make_class(folder, n, assignment):
    notebook = ROOT / "examples" / "submissions" / "andi" / assignment / f"{assignment}.ipynb"
    for i in range(n):
        target = folder / f"s{i:04d}" / assignment
        target.mkdir(parents=True)
        shutil.copy(notebook, target / notebook.name)


def run(folder, n, assignment, jobs, out, kit=ROOT):
    command = [sys.executable, "-c", WRAPPER, "grade", str(folder), "-a", assignment, "-o", str(out),
               "--jobs", str(jobs)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=kit, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(kit)})
    wall = time.monotonic() - started
    if done.returncode not in (0, 3):  # 3: the grader failed on some student (still measured)
        sys.exit(f"autograder grade failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    cpu, start = dict.fromkeys((*KINDS, "gone"), 0.0), dict.fromkeys(KINDS, 0.0)
    for kind, seconds in re.findall(r"^CPU (\w+) ([\d.]+)$", done.stderr, re.M):
        cpu[kind] += float(seconds)
    for kind, seconds in re.findall(r"^(?:START|READY) (\w+) ([\d.]+)$", done.stderr, re.M):
        start[kind] = max(start[kind], float(seconds))
    graded = len(re.findall(r"^\[\d+/\d+\] ", done.stderr, re.M)) or n
    return wall, cpu, start, graded, len(re.findall(r"^CPU workers ", done.stderr, re.M))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="copies of andi's notebook (default 100)")
    parser.add_argument("--assignment", default="attention")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--folder", type=Path, help="grade this class folder instead")
    parser.add_argument("--kit", type=Path, default=ROOT,
                        help="the checkout of the kit to measure (default: this one), e.g. an older commit's")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="batch-cpu-") as scratch:
        scratch = Path(scratch)
        folder = args.folder
        if folder is None:
            folder = scratch / "submitted"
            make_class(folder, args.n, args.assignment)
        wall, cpu, start, graded, workers = run(folder, args.n, args.assignment, args.jobs, scratch / "out",
                                                  args.kit.resolve())
    print(f"{args.assignment}: {graded} submissions, --jobs {args.jobs}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}: {wall:.1f} s wall, {wall / graded * 1000:.0f} ms/submission")
    total, before = sum(cpu[kind] for kind in KINDS), sum(start.values())
    print(f"  {'CPU seconds':<18} {'in all':>8} {'before grading':>15} {'per submission after':>21}")
    for kind in KINDS:
        print(f"  {NAMES[kind]:<18} {cpu[kind]:8.2f} {start[kind]:15.2f} "
              f"{(cpu[kind] - start[kind]) / graded * 1000:18.1f} ms  ({(cpu[kind] - start[kind]) / max(total - before, 1e-9):4.0%})")
    print(f"  {'all':<18} {total:8.2f} {before:15.2f} {(total - before) / graded * 1000:18.1f} ms")
    print(f"  ({workers} workers read, {workers / graded:.1f} per submission; {cpu['gone']:.0f} more "
          "already gone when closed, not counted)")


if __name__ == "__main__":
    main()
