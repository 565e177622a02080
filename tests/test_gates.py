"""Gates that measure, not detect (autograder/checks/registry.py, the gate rule): degenerate code
plus a small or scaled-down term that depends on each input (tests/hostile/gates/) earns at most
DEGENERATE_SHARE of each attacked target's points, stopped once by the target's gate. Before the
gates compared against the reference's movement (an absolute 1e-5 threshold, two cells of the
causal mask), these files earned 33-35/45, 28/47 and 17/25."""

from pathlib import Path

import pytest

from autograder import plan as plans
from autograder.checks.registry import DEGENERATE_SHARE
from autograder.grading.grader import grade
from autograder.loading import Submission

GATES = Path(__file__).resolve().parent / "hostile" / "gates"
# file -> (assignment, the targets it makes degenerate)
ATTACKS = {
    "attention_scaled_down": ("attention", ("scaled_dot_product_attention", "causal_mask", "MultiHeadAttention")),
    "attention_weights_ignore_q": ("attention", ("scaled_dot_product_attention", "MultiHeadAttention")),
    "encoder_scaled_down": ("encoder", ("positional_encoding", "FeedForward", "EncoderBlock")),
    "decoder_scaled_down": ("decoder", ("DecoderBlock",)),
}
GRADED = {}


def graded(name):
    if name not in GRADED:
        assignment, _ = ATTACKS[name]
        path = GATES / f"{name}.py"
        GRADED[name] = grade(Submission(name, assignment, path), plans.load(assignment))
    return GRADED[name]


def test_every_attack_file_is_listed():
    assert sorted(p.stem for p in GATES.glob("*.py")) == sorted(ATTACKS)


@pytest.mark.parametrize("name, target", [(n, t) for n, (_, ts) in ATTACKS.items() for t in ts])
def test_scaled_down_dependence_earns_no_more_than_degenerate_code(name, target):
    result = graded(name)
    mine = [o for o in result.outcomes if o.check.target == target]
    earned, possible = sum(o.score for o in mine), sum(o.check.points for o in mine)
    gate = next(o for o in mine if o.check.category == "sensitivity")
    assert not gate.passed, f"{target}: the gate let {name} through"
    assert earned <= DEGENERATE_SHARE * possible, \
        f"{target}: {earned}/{possible} for {name}: {[(o.check.id, o.score) for o in mine if o.score]}"
