"""Benchmark: grade the same N nbgrader submissions with ``autograder grade`` and with
``nbgrader autograde``, on this machine, in one run; print both wall times and the ratio,
plus the floor (every submission graded in-process, torch already imported, zygote warm).

    .venv/bin/python bench/batch_vs_nbgrader.py            # N = 100, the issue's mix
    .venv/bin/python bench/batch_vs_nbgrader.py --n 20     # quicker
    .venv/bin/python bench/batch_vs_nbgrader.py --skip-nbgrader

The mix (attention assignment): mostly correct notebooks, typical one-bug notebooks, and one
notebook whose MultiHeadAttention.forward never returns. nbgrader runs with its default cell
timeout (30 s) so that the endless loop costs it what it costs any nbgrader course.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "attention"
BUGS = [  # (name, text in the reference solution cell, replacement)
    ("no_scale", "/ math.sqrt(d_k)", ""),
    ("inverted_mask", "masked_fill(mask,", "masked_fill(~mask,"),
    ("tril", "torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)",
     "torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=0)"),
    ("no_wo", "return self.wo(z), weights", "return z, weights"),
]
LOOP = ("endless_loop", "        b, tq, d = q.shape\n", "        b, tq, d = q.shape\n        while True:\n            pass\n")


def run(command, cwd, env):
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return time.monotonic() - started, done


def make_course(workdir, env):
    course = workdir / "course"
    course.mkdir()
    shutil.copy(ROOT / "assignments" / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "assignments" / "source", course / "source")
    _, done = run(["nbgrader", "generate_assignment", ASSIGNMENT], course, env)
    if done.returncode:
        sys.exit(f"generate_assignment failed:\n{done.stdout}\n{done.stderr}")
    return course


def submissions(course, n):
    """N filled-in release notebooks: every 10th has a typical bug, one loops forever."""
    release = json.loads((course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    source = json.loads((course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    answers = {cell["id"]: "".join(cell["source"]) for cell in source["cells"]}
    for index in range(n):
        bug = LOOP if index == n // 2 else BUGS[index // 10 % len(BUGS)] if index % 10 == 3 else None
        notebook = json.loads(json.dumps(release))
        for cell in notebook["cells"]:
            if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                code = "\n".join(line for line in answers[cell["id"]].splitlines()
                                 if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
                if bug and bug[1] in code:
                    code = code.replace(bug[1], bug[2])
                cell["source"] = code
        student = f"s{index:03d}" + (f"_{bug[0]}" if bug else "")
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(notebook))


def floor_seconds(course, jobs):
    """All submissions graded in this process: torch imported, zygote warm, no reports."""
    from autograder import batch, loader, plan as plans
    from autograder.sandbox.process import shared_zygote

    plan = plans.load(ASSIGNMENT)
    found = loader.discover([course / "submitted"], ASSIGNMENT, plan.notebook)
    shared_zygote()
    list(batch.grade_many(found[:2], plan, jobs))  # warm caches
    started = time.monotonic()
    results = list(batch.grade_many(found, plan, jobs))
    return time.monotonic() - started, len(results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="number of submissions (default 100)")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--skip-nbgrader", action="store_true", help="time only the kit")
    args = parser.parse_args()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    workdir = Path(tempfile.mkdtemp(prefix="bench-"))
    try:
        course = make_course(workdir, env)
        submissions(course, args.n)
        print(f"{args.n} submissions of '{ASSIGNMENT}' in {course / 'submitted'}; {args.jobs} jobs; "
              f"{os.cpu_count()} cores")

        kit, done = run([sys.executable, "-m", "autograder", "grade", str(course / "submitted"),
                         "-a", ASSIGNMENT, "-o", str(workdir / "reports"), "--jobs", str(args.jobs)],
                        ROOT, env)
        if done.returncode:
            sys.exit(f"autograder grade failed:\n{done.stderr[-3000:]}")
        kit_points = sorted(line for line in done.stdout.splitlines() if line.startswith("Points"))
        print(f"autograder grade:     {kit:8.1f} s  ({kit / args.n * 1000:6.0f} ms per submission)")

        floor, graded = floor_seconds(course, args.jobs)
        print(f"floor (in-process):   {floor:8.1f} s  ({floor / graded * 1000:6.0f} ms per submission, "
              f"fork + checks, torch imported)")
        print(f"kit / floor:          {kit / floor:8.2f}x   (target: within 3x)")

        if not args.skip_nbgrader:
            nbgrader, done = run(["nbgrader", "autograde", ASSIGNMENT, "--Execute.timeout=30"], course, env)
            print(f"nbgrader autograde:   {nbgrader:8.1f} s  ({nbgrader / args.n * 1000:6.0f} ms per "
                  f"submission, exit {done.returncode})")
            print(f"nbgrader / kit:       {nbgrader / kit:8.1f}x   (target: at least 50x)")
        print(f"scores: {len(kit_points)} lines 'Points X/Y', e.g. {kit_points[0]!r} ... {kit_points[-1]!r}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
