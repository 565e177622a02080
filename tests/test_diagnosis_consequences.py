"""One failure is read once (autograder/checks/consequences.py): an error raised by the
student's code that fails several checks of a target is one finding, with the error and its
line; the checks at other sizes that fail because a value check at the chapter's sizes fails are
listed under that failure, with no hint about hard-coded sizes or squeeze() of their own.
Graded through the real loader, sandbox and checks."""

from pathlib import Path

import pytest

from autograder import plan as plans, reports
from autograder.checks.consequences import FOLLOWS, RAISES
from autograder.grading.grader import grade
from autograder.loading import Submission
from autograder.records import to_fix

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parent / "corpus"


def _graded(tmp_path, assignment, source, old, new):
    text = source.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "student.py"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return grade(Submission("student", assignment, path), plans.load(assignment))


def test_one_error_in_several_checks_is_one_finding(tmp_path):
    """A mask reshaped to the scores' shape raises for a (B, 1, 1, Tk) padding mask: one error,
    one finding with its line, every check it fails listed under it."""
    result = _graded(tmp_path, "attention", CORPUS / "attention" / "correct" / "einsum.py",
                     "masked_fill(mask,", "masked_fill(mask.view(scores.shape),")
    raised = [d for d in result.diagnoses if d.mistake == RAISES]
    assert raised, [(o.check.id, o.message.en if o.message else "") for o in to_fix(result.outcomes)]
    for finding in raised:
        assert len(finding.explains) >= 2
        assert "line" in finding.title.en and "raised" in finding.title.en
        # each language says where in its own words, the hint included
        assert "baris" in finding.hint.id and "line" not in finding.hint.id, finding.hint.id
    # the sizes check's smallest case is said apart from the error quoted (another check's sizes)
    assert any("The smallest sizes found with the same error: q (1, " in f.title.en for f in raised), \
        [f.title.en for f in raised]
    left = to_fix(result.outcomes, *result.diagnoses)
    assert not any("raised" in (o.message.en if o.message else "") for o in left), [o.message.en for o in left]
    # the feedback reads it once: the finding, then its checks without hints of their own
    page = reports.feedback_md(result, "en", "attention")
    fix = page.split("**What to fix:**")
    assert raised[0].title.en.split(":")[0] in page and "Failed because of this alone" in page
    assert not any(f"`{c}`" in part.split("\n\n")[0] for part in fix[1:] for c in raised[0].explains), page


def test_checks_at_other_sizes_follow_from_the_value_check(tmp_path):
    """A post-LN block whose feed-forward reads x instead of h: enc.hidden_config and enc.sizes
    fail because enc.postln_wiring does, and are listed under it."""
    result = _graded(tmp_path, "encoder", CORPUS / "encoder" / "correct" / "sanity_assert_finite.py",
                     "return self.ln2(h + self.ffn(h))", "return self.ln2(h + self.ffn(x))")
    failed = {o.check.id for o in result.outcomes if o.status == "failed"}
    assert "enc.postln_wiring" in failed and "enc.hidden_config" in failed, failed
    follows = [d for d in result.diagnoses if d.mistake == FOLLOWS]
    assert follows and "enc.postln_wiring" in follows[0].title.en
    assert {"enc.hidden_config", "enc.sizes"} & set(follows[0].explains)
    left = {o.check.id for o in to_fix(result.outcomes, *result.diagnoses)}
    assert not left & {"enc.hidden_config", "enc.sizes"}, left


def test_blocked_values_that_leak_through_mixed_heads_follow_from_the_value_check(tmp_path):
    """Values split into heads by a plain reshape mix positions into every head: the blocked
    keys' values then reach the output although the weights are masked right. That masking
    failure is listed under mha.numeric, with no hint to fill the mask before the softmax."""
    path = CORPUS / "attention" / "mutants" / "loc_value_heads_plain_reshape.py"
    result = grade(Submission("student", "attention", path), plans.load("attention"))
    failed = {o.check.id for o in result.outcomes if o.status == "failed"}
    assert {"mha.numeric", "mha.masking"} <= failed, failed
    follows = [d for d in result.diagnoses if d.mistake == FOLLOWS and d.target == "MultiHeadAttention"]
    assert follows and "mha.numeric" in follows[0].title.en and "mha.masking" in follows[0].explains
    assert "mha.masking" not in {o.check.id for o in to_fix(result.outcomes, *result.diagnoses)}


def test_an_output_from_unmasked_weights_is_a_masking_mistake_of_its_own(tmp_path):
    """The weights are masked, the output is computed from the unmasked ones: right without a
    mask (mha.numeric passes), so the leak is the mask's own failure, with its hint."""
    result = _graded(tmp_path, "attention", CORPUS / "attention" / "correct" / "einsum.py",
                     'Z = torch.einsum("bhqk,bkhd->bqhd", attn, V)',
                     'Z = torch.einsum("bhqk,bkhd->bqhd", (torch.einsum("bqhd,bkhd->bhqk", Q, K) '
                     '/ math.sqrt(self.d_head)).softmax(-1), V)')
    outcomes = {o.check.id: o for o in result.outcomes}
    assert outcomes["mha.numeric"].passed and outcomes["mha.masking"].status == "failed"
    assert not any("mha.masking" in d.explains for d in result.diagnoses if d.mistake == FOLLOWS)


@pytest.mark.parametrize("old, new, mistake", [
    ("z = z.transpose(1, 2).contiguous().view(b, -1, self.num_heads * self.d_k)",
     "z = z.contiguous().view(b, -1, self.num_heads * self.d_k)", "mha.merge_without_transpose"),
    ('            scores = scores.masked_fill(mask, float("-inf"))',
     "            scores = scores.masked_fill(mask == 0, -1e9)",  # one chapter's convention
     "sdpa.mask_inverted"),
])
def test_a_mistake_that_lets_the_future_in_explains_the_blocks_causality(tmp_path, old, new, mistake):
    """Heads merged without the transpose move features between tokens, and an inverted mask
    lets queries see the future: the decoder's causality check fails because of that mistake,
    listed under it, not as a second finding that asks for a causal mask the block has."""
    result = _graded(tmp_path, "decoder", CORPUS / "decoder" / "correct" / "buffer_mask_sliced.py", old, new)
    named = {d.mistake: d for d in result.diagnoses}
    assert mistake in named, [(d.mistake, d.explains) for d in result.diagnoses]
    assert "dec.causality" in named[mistake].explains
    assert "dec.causality" not in {o.check.id for o in to_fix(result.outcomes, *result.diagnoses)}
