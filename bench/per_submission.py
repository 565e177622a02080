"""Milliseconds per submission for each assignment: andi's example notebooks graded in-process
(``autograder.grading.grader.grade``) N times after one warm-up. Prints the wall time and the CPU time of
the grader and its worker together (the latter hardly depends on how loaded the machine is).

    OMP_NUM_THREADS=1 .venv/bin/python bench/per_submission.py [--n 10] [--checks-only]

``--checks-only`` leaves out the advisory steps (diagnoses, pictures).
"""

import argparse
import os
import time
from pathlib import Path

from autograder.grading import grader as grading
from autograder import plan as plans
from autograder.loading import Submission
from autograder.sandbox import session as sessions

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--checks-only", action="store_true")
    options = parser.parse_args()
    worker_cpu = []
    drop = sessions.Session._drop_worker

    def measured_drop(self):
        if self.worker is not None:
            try:
                fields = Path(f"/proc/{self.worker.pid}/stat").read_text().rsplit(")", 1)[1].split()
                worker_cpu.append(sum(int(f) for f in fields[11:15]) / TICK)
            except OSError:
                pass
        drop(self)

    sessions.Session._drop_worker = measured_drop
    if options.checks_only:
        grading._advisory = lambda *args, **kwargs: ()
    for assignment in ("attention", "encoder", "decoder"):
        plan = plans.load(assignment)
        path = ROOT / "examples" / "submissions" / "andi" / assignment / f"{assignment}.ipynb"
        submission = Submission("andi", assignment, path)
        grading.grade(submission, plan)
        walls, cpus = [], []
        for _ in range(options.n):
            worker_cpu.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            result = grading.grade(submission, plan)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu + sum(worker_cpu))
        walls.sort()
        cpus.sort()
        middle = options.n // 2
        print(f"{assignment:10s} {result.score:g}/{result.max_score:g}  wall median {1000 * walls[middle]:.0f} ms"
              f" (min {1000 * walls[0]:.0f})  cpu grader+worker median {1000 * cpus[middle]:.0f} ms"
              f" (min {1000 * cpus[0]:.0f})", flush=True)


if __name__ == "__main__":
    main()
