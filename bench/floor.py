"""The kit's floor: a batch graded by an ``autograder grade`` that has already started.

    .venv/bin/python bench/floor.py ASSIGNMENT FOLDER [--jobs J]

prints ``{"seconds": ..., "graded": ...}``: the wall time of grading every submission in
FOLDER with what the command line uses for ``--jobs J`` (J grading processes forked from this
one after the checks' warm-up, ``pool.GradingPool``; one thread for ``--jobs 1``), once they
have each graded a submission, torch imported and the zygote ready. What ``autograder grade``
takes beyond it is its start (the interpreter, the imports, the zygote's start) and its files.
The submissions must be correct ones: it exits with the scores if one is not at full marks.

``batch_vs_nbgrader.py`` uses it in a process of its own: a pool forks only from a process that
runs one thread, and the benchmark's own process has started threads and a zygote by then. The
transformer is graded without its training outcome (``without_training.py``), as there.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from without_training import patch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignment")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    patch()
    from autograder import loading, plan as plans
    from autograder.grading import batch
    from autograder.grading.pool import GradingPool
    from autograder.sandbox import process

    plan = plans.load(args.assignment)
    found = loading.discover([args.folder], args.assignment, plan.notebook)
    pool = GradingPool(plan, args.jobs) if args.jobs > 1 else None  # forked first: one thread now

    def grade_all(submissions):
        if pool is None:
            return list(batch.grade_many(submissions, plan, 1))
        return list(pool.grade_many([(s, {}) for s in submissions], plan, batch._pool_fault(plan)))

    try:
        process.shared_zygote()
        grade_all(found[:2 * args.jobs])  # each grading process's first submissions (its caches)
        started = time.monotonic()
        graded = grade_all(found)
        seconds = time.monotonic() - started
    finally:
        if pool is not None:
            pool.close()
        process.close_shared()
    records = [item.record() if hasattr(item, "record") else item for item in graded]
    short = [f"{r.student} {r.score:g}/{r.max_score:g}" for r in records if r.score != r.max_score]
    if short or len(records) != len(found):
        sys.exit(f"the floor must grade correct submissions, each at full marks: {', '.join(short) or len(records)}")
    print(json.dumps({"seconds": seconds, "graded": len(graded)}))


if __name__ == "__main__":
    main()
