"""Where one submission's time goes: andi's example notebook of each assignment graded in this
process with the real sandbox, ``--n`` times after one warm-up, the median run printed.

    OMP_NUM_THREADS=1 .venv/bin/python bench/profile_submission.py [--n 5] [ASSIGNMENT...]

Per assignment: the CPU milliseconds of the grader (this process) and of each worker (the
grading worker, then the fresh one that replays the recorded calls), the worker's minor page
faults, the forks, and the round trips by request kind with the wall time spent waiting for
them; then the in-process cost of the parts the issue suspected (``torch.manual_seed``, a
reference module built with PyTorch's random initialisation, on ``meta`` then ``to_empty``,
and a Linear built by ``torch.nn.utils.skip_init``), so that a change is measured, not guessed.
"""

import argparse
import collections
import statistics
import time
from pathlib import Path

import torch

from autograder import plan as plans
from autograder.grading import grader
from autograder.loading import Submission
from autograder.sandbox import process, session as sessions

ROOT = Path(__file__).resolve().parent.parent


class Meter:
    """Counts round trips (by op) and forks, and reads each worker's CPU time as it ends."""

    def __init__(self):
        self.trips, self.waits, self.workers, self.faults = (collections.Counter(), collections.Counter(),
                                                             [], [])
        request, spawn, drop = process.WorkerConnection.request, process.Zygote.spawn, sessions.Session._drop_worker
        meter = self

        def measured_request(connection, message, timeout):
            op = message.get("op")
            if op == "batch":
                op = "batch of " + "+".join(sorted({str(r.get("op")) for r in message.get("requests", [])}))
            started = time.perf_counter()
            try:
                return request(connection, message, timeout)
            finally:
                meter.trips[op] += 1
                meter.waits[op] += time.perf_counter() - started

        def measured_spawn(zygote, *args, **kwargs):
            meter.trips["(fork)"] += 1
            return spawn(zygote, *args, **kwargs)

        def measured_drop(session):
            if session.worker is not None:
                try:
                    pid = session.worker.pid
                    meter.workers.append(int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6)
                    meter.faults.append(int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7]))
                except (OSError, ValueError, IndexError):
                    pass
            drop(session)

        process.WorkerConnection.request = measured_request
        process.Zygote.spawn = measured_spawn
        sessions.Session._drop_worker = measured_drop

    def clear(self):
        self.trips.clear(), self.waits.clear(), self.workers.clear(), self.faults.clear()


def profile(assignment, n, meter):
    plan = plans.load(assignment)
    path = ROOT / "examples" / "submissions" / "andi" / assignment / f"{assignment}.ipynb"
    submission = Submission("andi", assignment, path)
    grader.grade(submission, plan)
    runs = []
    for _ in range(n):
        meter.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        result = grader.grade(submission, plan)
        wall, cpu = (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000
        runs.append((cpu + sum(meter.workers), wall, cpu, list(meter.workers), list(meter.faults),
                     collections.Counter(meter.trips), collections.Counter(meter.waits)))
    runs.sort(key=lambda run: run[0])
    total, wall, cpu, workers, faults, trips, waits = runs[len(runs) // 2]
    print(f"{assignment}: {result.score:g}/{result.max_score:g}; CPU {total:.0f} ms = grader {cpu:.0f} + "
          f"workers {' + '.join(f'{w:.0f}' for w in workers)} (minor faults {faults}); wall {wall:.0f} ms; "
          f"{sum(v for k, v in trips.items() if k != '(fork)')} round trips, {trips['(fork)']} forks")
    for op, count in trips.most_common():
        if op != "(fork)":
            print(f"    {op:24s} {count:4d}  {waits[op] * 1000:7.1f} ms waited")


def per_call_ms(function, repeat=200):
    function()
    started = time.perf_counter()
    for _ in range(repeat):
        function()
    return (time.perf_counter() - started) / repeat * 1000


def suspects():
    import solutions

    def on_meta():
        with torch.device("meta"):
            return solutions.MultiHeadAttention(16, 4)

    print("in-process costs (ms per call):")
    print(f"    torch.manual_seed {per_call_ms(lambda: torch.manual_seed(1)):.3f}, "
          f"torch.default_generator.manual_seed {per_call_ms(lambda: torch.default_generator.manual_seed(1)):.4f}")
    print(f"    MultiHeadAttention(16, 4): random init {per_call_ms(lambda: solutions.MultiHeadAttention(16, 4)):.3f}, "
          f"on meta then to_empty {per_call_ms(lambda: on_meta().to_empty(device='cpu')):.3f}")
    print(f"    Linear(16, 16): random init {per_call_ms(lambda: torch.nn.Linear(16, 16)):.3f}, "
          f"skip_init {per_call_ms(lambda: torch.nn.utils.skip_init(torch.nn.Linear, 16, 16)):.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", default=["attention", "encoder", "decoder"])
    parser.add_argument("--n", type=int, default=5)
    options = parser.parse_args()
    torch.set_num_threads(1)  # as the CLI's grader
    meter = Meter()
    for assignment in options.assignments:
        profile(assignment, options.n, meter)
    suspects()


if __name__ == "__main__":
    main()
