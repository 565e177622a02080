"""Grading one submission end to end: skips with reasons, one hanging check does not erase
the others, load errors are reported, scores come only from the trusted side."""

import inspect
from pathlib import Path

import pytest

import solutions.attention
from conftest import course_with
from autograder import plan as plans
from autograder.grading.grader import grade
from autograder.loading import Submission

REFERENCE = Path(inspect.getfile(solutions.attention)).read_text()


@pytest.fixture(scope="module")
def fast_course(tmp_path_factory):
    return plans.resolve(course_with(tmp_path_factory.mktemp("course"), request_timeout=3, max_restarts=3),
                         "attention")


def run(tmp_path, course, source, name="student"):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    result = grade(Submission(name, "attention", path), course)
    return result, {o.check.id: o for o in result.outcomes}


def test_missing_class_skips_its_checks_with_the_reason(tmp_path, fast_course):
    source = REFERENCE.replace("class MultiHeadAttention", "class MultiHeadAttn")
    result, by_id = run(tmp_path, fast_course, source)
    assert by_id["mha.present"].status == "failed"
    assert "MultiHeadAttention" in by_id["mha.present"].message["en"]
    assert by_id["mha.shape"].status == "skipped" and "mha.construct" in by_id["mha.shape"].message["en"]
    assert by_id["sdpa.numeric"].status == "passed"


def test_a_hang_in_one_case_costs_only_the_checks_that_reach_it(tmp_path, fast_course):
    hidden = fast_course.hidden.d_model
    source = REFERENCE.replace(
        "        b, tq, d = q.shape\n",
        f"        b, tq, d = q.shape\n        while d == {hidden}:\n            pass\n")
    result, by_id = run(tmp_path, fast_course, source)
    assert by_id["mha.hidden_config"].status == "timeout"  # its own status, kept in the record
    assert "Time limit" in by_id["mha.hidden_config"].message["en"]
    assert by_id["mha.numeric"].status == "passed" and by_id["mha.masking"].status == "passed"
    assert result.score == result.max_score - by_id["mha.hidden_config"].check.points


def test_crash_at_load_is_reported_for_every_check(tmp_path, fast_course):
    result, by_id = run(tmp_path, fast_course, "import os\nos._exit(1)\n" + REFERENCE.replace(
        "import math", "import math\nclass _Boom:\n    os._exit(1)", 1))
    assert result.score == 0
    assert all(o.status == "skipped" for o in result.outcomes)
    assert "stopped abruptly" in by_id["sdpa.present"].message["en"]


def test_definition_errors_are_listed_as_problems(tmp_path, fast_course):
    source = REFERENCE + "\nimport no_such_module_here\n"
    result, _ = run(tmp_path, fast_course, source)
    assert result.score == result.max_score
    assert any("no_such_module_here" in p["en"] for p in result.problems)


def test_printing_fake_scores_changes_nothing(tmp_path, fast_course):
    source = REFERENCE.replace(
        "    d_k = q.size(-1)\n",
        "    print('Points 100/100', '{\"score\": 100}')\n    d_k = q.size(-1)\n    q = q * 2\n")
    result, by_id = run(tmp_path, fast_course, source)
    assert by_id["sdpa.numeric"].status == "failed" and result.score < result.max_score


@pytest.mark.parametrize("assignment, mutant", [
    ("attention", "mha_hardcoded_heads"), ("attention", "causal_hardcoded_length"),
    ("encoder", "enc_hardcoded_heads"), ("encoder", "ffn_hardcoded_dff"),
    ("encoder", "pe_hardcoded_dmodel"), ("decoder", "dec_hardcoded_length")])
def test_no_message_shows_the_hidden_sizes(assignment, mutant):
    """A hard-coded size fails on the hidden sizes; the feedback says so without naming them."""
    import re

    plan = plans.load(assignment)
    path = Path(__file__).parent / "corpus" / assignment / "mutants" / f"{mutant}.py"
    result = grade(Submission(mutant, assignment, path), plan)
    hidden = plan.hidden
    secret = {hidden.d_model, hidden.d_ff, hidden.length} - {16, 32, 5, 6}  # not the chapter's
    failed = [o for o in result.outcomes if o.status == "failed"]
    assert failed, "the mutant must fail somewhere"
    for outcome in failed:
        for lang in ("id", "en"):
            numbers = {int(n) for n in re.findall(r"(?<![\w.])\d+(?![\w.]|\.\d)", outcome.message[lang])}
            assert not numbers & secret, (outcome.check.id, outcome.message[lang])


def test_shared_reference_weights_are_encoded_once_and_are_the_modules():
    """A check's shared reference module travels as bytes encoded once per grading process:
    a second submission reuses every entry, and each entry's bytes are the module's weights."""
    import torch

    from autograder.checks import context
    from autograder.sandbox import wire

    plan = plans.load("encoder")
    andi = Path(__file__).resolve().parent.parent / "examples" / "submissions" / "andi" / "encoder" / "encoder.ipynb"
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:  # grading runs on one torch thread and leaves the caller's (a student's kernel) as it was
        grade(Submission("andi", "encoder", andi), plan)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(threads)
    before = context._SHARED_REFERENCES.snapshot()
    assert before
    result = grade(Submission("andi", "encoder", andi), plan)
    assert result.score == result.max_score
    assert all(context._SHARED_REFERENCES.get(key) is entry for key, entry in before.items())
    for module, values in before.values():
        parameters = dict(module.named_parameters())
        assert set(values) == set(parameters)
        for path, encoded in values.items():
            assert torch.equal(wire.decode_value(encoded), parameters[path].detach())


# One submission graded by batch.run right after the zygote was started (as `autograder grade`
# does): until the zygote is ready, the grader warms the checks up (grader.warm_up) instead of
# waiting for it. The real zygote, in a fresh interpreter; launch.early_starting and the
# session's shared_zygote are wrapped only to record what they answer and when they are asked.
WARM_WHILE_STARTING = '''
import json, sys, tempfile
from pathlib import Path
import torch
from autograder import config, loading, plan as plans
from autograder.grading import batch
from autograder.sandbox import launch, process, session as sessions

plan = plans.resolve(config.load(None), "attention", "en")
submissions = loading.discover(["examples/submissions/andi/attention/attention.ipynb"], plan.name, plan.notebook)
answers, at_first_worker = [], {}
early_starting, shared_zygote = launch.early_starting, sessions.shared_zygote

def recorded():
    answers.append(early_starting())
    return answers[-1]

def first_worker():
    at_first_worker.setdefault("hypothesis", "hypothesis" in sys.modules)
    return shared_zygote()

launch.early_starting, sessions.shared_zygote = recorded, first_worker
launch.start_early()  # after every import: the zygote imports torch for a second or more
with tempfile.TemporaryDirectory() as out:
    graded = batch.run(plan, submissions, out, jobs=1)
first_sizes = next(i for i, c in enumerate(plan.checks) if c.id.endswith(".sizes"))
print(json.dumps({"answers": answers, "checks": len(plan.checks), "first_sizes": first_sizes,
                  "hypothesis_at_first_worker": at_first_worker["hypothesis"],
                  "scores": [[r.score, r.max_score] for r in graded.results]}))
process.stop()
'''


def test_one_submission_warms_the_checks_up_while_the_zygote_starts():
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", WARM_WHILE_STARTING], cwd=root, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    answers = report["answers"]
    assert answers[0] is True  # asked before the first check: still starting, so it warmed up
    if False in answers:  # it stopped at the first "ready"
        assert answers.index(False) == len(answers) - 1
    else:  # every check warmed up while it was starting
        assert len(answers) == report["checks"]
    warmed = answers.count(True)
    # Hypothesis (the sizes checks' first import) was there before the first worker iff the
    # warm-up reached the first sizes check
    assert report["hypothesis_at_first_worker"] == (warmed > report["first_sizes"])
    assert report["scores"] == [[45.0, 45.0]]


FREEZE_PROBE = """
import gc, sys
from autograder import cli
status = cli.main(["grade", sys.argv[1], "--assignment", "attention", "--out", sys.argv[2], "--jobs", "1"])
print(status, gc.get_freeze_count())
"""


def test_a_batch_graded_in_this_process_freezes_what_its_start_made(tmp_path):
    """batch.run: after the warm-up, before the grading threads start, what exists is frozen
    (gc.freeze), as a GradingPool does before it forks. Hypothesis runs a full collection the
    first time a thread uses it, which walked all of torch's objects in every cold grading
    (~0.1 s of the grader's CPU for one submission)."""
    import subprocess
    import sys

    notebook = Path(__file__).resolve().parents[1] / "examples" / "submissions" / "andi" / "attention" / "attention.ipynb"
    done = subprocess.run([sys.executable, "-c", FREEZE_PROBE, str(notebook), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    status, frozen = done.stdout.split()[-2:]
    assert status == "0", done.stderr[-2000:]
    assert int(frozen) > 100_000  # torch alone makes several hundred thousand objects
