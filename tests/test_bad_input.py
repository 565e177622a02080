"""Bad input ends in a clear, student-readable report, and the other submissions still grade."""

import dataclasses
import inspect
import json
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import compute_checksum

import solutions.attention
from autograder import plan as plans
from autograder.grading import grade
from autograder.loader import Submission

REFERENCE = Path(inspect.getfile(solutions.attention)).read_text()


def nbgrader_notebook(answer=REFERENCE):
    """A release-like notebook: a solution cell, a locked test cell, both with checksums."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# Tugas"))
    solution = nbformat.v4.new_code_cell(answer, metadata={"nbgrader": {
        "grade": False, "solution": True, "locked": False, "grade_id": "answer", "schema_version": 3}})
    test = nbformat.v4.new_code_cell("assert MultiHeadAttention is not None", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "points": 1, "grade_id": "test_mha",
        "schema_version": 3}})
    for cell in (solution, test):
        cell.metadata.nbgrader["checksum"] = compute_checksum(cell)
    nb.cells += [solution, test]
    return nb


def write(path, nb):
    nbformat.write(nb, path)
    return path


def make_inputs(folder):
    folder.mkdir()
    (folder / "invalid_json.ipynb").write_text('{"cells": [{"cell_type": "code", "source": ')
    (folder / "empty_file.ipynb").write_text("")
    write(folder / "empty_notebook.ipynb", nbformat.v4.new_notebook())
    markdown_only = nbformat.v4.new_notebook()
    markdown_only.cells.append(nbformat.v4.new_markdown_cell("Saya belum mengerjakan."))
    write(folder / "no_code_cells.ipynb", markdown_only)
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": REFERENCE, "language": "python", "outputs": [], "metadata": {}}]}]}
    (folder / "nbformat_v3.ipynb").write_text(json.dumps(v3))
    duplicated = nbgrader_notebook()
    duplicated.cells.append(nbformat.from_dict(json.loads(json.dumps(duplicated.cells[2]))))
    write(folder / "duplicated_cell.ipynb", duplicated)
    deleted = nbgrader_notebook()
    del deleted.cells[2]
    write(folder / "deleted_cell.ipynb", deleted)
    changed = nbgrader_notebook()
    changed.cells[2].source = "pass  # the student emptied the test"
    write(folder / "changed_test_cell.ipynb", changed)
    (folder / "non_utf8.py").write_bytes(("# komentar: caf\xe9\n" + REFERENCE).encode("latin-1"))
    huge = nbgrader_notebook()
    huge.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * 30_000_000)]
    write(folder / "huge_output.ipynb", huge)
    (folder / "missing_class.py").write_text(REFERENCE.replace("class MultiHeadAttention", "class MHA"))
    (folder / "not_a_module.py").write_text(
        REFERENCE + "\n\nclass MultiHeadAttention:\n    def __init__(self, d_model, num_heads):\n        pass\n")
    (folder / "wrong_signature.py").write_text(REFERENCE.replace(
        "def __init__(self, d_model, num_heads):", "def __init__(self, d_model, num_heads, dropout):"))
    (folder / "nan_outputs.py").write_text(REFERENCE.replace(
        "    return weights @ v, weights", "    return (weights @ v) * float('nan'), weights * float('nan')"))
    (folder / "wrong_dtype.py").write_text(REFERENCE.replace(
        "        return self.wo(z), weights", "        return self.wo(z).half(), weights.half()"))
    (folder / "correct.py").write_text(REFERENCE)
    return sorted(folder.iterdir())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad") / "submissions"
    plan = plans.load("attention")
    return {path.stem: grade(Submission(path.stem, "attention", path), plan) for path in make_inputs(folder)}


def outcome(result, check_id):
    return next(o for o in result.outcomes if o.check.id == check_id)


def problems(result):
    return " | ".join(p["en"] for p in result.problems)


@pytest.mark.parametrize("name", ["invalid_json", "empty_file"])
def test_unreadable_notebook_gets_a_report_with_the_reason(graded, name):
    result = graded[name]
    assert result.score == 0 and "notebook is broken" in problems(result)
    assert all(o.status == "skipped" and "broken" in o.message["en"] for o in result.outcomes)


@pytest.mark.parametrize("name", ["empty_notebook", "no_code_cells"])
def test_notebook_without_code(graded, name):
    result = graded[name]
    assert result.score == 0 and "no code cells" in problems(result)
    assert "was not found" in outcome(result, "mha.present").message["en"]


def test_nbformat_v3_is_graded(graded):
    assert graded["nbformat_v3"].score == graded["nbformat_v3"].max_score


@pytest.mark.parametrize("name, words", [
    ("duplicated_cell", "Duplicated nbgrader cell (do not copy assignment cells): test_mha"),
    ("changed_test_cell", "test or locked cell was changed"),
])
def test_tampering_is_reported_and_test_code_never_runs(graded, name, words):
    result = graded[name]
    assert words in problems(result)
    assert result.score == result.max_score  # the student's own code is still graded


def test_deleted_cells_are_reported_against_the_source_notebook(tmp_path):
    source = write(tmp_path / "source.ipynb", nbgrader_notebook())
    submitted = nbgrader_notebook()
    del submitted.cells[2]
    path = write(tmp_path / "ani.ipynb", submitted)
    plan = dataclasses.replace(plans.load("attention"), grade_ids=plans._grade_ids(source))
    result = grade(Submission("ani", "attention", path), plan)
    assert "Deleted nbgrader cell(s)" in problems(result) and "test_mha" in problems(result)


def test_non_utf8_and_huge_outputs_still_grade(graded):
    assert "not UTF-8" in problems(graded["non_utf8"])
    assert graded["non_utf8"].score == graded["non_utf8"].max_score
    assert graded["huge_output"].score == graded["huge_output"].max_score


def test_missing_class_and_not_a_module(graded):
    assert "was not found" in outcome(graded["missing_class"], "mha.present").message["en"]
    assert "derived from torch.nn.Module" in outcome(graded["not_a_module"], "mha.present").message["en"]


def test_wrong_constructor_signature(graded):
    message = outcome(graded["wrong_signature"], "mha.present").message["en"]
    assert "does not match the contract: MultiHeadAttention(d_model, num_heads)" in message
    assert "dropout" in message


def test_nan_and_wrong_dtype_outputs_lose_their_points(graded):
    nan = graded["nan_outputs"]
    assert "NaN" in outcome(nan, "sdpa.shape").message["en"]
    wrong = outcome(graded["wrong_dtype"], "mha.numeric")
    assert wrong.status == "failed"
    assert outcome(graded["wrong_dtype"], "sdpa.numeric").status == "passed"


def test_the_correct_submission_next_to_them_gets_full_marks(graded):
    assert graded["correct"].score == graded["correct"].max_score
