"""Localization (autograder/checks/localization.py, sandbox/tracing.py): the first step of a
student's computation that differs from the reference's, with the student's line, for bugs the
mistake catalogue does not know; for feedback only.

- one-bug corpus files the catalogue does not know (``tests/corpus/*/mutants/loc_*.py``) are
  graded through the real sandbox and localized at the step and line of their bug;
- ``locate`` on hand-made traces: any layout of a step is found, a step's values in another
  arrangement are not (and give the line), correct code and code with no step found give none;
- a worker that forges or breaks its trace changes no point and no verdict.
(Correct corpus files are probed in tests/test_corpus.py: never localized, even when forced.)
"""

import math
from pathlib import Path

import pytest
import torch

from autograder import plan as plans
from autograder.checks import localization, reference_steps, targets
from autograder.config import load as load_course
from autograder.grading.grader import grade
from autograder.loading import Submission
from autograder.sandbox.process import WorkerFailure
from autograder.sandbox.session import trace_answer

CORPUS = Path(__file__).resolve().parent / "corpus"
CHAPTER = load_course().chapter

# file -> (target, step, the line of the bug)
EXPECTED = {
    "attention/mutants/loc_scores_halved_after_scale.py": (targets.SDPA, "masked", "scores = scores / 2.0"),
    "attention/mutants/loc_values_halved.py": (targets.MHA, "head_out", "self.wv(v) * 0.5"),
    "attention/mutants/loc_heads_concat_reversed.py": (targets.MHA, "merged", "heads[::-1]"),
    "encoder/mutants/loc_ffn_hidden_halved.py": (targets.FFN, "gelu", "hidden * 0.5"),
    "encoder/mutants/loc_attn_residual_half.py": (targets.ENC, "res1", "0.5 * a"),
    "decoder/mutants/loc_cross_residual_doubled.py": (targets.DEC, "res2", "2 * z"),
    "encoder/mutants/loc_pe_base_1000.py": (targets.PE, "freq", "torch.pow(1000.0"),
}


# One-bug files of kinds the issue listed as not named (issue 22): each must be named by the
# catalogue or localized at its line (one of these lines), never elsewhere.
NAMED_OR_LOCALIZED = {
    "attention/mutants/loc_scale_precedence.py": ("d_k ** 1/2",),
    "attention/mutants/loc_values_from_query.py": ("self.wv(q)",),
    "attention/mutants/loc_mask_times_inf.py": ("mask * float",),
    "attention/mutants/loc_scale_after_softmax.py": ("scores = q @ k", "masked_fill", "softmax(dim=-1) /"),
    "attention/mutants/loc_heads_merged_dk_major.py": ("permute(0, 2, 3, 1)",),
    # split by a plain view: the values are all there, in the projection's order, cut across heads
    "attention/mutants/loc_value_heads_plain_reshape.py": ("self.wv(v).reshape(batch, self.n_heads",),
    "attention/mutants/loc_query_heads_plain_view.py": ("self.wq(q).view(B, H, Tq, dk)",),
    "encoder/mutants/loc_ffn_residual_half.py": ("0.5 * self.ffn",),
    "encoder/mutants/loc_preln_output_normalised.py": ("self.ln2(h + self.ffn(self.ln2(h)))",),
    "encoder/mutants/loc_ln1_affine_ignored.py": ("F.layer_norm(x + a",),
    "decoder/mutants/loc_cross_query_from_input.py": ("self.ln2(x)",),
    "decoder/mutants/loc_cross_values_raw_memory.py": ("m, memory)",),
    "decoder/mutants/loc_ln1_reused_for_ln2.py": ("m = self.ln1(memory)",),
}

# One-bug files that raise at the localization's sizes (issue 22: "a crash is one finding, with
# the student's line"): file -> (target, the step not reached, the lines that may be given).
CRASHES = {
    # raises inside scaled_dot_product_attention, which is right: the line that calls it
    "attention/mutants/loc_crash_mask_as_padding.py": (
        targets.MHA, "head_masked", ("mask.reshape(b, 1, 1, -1)", "scaled_dot_product_attention(Q, K, V, mask)")),
    # a block: the line of its own forward, not the line inside its sub-layer
    "decoder/mutants/loc_crash_cross_query_swapped.py": (
        targets.DEC, "cross", ("self.cross_attn(m, q, q)", "h = h + z")),
}


def _grade(path, assignment):
    return grade(Submission(path.stem, assignment, path), plans.load(assignment))


def _line_of(path, text):
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line and not line.startswith("#"))


def _named(result):
    """The catalogue's mistakes among the diagnoses (not the findings that only group failed
    checks under another: autograder.checks.consequences)."""
    return [d for d in result.diagnoses if d.mistake not in ("raises", "follows")]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_uncatalogued_bug_is_localized_at_its_step_and_line(name):
    path = CORPUS / name
    target, step, text = EXPECTED[name]
    result = _grade(path, name.split("/")[0])
    assert result.score < result.max_score
    assert not _named(result), "a bug the catalogue names is not one for localization"
    found = result.localization_for(target)
    assert found is not None, f"{name}: not localized ({result.localizations})"
    assert (found.step, found.origin, found.line) == (step, "file", _line_of(path, text))
    assert [x.target for x in result.localizations] == [target]  # named once, at its root
    assert set(found.checks) <= set(result.failed_ids) and found.checks
    assert "baris" in found.text.id and "line" in found.text.en
    assert result.to_json()["localizations"][0]["step"] == step  # it survives the record


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NAMED_OR_LOCALIZED))
def test_a_listed_bug_is_named_or_localized_at_its_line(name):
    path = CORPUS / name
    result = _grade(path, name.split("/")[0])
    assert result.score < result.max_score
    if _named(result):
        return  # the catalogue leads
    assert len(result.localizations) == 1, f"{name}: {result.localizations}"
    found = result.localizations[0]
    lines = {_line_of(path, text) for text in NAMED_OR_LOCALIZED[name]}
    assert found.origin == "file" and found.line in lines, (name, found.text.en)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CRASHES))
def test_a_crash_is_localized_at_the_students_line(name):
    path = CORPUS / name
    target, step, texts = CRASHES[name]
    result = _grade(path, name.split("/")[0])
    assert result.score < result.max_score and not _named(result)
    assert [x.target for x in result.localizations] == [target], result.localizations
    found = result.localizations[0]
    assert (found.step, found.origin) == (step, "file")
    assert found.line in {_line_of(path, text) for text in texts}, found.text.en
    assert "RuntimeError" in found.text.en and "melempar RuntimeError" in found.text.id
    assert f"line {found.line}" in found.text.en and f"baris {found.line}" in found.text.id


def test_a_crash_names_the_students_line_past_a_right_part():
    from autograder.sandbox.process import StudentError
    run = reference_steps.runs(targets.MHA, CHAPTER)[0]
    frames = ["cell 4, line 51, in forward", "cell 3, line 14, in scaled_dot_product_attention"]
    error = StudentError({"type": "RuntimeError", "message": "size mismatch", "where": frames})
    at_part = localization._crash(run, error, False, set())
    assert (at_part.origin, at_part.line, at_part.step) == ("cell 3", 14, None)  # no trace: no step
    past = localization._crash(run, error, False, {targets.SDPA})  # the part passes its own checks
    assert (past.origin, past.line) == ("cell 4", 51)
    assert past.raised[2] == (targets.SDPA, "cell 3", 14)
    record = localization._record(run, past, ("mha.masking",), __import__(
        "autograder.grading.messages", fromlist=["place"]).place)
    assert record.step == "raises" and record.line == 51
    assert "sel 4, baris 51" in record.text.id and "inside `scaled_dot_product_attention`" in record.text.en
    # no line of the student's in the traceback (it raised in torch, called from nowhere of theirs)
    assert localization._crash(run, StudentError({"type": "RuntimeError", "where": []}), False, set()) is None


# -- locate on hand-made traces ------------------------------------------------------------
def _entries(*values, lines=None):
    return [{"value": v, "op": "op", "origin": "cell 3", "line": (lines or {}).get(i, 10 + i),
             "inputs": [i - 1] if i else []} for i, v in enumerate(values)]


def _sdpa_run():
    return reference_steps.runs(targets.SDPA, CHAPTER)[0]


def _reference_result(run):
    steps = {s.name: s.value for s in run.steps}
    return steps["out"].float(), steps["weights"].float()


def test_correct_code_in_any_layout_is_not_localized():
    run = _sdpa_run()
    steps = {s.name: s.value for s in run.steps}
    b, h, tq, tk = steps["scores"].shape
    entries = _entries(steps["scores"].permute(2, 0, 3, 1).float(),  # any layout
                       steps["scaled"].reshape(b * h, tq, tk).float(),
                       steps["weights"].float(), steps["out"].float())
    assert localization.locate(run.steps, _reference_result(run), entries) is None


def test_a_step_in_another_layout_is_found_and_the_first_wrong_one_named():
    run = _sdpa_run()
    steps = {s.name: s.value for s in run.steps}
    wrong = (steps["masked"] * 1.5).softmax(-1)
    entries = _entries(steps["scores"].transpose(0, 1).float(), steps["scaled"].float(),
                       steps["masked"].clamp(min=-1e9).float(), (steps["masked"] * 1.5).float(), wrong.float(),
                       (wrong @ torch.randn(wrong.shape[-1], 4, dtype=torch.float64)).float())
    out, _ = _reference_result(run)
    found = localization.locate(run.steps, (out * 0 + 1, wrong.float()), entries)
    assert (found.step.name, found.after, found.origin, found.line) == ("weights", ["masked"], "cell 3", 13)


def test_values_in_another_arrangement_name_the_step_and_its_line():
    heads = torch.randn(2, 4, 6, 3, dtype=torch.float64)  # (B, H, T, d_k)
    merged = heads.transpose(1, 2).reshape(2, 6, 12)
    wrong = heads.permute(0, 2, 3, 1).reshape(2, 6, 12)  # merged d_k-major
    steps = (reference_steps.Step("heads", localization.bilingual("a", "a"), heads),
             reference_steps.Step("merged", localization.bilingual("b", "b"), merged, ("heads",)),
             reference_steps.Step("out", localization.bilingual("c", "c"), merged * 2, ("merged",), returned=-1))
    entries = _entries(heads.float(), wrong.float(), (wrong * 2).float())
    found = localization.locate(steps, (wrong * 2).float(), entries)
    assert (found.step.name, found.after, found.line) == ("merged", ["heads"], 11)


@pytest.mark.parametrize("t", [5, 6, 7, 8, 12])
def test_a_head_split_that_cuts_across_positions_is_no_layout_of_the_heads(t):
    """The layouts correct code makes hold the heads (B, H, T, d_k); a plain view of the
    projection as (B, H, T, d_k) holds the same values, in the projection's order, and is not
    one (T = H aside, where it cannot be told from a transpose)."""
    b, h, d_k = 2, 4, 3
    projection = torch.randn(b, t, h * d_k, dtype=torch.float64)
    heads = projection.view(b, t, h, d_k).transpose(1, 2)

    def same(value):
        return localization._same_layout(heads, localization._canonical(value).flatten(), tuple(value.shape))

    for right in (projection, projection.view(b, t, h, d_k), heads.contiguous(), heads.reshape(b * h, t, d_k),
                  heads.transpose(-1, -2).contiguous(), projection.reshape(b, t * h, d_k), projection.flatten(),
                  heads.contiguous().view(b, h, t * d_k)):
        assert same(right), tuple(right.shape)
    assert not same(projection.view(b, h, t, d_k))  # split without the transpose
    assert not same(heads.contiguous().view(b, t, h * d_k))  # merged without the transpose
    assert not same(heads.flip(2))  # positions reversed


def test_nothing_found_or_right_output_says_nothing():
    run = _sdpa_run()
    noise = _entries(*(torch.randn(s.value.shape) for s in run.steps))
    assert localization.locate(run.steps, (torch.zeros(1), torch.zeros(1)), noise) is None
    assert localization.locate(run.steps, _reference_result(run), []) is None


def test_a_fused_step_counts_as_found():
    """(q / √d_k) @ kᵀ never makes q @ kᵀ: the scaled scores, found, stand for it."""
    run = _sdpa_run()
    steps = {s.name: s.value for s in run.steps}
    bad = steps["masked"].softmax(-2)  # softmax over the queries
    entries = _entries(steps["scaled"].float(), steps["masked"].float(), bad.float())
    found = localization.locate(run.steps, (bad.float(), bad.float()), entries)
    assert (found.step.name, found.after, found.line) == ("weights", ["masked"], 12)


def test_a_result_computed_right_then_changed_says_so():
    run = reference_steps.runs(targets.FFN, CHAPTER)[0]
    steps = {s.name: s.value for s in run.steps}
    spoiled = torch.nn.functional.layer_norm(steps["out"], steps["out"].shape[-1:])
    entries = _entries(steps["hidden"].float(), steps["gelu"].float(), steps["out"].float(), spoiled.float())
    found = localization.locate(run.steps, spoiled.float(), entries)
    assert (found.step.name, found.changed, found.line) == ("out", True, 13)


def test_right_values_returned_in_another_shape_say_so_at_the_line_that_makes_them():
    run = reference_steps.runs(targets.FFN, CHAPTER)[0]
    steps = {s.name: s.value for s in run.steps}
    flat = steps["out"].float().reshape(-1, steps["out"].size(-1))  # (B*T, D): never reshaped back
    entries = _entries(steps["hidden"].float(), steps["gelu"].float(), flat)
    found = localization.locate(run.steps, flat, entries)
    assert (found.step.name, found.line, found.shape) == ("out", 12, (tuple(flat.shape), tuple(steps["out"].shape)))
    wrong = flat * 1.5  # other values in another shape: not this finding
    found = localization.locate(run.steps, wrong, _entries(steps["hidden"].float(), steps["gelu"].float(), wrong))
    assert found is None or found.shape is None


# -- a hostile worker ----------------------------------------------------------------------
@pytest.mark.parametrize("reply", [
    {"trace": {"entries": "everything", "dropped": 0}},
    {"trace": {"entries": [{"value": {"__tensor__": {"dtype": "float32", "shape": [10 ** 7],
                                                     "device": "cpu", "data": [0, 0]}}}], "dropped": 0}},
    {"trace": {"entries": [{"value": 3, "op": "x", "inputs": []}], "dropped": 0}},
    {"trace": {"entries": [{"value": {"__other__": "x"}, "inputs": [5]}]}},
    {"trace": {"entries": [{}] * 10_000}},
    {},
])
def test_malformed_traces_are_refused(reply):
    with pytest.raises(WorkerFailure):
        trace_answer(reply)


# The loader keeps definitions only: a class body runs when the submission is loaded.
FORGE = '''
import sys as _sys


def _forged(self, encode):
    import torch as _torch
    fake = [{"value": encode(_torch.zeros(2, 2)), "op": "matmul", "origin": "cell 1",
             "line": 1, "inputs": []}] * 3
    return {"entries": fake, "dropped": 0}


class _Forge:
    _sys.modules["tracing"].Tracer.report = _forged
'''
BREAK = '''
import sys as _sys


class _Break:
    _sys.modules["tracing"].Tracer.report = lambda self, encode: {"entries": [{"value": 1}] * 5}
'''


@pytest.mark.slow
@pytest.mark.parametrize("prelude", [FORGE, BREAK], ids=["forged", "broken"])
def test_a_worker_that_forges_its_trace_changes_no_point(tmp_path, prelude):
    source = CORPUS / "attention/mutants/loc_scores_halved_after_scale.py"
    honest = _grade(source, "attention")
    hostile_path = tmp_path / source.name
    hostile_path.write_text(source.read_text(encoding="utf-8") + prelude, encoding="utf-8")
    hostile = _grade(hostile_path, "attention")
    assert hostile.score == honest.score
    assert [(o.check.id, o.status, o.score) for o in hostile.outcomes] == \
        [(o.check.id, o.status, o.score) for o in honest.outcomes]
    assert honest.localizations and not hostile.localizations
