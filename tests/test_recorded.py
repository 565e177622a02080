"""Recorded sub-layer calls count only once a fresh worker reproduces them
(autograder/checks/verification.py). The submissions in tests/hostile/recorded/ let a block or
MultiHeadAttention choose what its recorded sub-layer returns (a stash the sub-layer hands back,
or the recorder edited through the wrapper's __closure__); before verification they passed the
wiring checks with a sub-layer skipped or a wrong scale hidden."""

from pathlib import Path

import pytest

from autograder import plan as plans
from autograder.grading.grader import grade
from autograder.loading import Submission

RECORDED = Path(__file__).resolve().parent / "hostile" / "recorded"
# file -> (assignment, the checks that must fail with the verification's message)
ATTACKS = {
    "attention_sdpa_stash": ("attention", ("mha.numeric", "mha.hidden_config")),
    "encoder_ffn_stash": ("encoder", ("enc.postln_wiring", "enc.preln_wiring")),
    "encoder_recorder_edit": ("encoder", ("enc.postln_wiring", "enc.preln_wiring")),
    "decoder_ffn_stash": ("decoder", ("dec.wiring",)),
    # state kept from one call to the next: the check's own calls of the target are made again
    "decoder_causality_stash": ("decoder", ("dec.causality",)),
}
GRADED = {}


def graded(name):
    if name not in GRADED:
        assignment, _ = ATTACKS[name]
        GRADED[name] = grade(Submission(name, assignment, RECORDED / f"{name}.py"), plans.load(assignment))
    return GRADED[name]


def test_every_attack_file_is_listed():
    assert sorted(p.stem for p in RECORDED.glob("*.py")) == sorted(ATTACKS)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_sub_layer_result_the_block_chose_does_not_count(name):
    _, checks = ATTACKS[name]
    result = graded(name)
    outcomes = {o.check.id: o for o in result.outcomes}
    for check_id in checks:
        outcome = outcomes[check_id]
        assert not outcome.passed and outcome.score == 0, (check_id, outcome)
    assert any("cannot be reproduced" in outcomes[c].message.en for c in checks), \
        [(c, outcomes[c].message) for c in checks]


def test_the_reference_examples_verify():
    """Every recorded call of a correct submission is reproduced: full marks."""
    for assignment in ("attention", "encoder", "decoder"):
        path = Path(__file__).resolve().parent.parent / "examples" / "submissions" / "andi" / assignment
        result = grade(Submission("andi", assignment, path / f"{assignment}.ipynb"), plans.load(assignment))
        assert result.score == result.max_score, [(o.check.id, o.message) for o in result.outcomes if not o.passed]
