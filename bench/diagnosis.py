"""What a student learns from one bug: graded over every one-bug mutant of tests/corpus (and
every correct file), it prints

- **named or localized**: the share of one-bug files that get a named mistake of the catalogue
  or, where none is named, a localized first wrong step at the bug's line (``# line:`` in a file
  written blind; ``elsewhere`` counts localizations at another line);
- **wrong**: diagnoses that name something else than the file's header says (``# diagnosis:``;
  ``none`` means nothing may be named) and any diagnosis of a correct file: it must be 0;
- **reads**: per bug, what a student has to read: each named finding once (a named mistake, one
  error that fails several checks), plus every failed check that nothing explains (the checks
  that follow from one of those are listed under it and not counted again); median and worst
  (targets: median <= 2, worst <= 4).

    .venv/bin/python bench/diagnosis.py                    # every assignment
    .venv/bin/python bench/diagnosis.py --assignment decoder --jobs 2 --verbose
    .venv/bin/python bench/diagnosis.py --folder tests/blind   # files written from the contract alone

Exit status 1 when a diagnosis is wrong (the number that must stay 0).
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
TARGET_MEDIAN, TARGET_WORST = 2, 4
DERIVED = ("raises", "follows")  # autograder.checks.consequences: grouped, not named mistakes

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
    failed = [o.check.id for o in result.outcomes if o.status in ("failed", "timeout", "error")]
    explained = {c for d in result.diagnoses for c in d.explains}
    localized = [[x.target, x.step, x.line] for x in result.localizations]
    print(json.dumps({"path": path, "failed": failed, "score": result.score,
                      "max_score": result.max_score,
                      "diagnoses": [[d.target, d.mistake, list(d.explains)] for d in result.diagnoses],
                      "localized": localized,
                      "unexplained": [c for c in failed if c not in explained]}), flush=True)
"""


def header(path):
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


def corpus_files(assignments, correct=True):
    """[(assignment, path, kind, expected diagnosis or None)] of the one-bug mutants (the
    do-nothing and stub files, whose header bounds the whole score, are not one bug) and,
    with ``correct``, the correct files (expected: "none")."""
    found = []
    graded = _course_assignments()
    for path in sorted(CORPUS.glob("*/*/*.py")):
        assignment, folder = path.parent.parent.name, path.parent.name
        if (assignments and assignment not in assignments) or (not assignments and assignment not in graded):
            continue  # by default only what course.toml grades (a draft assignment: ask for it by name)
        lines = header(path)
        if folder == "mutants" and not any(line.startswith("# expect-score-at-most:") for line in lines):
            expected = next((line.split(":", 1)[1].strip() for line in lines
                             if line.startswith("# diagnosis:")), None)
            found.append((assignment, path, "mutant", expected))
        elif folder == "correct" and correct:
            found.append((assignment, path, "correct", "none"))
    return found


def _course_assignments():
    sys.path.insert(0, str(ROOT))
    from autograder.config import load
    return set(load().assignments)


def folder_files(folder, assignments):
    """[(assignment, path, kind, expected)] of FOLDER/<assignment>/*.py written blind (from the
    contract alone): a ``# bug: ...`` file with ``# line: N`` (the buggy line) is a one-bug file
    with no catalogue id to judge by; a ``# correct: ...`` file must get no diagnosis."""
    found = []
    for path in sorted(Path(folder).glob("*/*.py")):
        assignment = path.parent.name
        if assignments and assignment not in assignments:
            continue
        lines = header(path)
        if any(line.startswith("# correct:") for line in lines):
            found.append((assignment, path, "correct", "none"))
        elif any(line.startswith("# bug:") for line in lines):
            found.append((assignment, path, "mutant", None))
    return found


def bug_line(path):
    for line in header(Path(path)):
        if line.startswith("# line:"):
            try:
                return int(line.split(":", 1)[1].strip())
            except ValueError:
                return None
    return None


def grade_all(jobs, files):
    chunks = [files[i::jobs] for i in range(jobs)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUTF8": "1"}

    def run(chunk):
        if not chunk:
            return []
        lines = "".join(json.dumps([f[0], str(f[1])]) + "\n" for f in chunk)
        done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, input=lines,
                              capture_output=True, text=True)
        if done.returncode:
            sys.stderr.write(done.stderr[-4000:])
            raise SystemExit(f"grading failed (exit {done.returncode})")
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    with ThreadPoolExecutor(jobs) as pool:
        return [r for part in pool.map(run, chunks) for r in part]


def judge(row, kind, expected):
    """Adds what the bench counts to a graded row."""
    named = sorted({m for _, m, _ in row["diagnoses"] if m not in DERIVED})
    derived = [m for _, m, _ in row["diagnoses"] if m == "raises"]  # "follows": under its cause
    row["kind"], row["expected"], row["named"] = kind, expected, named
    if expected == "none":
        row["wrong"] = named
    elif expected:
        row["wrong"] = [m for m in named if m != expected]
    else:
        row["wrong"] = []  # no header to judge by: counted apart (unchecked)
    row["derived"] = derived  # one error, or a failure that others follow: read once
    line = bug_line(row["path"])
    lines = [at for _, _, at in row["localized"] if at is not None]
    # a localized step with its line: at the bug's line (within 2) where the file says which
    row["at_line"] = bool(lines) and (line is None or any(abs(at - line) <= 2 for at in lines))
    row["reads"] = len(named) + len(derived) + len(row["unexplained"])
    return row


def summary(rows):
    bugs = [r for r in rows if r["kind"] == "mutant"]
    if not bugs:
        return "no one-bug files"
    named = sum(1 for r in bugs if r["named"])
    localized = sum(1 for r in bugs if r["at_line"] and not r["named"])
    off_line = sum(1 for r in bugs if r["localized"] and not r["at_line"] and not r["named"])
    reads = [r["reads"] for r in bugs]
    wrong = sum(len(r["wrong"]) for r in rows)
    unchecked = sum(1 for r in bugs if r["named"] and not r["expected"])
    return (f"{len(bugs):3d} bugs | named or localized {(named + localized) / len(bugs):4.0%} "
            f"(named {named}, localized at its line {localized}, elsewhere {off_line}) | wrong "
            f"{wrong} (unchecked {unchecked}) | reads: median {statistics.median(reads):g}, worst "
            f"{max(reads)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", action="append", help="only this assignment (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-correct", action="store_true", help="grade the one-bug files only")
    parser.add_argument("--verbose", action="store_true", help="one line per file")
    parser.add_argument("--json", help="also write the per-file rows to this file")
    parser.add_argument("--folder", help="grade FOLDER/<assignment>/*.py written blind instead of "
                                         "the corpus (# bug: / # line: / # correct: headers)")
    args = parser.parse_args()
    files = (folder_files(args.folder, args.assignment) if args.folder
             else corpus_files(args.assignment, correct=not args.no_correct))
    facts = {str(f[1]): f for f in files}
    rows = [judge(r, facts[r["path"]][2], facts[r["path"]][3])
            for r in grade_all(max(1, args.jobs), files)]
    rows.sort(key=lambda r: r["path"])
    if args.verbose:
        print(f"{'reads':>5} {'file':58s} named (unexplained failed checks)")
        for r in rows:
            if r["kind"] != "mutant" and not r["wrong"]:
                continue
            name = "/".join(Path(r["path"]).parts[-3:])
            mark = " WRONG" if r["wrong"] else ""
            where = "; ".join(f"{step}@{line}" for _, step, line in r["localized"])
            print(f"{r['reads']:5d} {name:58s} {', '.join(r['named']) or '-'}{mark} "
                  f"({', '.join(r['unexplained']) or '-'}){' localized: ' + where if where else ''}")
    for assignment in dict.fromkeys(f[0] for f in files):
        print(f"{assignment:10s} {summary([r for r in rows if facts[r['path']][0] == assignment])}")
    print(f"{'all':10s} {summary(rows)}")
    bugs = [r["reads"] for r in rows if r["kind"] == "mutant"]
    if bugs:
        print(f"targets: median reads <= {TARGET_MEDIAN}, worst <= {TARGET_WORST}, wrong = 0")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if any(r["wrong"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
