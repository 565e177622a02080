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
from autograder.grading.grader import grade
from autograder.loading import Submission
from nbgrader_helpers import cell_by_id, released_notebook

pytestmark = pytest.mark.slow  # one batch of every bad input (the graded fixture)

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
    (folder / "einops_import.py").write_text(REFERENCE.replace(
        "import torch.nn as nn\n", "import torch.nn as nn\nfrom einops import rearrange\n").replace(
        "        z = z.transpose(1, 2).contiguous().view(b, tq, d)",
        "        z = rearrange(z, 'b h t d -> b t (h d)')"))
    (folder / "hardcoded_dk.py").write_text(REFERENCE.replace(
        "x.view(b, t, self.num_heads, self.d_k)", "x.view(b, t, self.num_heads, 4)"))
    (folder / "helper_stub_called.py").write_text(REFERENCE.replace(
        '        b, t, _ = x.shape\n        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)',
        "        raise NotImplementedError()"))
    make_tampered(folder)
    return sorted(folder.iterdir())


def make_tampered(folder):
    """Release notebooks of the attention assignment with the reference answers, tampered with."""
    write(folder / "clean_release.ipynb", released_notebook("attention"))
    nb = released_notebook("attention")
    nb.cells.remove(cell_by_id(nb, "test_MultiHeadAttention"))
    write(folder / "deleted_hidden_cell.ipynb", nb)
    nb = released_notebook("attention")
    nb.cells.remove(cell_by_id(nb, "imports"))
    write(folder / "deleted_imports_cell.ipynb", nb)
    nb = released_notebook("attention")
    cell_by_id(nb, "check_MultiHeadAttention").source = "print('all good')"
    write(folder / "changed_check_cell.ipynb", nb)
    nb = released_notebook("attention")  # without the restore, sdpa would miss math
    cell_by_id(nb, "imports").source = "import torch\nimport torch.nn as nn\n\n\ndef mine():\n    return 1\n"
    write(folder / "changed_imports_cell.ipynb", nb)
    nb = released_notebook("attention")
    nb.cells.insert(3, nbformat.from_dict(json.loads(json.dumps(cell_by_id(nb, "check_causal_mask")))))
    write(folder / "duplicated_cell.ipynb", nb)
    nb = released_notebook("attention", answers=True)  # head split written inline, helper untouched
    cell = cell_by_id(nb, "solution_MultiHeadAttention")
    cell.source = INLINE_SPLIT
    write(folder / "inline_split_heads.ipynb", nb)


# A student who splits the heads inline and leaves the optional helper's stub as released.
INLINE_SPLIT = '''\
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.h, self.dk = num_heads, d_model // num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def _split_heads(self, x):
        """(B, T, D) -> (B, H, T, d_k)"""
        raise NotImplementedError()

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        q = self.wq(q).view(b, tq, self.h, self.dk).transpose(1, 2)
        k = self.wk(k).view(b, k.shape[1], self.h, self.dk).transpose(1, 2)
        v = self.wv(v).view(b, v.shape[1], self.h, self.dk).transpose(1, 2)
        z, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights
'''


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


def test_a_clean_release_has_no_loading_problem(graded):
    result = graded["clean_release"]
    assert result.score == result.max_score and result.problems == ()


@pytest.mark.parametrize("name, cell, words", [
    ("deleted_hidden_cell", "test_MultiHeadAttention", "was deleted: the autograder uses the original"),
    ("deleted_imports_cell", "imports", "was deleted: the autograder uses the original"),
    ("changed_check_cell", "check_MultiHeadAttention", "Unauthorised change"),
    ("changed_imports_cell", "imports", "Unauthorised change"),
    ("duplicated_cell", "check_causal_mask", "Duplicated nbgrader cell"),
])
def test_tampered_cells_are_restored_reported_and_cost_what_they_say(graded, name, cell, words):
    """Read-only cells come from the source notebook (as nbgrader restores them), so tampering
    changes no points; the student reads what happened, in plain words."""
    result = graded[name]
    assert result.score == result.max_score, problems(result)
    [problem] = [p for p in result.problems if cell in p["en"]]
    assert words in problem["en"]
    if name.startswith("changed"):
        assert "Perubahan tidak sah" in problem["id"] and "perusakan" not in problem["id"].lower()
    if name == "changed_imports_cell":
        assert "`mine`" in problem["en"]  # what the edit defined is not there when grading
    if name in ("deleted_hidden_cell", "changed_check_cell", "deleted_imports_cell"):
        assert "this costs no points" in problem["en"] and "tidak mengurangi nilai" in problem["id"]


def test_deleted_cells_are_reported_against_the_source_notebook(tmp_path):
    source = write(tmp_path / "source.ipynb", nbgrader_notebook())
    submitted = nbgrader_notebook()
    del submitted.cells[2]
    path = write(tmp_path / "ani.ipynb", submitted)
    plan = dataclasses.replace(plans.load("attention"), grade_ids=plans._grade_ids(source),
                               source_notebook=source)
    result = grade(Submission("ani", "attention", path), plan)
    assert "grading cell `test_mha` was deleted" in problems(result)
    assert result.score == result.max_score


def test_an_untouched_optional_helper_stub_costs_nothing(graded):
    result = graded["inline_split_heads"]
    assert result.score == result.max_score, problems(result) + str(result.failed_ids)
    assert result.problems == ()


def test_a_call_into_an_unfinished_helper_names_the_helper(graded):
    result = graded["helper_stub_called"]
    message = outcome(result, "mha.shape").message
    assert "`MultiHeadAttention._split_heads`" in message["en"] and "stub" in message["en"]
    assert "`MultiHeadAttention._split_heads`" in message["id"]
    assert outcome(result, "mha.present").status == "passed"  # the class itself is no stub


def test_a_missing_library_is_one_loading_problem_naming_it(graded):
    result = graded["einops_import"]
    assert len(result.problems) == 1, problems(result)
    assert "`einops`" in result.problems[0]["en"] and "not available when grading" in result.problems[0]["en"]
    message = outcome(result, "mha.shape").message["en"]
    assert "`rearrange` comes from the module `einops`" in message
    assert outcome(result, "sdpa.numeric").status == "passed"


def test_errors_on_hidden_sizes_do_not_show_them(graded):
    """d_k hard-coded to the chapter's 4: on the hidden sizes .view() fails with a message
    full of those sizes; the student sees the (built-in) exception type and where, not the
    message."""
    result = graded["hardcoded_dk"]
    hidden = outcome(result, "mha.hidden_config")
    assert hidden.status == "failed"
    for lang in ("id", "en"):
        text = hidden.message[lang]
        assert "RuntimeError" in text and "invalid for input" not in text, text
        numbers = {int(n) for n in __import__("re").findall(r"(?<![\w.])\d+(?![\w.])",
                                                               text.split("(")[0])}
        sizes = plans.load("attention").hidden
        assert not numbers & {sizes.d_model, sizes.batch, sizes.length, sizes.decoder_length,
                              sizes.d_model // sizes.num_heads}, text
    assert "baris" in hidden.message["id"] and "line" in hidden.message["en"]
    assert "&lt;" not in hidden.message["en"] and "<module>" not in hidden.message["en"]


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
    nan = graded["nan_outputs"]  # all NaN: degenerate, so the target's gate names it once
    assert "NaN" in outcome(nan, "sdpa.sensitivity").message["en"]
    assert outcome(nan, "sdpa.shape").status == "skipped"
    sdpa = [o for o in nan.outcomes if o.check.target == "scaled_dot_product_attention"]
    assert sum(o.score for o in sdpa) <= 0.2 * sum(o.check.points for o in sdpa)
    # MultiHeadAttention's own checks that record its attention grade it around a stand-in for
    # the NaN (issue 22: a sub-layer's bug is charged to the sub-layer); the whole module against
    # the reference still pays for it
    assert not outcome(nan, "mha.integration").passed
    wrong = outcome(graded["wrong_dtype"], "mha.numeric")
    assert wrong.status == "failed"
    assert outcome(graded["wrong_dtype"], "sdpa.numeric").status == "passed"


def test_the_correct_submission_next_to_them_gets_full_marks(graded):
    assert graded["correct"].score == graded["correct"].max_score
