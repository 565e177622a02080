"""How many failed checks does one bug cost? Grades every one-bug mutant of tests/corpus.

    .venv/bin/python bench/failed_checks.py              # every assignment
    .venv/bin/python bench/failed_checks.py --assignment attention --jobs 2 --verbose

A mutant is a file under tests/corpus/<assignment>/mutants/ with one bug (the do-nothing and
stub files, whose header bounds the whole score, are left out). Per mutant it counts

- ``failed``: checks whose outcome is ``failed`` or ``timeout`` (what costs points);
- ``items``: what the student has to read separately: the failed checks that no diagnosis
  explains, plus one per diagnosis (a named mistake and the checks it explains read as one).

and prints the median and the worst of both over all mutants (and per assignment), so that a
change can be measured: run it before and after.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

CHILD = r"""
import json, sys
from pathlib import Path
from autograder import plan as plans
from autograder.grading.grader import grade
from autograder.loading import Submission

cache = {}
for line in sys.stdin:
    assignment, path = json.loads(line)
    plan = cache.setdefault(assignment, plans.load(assignment))
    result = grade(Submission(Path(path).stem, assignment, Path(path)), plan)
    failed = [o.check.id for o in result.outcomes if o.status in ("failed", "timeout")]
    errors = [o.check.id for o in result.outcomes if o.status == "error"]
    explained = {c for d in result.diagnoses for c in d.explains}
    print(json.dumps({"path": path, "failed": failed, "errors": errors,
                      "diagnoses": [[d.target, d.mistake, list(d.explains)] for d in result.diagnoses],
                      "unexplained": [c for c in failed if c not in explained]}), flush=True)
"""


def one_bug_mutants(assignments):
    found = []
    for path in sorted(CORPUS.glob("*/mutants/*.py")):
        assignment = path.parent.parent.name
        if assignments and assignment not in assignments:
            continue
        header = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.startswith("#"):
                break
            header.append(line)
        if any(line.startswith("# expect-score-at-most:") for line in header):
            continue  # do-nothing / stub files: not one bug
        found.append((assignment, path))
    return found


def grade_all(jobs, files):
    chunks = [files[i::jobs] for i in range(jobs)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUTF8": "1"}

    def run(chunk):
        if not chunk:
            return []
        lines = "".join(json.dumps([a, str(p)]) + "\n" for a, p in chunk)
        done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, input=lines,
                              capture_output=True, text=True)
        if done.returncode:
            sys.stderr.write(done.stderr[-4000:])
            raise SystemExit(f"grading failed (exit {done.returncode})")
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    with ThreadPoolExecutor(jobs) as pool:
        return [r for part in pool.map(run, chunks) for r in part]


def summary(rows):
    failed = [len(r["failed"]) for r in rows]
    items = [len(r["unexplained"]) + len(r["diagnoses"]) for r in rows]
    return (f"{len(rows):3d} mutants | failed checks: median {statistics.median(failed):g}, "
            f"worst {max(failed)} | items to read: median {statistics.median(items):g}, "
            f"worst {max(items)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", action="append", help="only this assignment (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="one line per mutant")
    parser.add_argument("--json", help="also write the per-mutant rows to this file")
    args = parser.parse_args()
    files = one_bug_mutants(args.assignment)
    rows = sorted(grade_all(max(1, args.jobs), files), key=lambda r: r["path"])
    if args.verbose:
        for r in rows:
            name = "/".join(Path(r["path"]).parts[-3:])
            named = ", ".join(f"{m}" for _, m, _ in r["diagnoses"]) or "-"
            print(f"{len(r['failed']):3d} {len(r['unexplained']):3d}  {name:60s} {named}")
            if r["errors"]:
                print(f"      grader errors: {', '.join(r['errors'])}")
    for assignment in dict.fromkeys(a for a, _ in files):
        mine = [r for r in rows if Path(r["path"]).parts[-3] == assignment]
        print(f"{assignment:10s} {summary(mine)}")
    print(f"{'all':10s} {summary(rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
