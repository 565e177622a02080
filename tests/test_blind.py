"""Submissions written blind, from the contract alone (tests/blind/README.md): graded by the real
command, every correct one gets full marks and every one-bug one loses points."""

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_autograder

BLIND = Path(__file__).resolve().parent / "blind"
ASSIGNMENTS = ("attention", "encoder", "decoder")
FILES = sorted(BLIND.glob("*/*.py"))
# Bugs no check of the contract can see, with the reason (they may still lose points).
INVISIBLE = {}
SLOW_FIXTURES = {"graded"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{(assignment, file stem): results.json} of every blind file, one `grade` per assignment."""
    root, results = tmp_path_factory.mktemp("blind"), {}
    for assignment in ASSIGNMENTS:
        submitted, out = root / assignment / "submitted", root / assignment / "reports"
        for path in sorted((BLIND / assignment).glob("*.py")):
            folder = submitted / path.stem / assignment
            folder.mkdir(parents=True)
            shutil.copy(path, folder / f"{assignment}.py")
        done = run_autograder("grade", submitted, "--assignment", assignment, "--out", out,
                              "--jobs", "2", timeout=900)
        assert done.returncode in (0, 1), done.stderr[-3000:]
        for path in sorted((BLIND / assignment).glob("*.py")):
            results[(assignment, path.stem)] = json.loads((out / path.stem / "results.json").read_text())
    return results


def _lost(report):
    return [(t["extra_data"]["check"], t.get("output", "")[:200]) for t in report["tests"]
            if t["score"] < t["max_score"]]


def test_every_blind_file_says_what_it_is():
    assert len(FILES) >= 30
    for path in FILES:
        head = path.read_text(encoding="utf-8").splitlines()[:2]
        assert head[0].startswith(("# bug:", "# correct:")), path
        if head[0].startswith("# bug:"):
            assert head[1].startswith("# line:"), path


@pytest.mark.parametrize("path", [p for p in FILES if p.stem.startswith("correct")], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_correct_blind_file_gets_full_marks(graded, path):
    report = graded[(path.parent.name, path.stem)]
    assert report["score"] == sum(t["max_score"] for t in report["tests"]), _lost(report)


@pytest.mark.parametrize("path", [p for p in FILES if p.stem.startswith("bug")], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_one_bug_blind_file_loses_points(graded, path):
    report = graded[(path.parent.name, path.stem)]
    full = sum(t["max_score"] for t in report["tests"])
    if path.stem in INVISIBLE:
        pytest.skip(INVISIBLE[path.stem])
    assert report["score"] < full, path.read_text(encoding="utf-8").splitlines()[0]
