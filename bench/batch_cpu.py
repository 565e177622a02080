"""CPU time per kind of process, per submission, for one ``autograder grade`` batch.

    .venv/bin/python bench/batch_cpu.py                       # 100 copies of andi's notebook
    .venv/bin/python bench/batch_cpu.py --n 200 --jobs 2 --assignment encoder
    .venv/bin/python bench/batch_cpu.py --folder CLASS_FOLDER  # a class of your own

The command runs in a wrapper process (the real CLI, in-process) that reads, from /proc, the
CPU time (user + system) of:

- the grader (the command's own process: discovery, resume, writing the files, the class files);
- its grading processes (``--jobs N``: autograder.grading.pool), read just before they end;
- the sandbox's zygote itself, and its workers: the CPU of the children it has reaped
  (``cutime + cstime``: every worker, and what a worker ran), read just before it ends.

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
from autograder.grading import pool
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
        own, workers = times(owned.pid)
        print("CPU zygote", own, file=sys.stderr, flush=True)
        print("CPU workers", workers, file=sys.stderr, flush=True)
    return end_zygote(control, owned, *rest)


pool.GradingPool.close = measured_close
process._end_zygote = measured_end
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


def run(folder, n, assignment, jobs, out):
    command = [sys.executable, "-c", WRAPPER, "grade", str(folder), "-a", assignment, "-o", str(out),
               "--jobs", str(jobs)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - started
    if done.returncode not in (0, 3):  # 3: the grader failed on some student (still measured)
        sys.exit(f"autograder grade failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    cpu = dict.fromkeys(KINDS, 0.0)
    for kind, seconds in re.findall(r"^CPU (\w+) ([\d.]+)$", done.stderr, re.M):
        cpu[kind] += float(seconds)
    graded = len(re.findall(r"^\[\d+/\d+\] ", done.stderr, re.M)) or n
    return wall, cpu, graded


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="copies of andi's notebook (default 100)")
    parser.add_argument("--assignment", default="attention")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--folder", type=Path, help="grade this class folder instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="batch-cpu-") as scratch:
        scratch = Path(scratch)
        folder = args.folder
        if folder is None:
            folder = scratch / "submitted"
            make_class(folder, args.n, args.assignment)
        wall, cpu, graded = run(folder, args.n, args.assignment, args.jobs, scratch / "out")
    print(f"{args.assignment}: {graded} submissions, --jobs {args.jobs}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}: {wall:.1f} s wall, {wall / graded * 1000:.0f} ms/submission")
    total = sum(cpu.values())
    for kind in KINDS:
        print(f"  {NAMES[kind]:<18} {cpu[kind]:8.2f} s CPU  {cpu[kind] / graded * 1000:7.1f} ms/submission"
              f"  {cpu[kind] / total:5.0%}" if total else "")
    print(f"  {'all':<18} {total:8.2f} s CPU  {total / graded * 1000:7.1f} ms/submission")


if __name__ == "__main__":
    main()
