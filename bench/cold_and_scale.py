"""The kit at both ends of the batch size, for ``batch_vs_nbgrader.py``.

- ``cold_one``: one submission graded by ``autograder grade`` from process start (as CI or
  Gradescope grade it: torch imported, the sandbox started, the reports written) against
  ``python -c "import torch"`` on the same machine, alternately, the median of each (the kit's
  bytecode compiled first, ``compile_kit``, as after ``scripts/setup.sh``).
- ``scale``: ``autograder grade`` of many submissions, its progress lines read as they come:
  the seconds per submission (the slope) over each quarter of the batch, and the grader's
  resident memory (its own process and its grading processes, ``VmRSS``) at each quarter and
  at its peak (``VmHWM``). Flat memory and linear time: the quarters agree.
- ``scheduler``: the same batch with ``--scheduler local`` (a Dask LocalCluster of ``--jobs``
  worker processes) against plain ``--jobs``.
"""

import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

COLD_TARGET = 1.3  # autograder grade of one submission / python -c "import torch"


def autograder_command(paths, assignment, out, jobs, *extra):
    """``autograder grade`` (the transformer's through ``without_training.py``: the same CLI)."""
    grade = ([sys.executable, str(Path(__file__).parent / "without_training.py"), "grade"]
             if assignment == "transformer" else [str(Path(sys.executable).parent / "autograder"), "grade"])
    return [*grade, *map(str, paths),
            "--assignment", assignment, "--out", str(out), "--jobs", str(jobs), *extra]


def compile_kit(env, cwd):
    """Compile the bytecode of the kit the timed commands import, as ``scripts/setup.sh`` does
    after installing it: under PYTHONDONTWRITEBYTECODE=1 nothing else writes it, and a cold
    start would time the compilation of the grader's modules, which an installed kit does not
    do. Returns the folders compiled."""
    code = ("import compileall, importlib.util, sys\n"
            "folders = [list(importlib.util.find_spec(n).submodule_search_locations)[0]"
            " for n in ('autograder', 'solutions')]\n"
            "ok = all([compileall.compile_dir(f, quiet=1) for f in folders])\n"
            "print('\\n'.join(folders))\n"
            "sys.exit(0 if ok else 1)")
    # -P: not the working directory's copy, but the one the timed commands find (PYTHONPATH,
    # else the installed kit)
    done = subprocess.run([sys.executable, "-P", "-c", code], env=env, cwd=cwd, capture_output=True,
                          text=True)
    if done.returncode:
        sys.exit(f"compiling the kit's bytecode failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout.split()


def cold_one(notebook, assignment, workdir, env, cwd, repeat=3):
    """(median seconds of ``autograder grade`` of one notebook, median of ``import torch``)."""
    grade, floor = [], []
    for attempt in range(repeat):
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True)
        floor.append(time.monotonic() - started)
        if done.returncode:
            sys.exit(f"python -c 'import torch' failed: {done.stderr[-2000:]}")
        started = time.monotonic()
        done = subprocess.run(autograder_command([notebook], assignment, workdir / f"cold-{attempt}", 1),
                              cwd=cwd, env=env, capture_output=True, text=True)
        grade.append(time.monotonic() - started)
        if done.returncode:
            sys.exit(f"autograder grade of one submission failed (exit {done.returncode}):\n"
                     f"{done.stderr[-3000:]}")
    return statistics.median(grade), statistics.median(floor), grade, floor


def _rss_kib(pid, field="VmRSS"):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _grader_processes(pid):
    """The grader and its grading processes (forks of it: the same command line); not the
    sandbox's zygote and workers, which are another program."""
    try:
        own = Path(f"/proc/{pid}/cmdline").read_bytes()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    same = []
    for child in children:
        try:
            if Path(f"/proc/{child}/cmdline").read_bytes() == own:
                same.append(int(child))
        except OSError:
            pass
    return [pid, *same]


def run_batch(command, cwd, env, total):
    """Run ``autograder grade`` of ``total`` submissions: (seconds, [(seconds, done)] at each
    progress line, [(done, grader's RSS in MiB)] sampled, peak RSS in MiB, its stdout)."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    progress, samples, peak, lines = [], [], [0], []
    state = {"done": 0, "running": True}

    def sample():
        while state["running"]:
            pids = _grader_processes(process.pid)
            rss = sum(_rss_kib(p) for p in pids)
            peak[0] = max(peak[0], rss, _rss_kib(process.pid, "VmHWM"))
            if rss:
                samples.append((state["done"], rss / 1024))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = []  # the progress lines come on stderr ("[3/259] budi: 40/45 ..."), the scores on stdout
    reader = threading.Thread(target=lambda: output.append(process.stdout.read()), daemon=True)
    reader.start()
    for line in process.stderr:
        lines.append(line)
        if line.startswith("[") and "/" in line.split("]")[0]:
            state["done"] += 1
            progress.append((time.monotonic() - started, state["done"]))
    process.wait()
    state["running"] = False
    sampler.join()
    reader.join()
    if process.returncode:
        sys.exit(f"autograder grade failed (exit {process.returncode}):\n{''.join(lines)[-3000:]}")
    return time.monotonic() - started, progress, samples, peak[0] / 1024, "".join(output)


def quarters(progress, samples, total):
    """[(quarter, seconds per submission in it, grader RSS MiB at its end)]."""
    rows, previous = [], (0.0, 0)  # from the command's start: the first quarter holds the start-up
    for quarter in range(1, 5):
        mark = max(1, total * quarter // 4)
        at = next(((t, d) for t, d in progress if d >= mark), None)
        if at is None:
            continue
        slope = (at[0] - previous[0]) / max(at[1] - previous[1], 1)
        rss = max((r for d, r in samples if d <= mark), default=0.0)
        rows.append((quarter, slope, rss))
        previous = at
    return rows


def print_cold(assignment, grade, floor, grades, floors):
    print(f"[{assignment}] one submission, cold: autograder grade {grade:.2f} s (median of "
          f"{', '.join(f'{t:.2f}' for t in grades)}), python -c 'import torch' {floor:.2f} s (median of "
          f"{', '.join(f'{t:.2f}' for t in floors)}): {grade / floor:.2f}x the floor "
          f"(target at most {COLD_TARGET}x)")


def print_scale(assignment, total, jobs, seconds, progress, samples, peak):
    rows = quarters(progress, samples, total)
    print(f"[{assignment}] scale: {total} submissions, --jobs {jobs}: {seconds:.1f} s, "
          f"{seconds / total * 1000:.0f} ms/submission; the grader's peak RSS {peak:.0f} MiB "
          f"(its own process and its grading processes)")
    for quarter, slope, rss in rows:
        print(f"[{assignment}]   quarter {quarter}: {slope * 1000:5.0f} ms/submission, grader RSS "
              f"{rss:5.0f} MiB by its end")
    if len(rows) == 4:
        slopes = [s for _, s, _ in rows[1:]]  # the first quarter holds the start-up
        print(f"[{assignment}]   slope after start-up: {min(slopes) * 1000:.0f}-{max(slopes) * 1000:.0f} "
              f"ms/submission (linear time if they agree); RSS from quarter 1 to 4: "
              f"{rows[0][2]:.0f} -> {rows[3][2]:.0f} MiB, {(rows[3][2] - rows[0][2]) * 1024 / max(total * 3 // 4, 1):.0f} "
              f"KiB per submission (flat memory if about 0)")


def cores():
    return os.cpu_count()
