"""Where one submission's time goes: andi's example notebook of each assignment graded in this
process with the real sandbox, ``--n`` times after one warm-up, the median run printed.

    OMP_NUM_THREADS=1 .venv/bin/python bench/profile_submission.py [--n 5] [ASSIGNMENT...]

Per assignment: the CPU milliseconds of the grader (this process) and of each worker (the
grading worker, then the fresh one that replays the recorded calls), the worker's minor page
faults, the forks, and the round trips by request kind with the wall time spent waiting for
them; then the in-process cost of the parts the issue suspected (``torch.manual_seed``, a
reference module built with PyTorch's random initialisation, on ``meta`` then ``to_empty``,
and a Linear built by ``torch.nn.utils.skip_init``), so that a change is measured, not guessed.

Last, per request kind: the CPU a sandboxed worker spends answering it (its frame read and
written included) and the minor page faults that took, against the CPU of the same handler
run in this process by the in-process worker (``sandbox/inprocess.py``: no frame, no fork),
over the same ``--n`` gradings. A ping, all frame and no work, says what the frame costs.
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


def _op_name(message):
    op = message.get("op")
    if op == "batch":
        op = "batch of " + "+".join(sorted({str(r.get("op")) for r in message.get("requests", [])}))
    return op


def _worker_cpu_ms_and_faults(pid):
    """(CPU milliseconds, minor page faults) of process ``pid`` so far."""
    cpu = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6
    return cpu, int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


class Meter:
    """Counts round trips (by op) and forks, reads each worker's CPU time as it ends, and sums
    the worker CPU and page faults each kind of request took (``by_kind``, all runs)."""

    def __init__(self):
        self.trips, self.waits, self.workers, self.faults = (collections.Counter(), collections.Counter(),
                                                             [], [])
        self.by_kind = collections.defaultdict(lambda: [0, 0.0, 0])  # kind -> [requests, CPU ms, faults]
        request, spawn, drop = process.WorkerConnection.request, process.Zygote.spawn, sessions.Session._drop_worker
        meter = self

        def measured_request(connection, message, timeout):
            op = _op_name(message)
            try:
                before = _worker_cpu_ms_and_faults(connection.pid)
            except (OSError, ValueError, IndexError):
                before = None
            started = time.perf_counter()
            try:
                return request(connection, message, timeout)
            finally:
                meter.trips[op] += 1
                meter.waits[op] += time.perf_counter() - started
                try:
                    after = _worker_cpu_ms_and_faults(connection.pid)
                except (OSError, ValueError, IndexError):
                    after = None
                if before and after:
                    kind = meter.by_kind[op]
                    kind[0] += 1
                    kind[1] += after[0] - before[0]
                    kind[2] += after[1] - before[1]

        def measured_spawn(zygote, *args, **kwargs):
            meter.trips["(fork)"] += 1
            return spawn(zygote, *args, **kwargs)

        def measured_drop(session):
            if session.worker is not None:
                try:
                    cpu, faults = _worker_cpu_ms_and_faults(session.worker.pid)
                    meter.workers.append(cpu)
                    meter.faults.append(faults)
                except (OSError, ValueError, IndexError):
                    pass
            drop(session)

        process.WorkerConnection.request = measured_request
        process.Zygote.spawn = measured_spawn
        sessions.Session._drop_worker = measured_drop

    def clear(self):
        self.trips.clear(), self.waits.clear(), self.workers.clear(), self.faults.clear()

    def clear_kinds(self):
        self.by_kind.clear()


def profile(assignment, n, meter):
    plan = plans.load(assignment)
    path = ROOT / "examples" / "submissions" / "andi" / assignment / f"{assignment}.ipynb"
    submission = Submission("andi", assignment, path)
    grader.grade(submission, plan)
    meter.clear_kinds()
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
    return {op: tuple(kind) for op, kind in meter.by_kind.items()}


def in_process_by_kind(assignment, n):
    """{request kind: [requests, CPU ms]} of the in-process worker's handlers, over ``n``
    gradings of andi's notebook after one warm-up (call after every sandboxed measurement:
    ``without_sandbox`` holds for the rest of this process)."""
    from autograder.sandbox import inprocess

    inprocess.without_sandbox()
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    request = inprocess._Connection.request

    def measured(connection, message, timeout):
        started = time.thread_time()
        try:
            return request(connection, message, timeout)
        finally:
            kind = by_kind[_op_name(message)]
            kind[0] += 1
            kind[1] += (time.thread_time() - started) * 1000

    inprocess._Connection.request = measured
    try:
        plan = plans.load(assignment)
        submission = Submission("andi", assignment, ROOT / "examples" / "submissions" / "andi" / assignment
                                / f"{assignment}.ipynb")
        grader.grade(submission, plan)
        by_kind.clear()
        for _ in range(n):
            grader.grade(submission, plan)
    finally:
        inprocess._Connection.request = request
    return by_kind


def print_by_kind(assignment, n, sandboxed, in_process):
    print(f"{assignment}: worker CPU per request kind, per grading (mean of {n}): sandboxed worker "
          "(frames included) against the same handler in this process")
    print(f"    {'kind':24s} {'requests':>8s} {'sandboxed':>10s} {'in-process':>10s} {'ratio':>6s} {'faults':>7s}")
    total = [0.0, 0.0]
    for op, (count, cpu, faults) in sorted(sandboxed.items(), key=lambda item: -item[1][1]):
        here = in_process.get(op, (0, 0.0))[1] / n
        total[0] += cpu / n
        total[1] += here
        ratio = f"{cpu / n / here:5.1f}x" if here else "     -"
        print(f"    {op:24s} {count / n:8.1f} {cpu / n:7.1f} ms {here:7.1f} ms {ratio} {faults / n:7.0f}")
    ratio = f"{total[0] / total[1]:5.1f}x" if total[1] else "     -"
    print(f"    {'all requests':24s} {'':8s} {total[0]:7.1f} ms {total[1]:7.1f} ms {ratio}")


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
    sandboxed = {assignment: profile(assignment, options.n, meter) for assignment in options.assignments}
    suspects()
    for assignment in options.assignments:  # last: the in-process worker stays for the process's life
        print_by_kind(assignment, options.n, sandboxed[assignment], in_process_by_kind(assignment, options.n))


if __name__ == "__main__":
    main()
