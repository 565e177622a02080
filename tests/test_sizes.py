"""The sizes checks (autograder/checks/sizes.py) as the grader runs them: what they avoid,
how reproducible they are, and what passing costs."""

from pathlib import Path
from types import SimpleNamespace

import autograder.checks
from autograder.grading import grader
from autograder import plan as plans
from autograder.loading import Submission
from autograder.sandbox.session import Session

autograder.checks.load()  # the check modules in their order (sizes.py needs the others first)
from autograder.checks import search, sizes  # noqa: E402
from autograder.checks.process_cache import ProcessCache  # noqa: E402
ROOT = Path(__file__).resolve().parent.parent


def _ctx(plan, check_id="mha.sizes"):
    return SimpleNamespace(plan=plan, chapter=plan.chapter, hidden=plan.hidden,
                           avoid=getattr(plan, "sizes_to_avoid", plan.hidden), check=SimpleNamespace(id=check_id))


def test_the_hidden_sizes_are_avoided_and_the_seed_is_the_same_through_the_graders_watch():
    """grading hands checks a watched view of the plan (to hide what the student wrote at hidden sizes); the
    search must still see every hidden number, and its seed must not depend on that view."""
    plan = plans.load("attention")
    watched_plan = grader._WatchedPlan(plan)
    watched = _ctx(watched_plan)
    hidden = plan.hidden
    assert search.hidden_numbers(watched) == frozenset(
        [hidden.d_model, hidden.num_heads, hidden.d_ff, hidden.batch, hidden.length,
         hidden.decoder_length, hidden.d_model // hidden.num_heads])
    assert search.seed_of(watched) == search.seed_of(_ctx(plan))
    # kept away from, never sent: reading them so does not count as using the hidden sizes
    assert not watched_plan.used_hidden
    assert search.seed_of(_ctx(plan, "sdpa.sizes")) != search.seed_of(_ctx(plan))


def test_a_passing_sizes_check_sends_its_configurations_together(monkeypatch):
    """Every edge and generated configuration of sdpa.sizes in one request (it has no module
    to build), then its probe of other numbers of leading axes in one more, and MHA's in one
    round trip with the modules it builds (their ``new`` requests are deferred and travel in
    one ``batch`` with the ``calls``)."""
    plan = plans.load("attention")
    requests, current = {}, [None]
    real_request, real_run_one = Session._request, grader._run_one

    def counted(self, message, timeout=None):
        if not self._deferred:  # what goes on the wire: deferred requests go in the batch
            ops = [m["op"] for m in message["requests"]] if message["op"] == "batch" else [message["op"]]
            requests.setdefault(current[0], []).append(ops)
        return real_request(self, message, timeout)

    def run_one(session, check, plan, loaded, *recorded, **options):
        current[0] = check.id
        try:
            return real_run_one(session, check, plan, loaded, *recorded, **options)
        finally:
            current[0] = None  # what follows the checks (diagnoses, pictures) counts apart

    monkeypatch.setattr(Session, "_request", counted)
    monkeypatch.setattr(grader, "_run_one", run_one)
    path = ROOT / "examples" / "submissions" / "andi" / "attention" / "attention.ipynb"
    result = grader.grade(Submission("andi", "attention", path), plan)
    assert result.score == result.max_score
    assert requests["sdpa.sizes"] == [["calls"], ["calls"]]
    [mha_round_trip] = requests["mha.sizes"]
    assert mha_round_trip[-1] == "calls" and set(mha_round_trip[:-1]) == {"new"}


def test_the_warm_up_leaves_no_hypothesis_search_for_a_grading_process(monkeypatch):
    """grader.warm_up (run by the grader before it forks its grading processes): every sizes
    check's generated configurations are found there, once, so that grading a submission
    afterwards searches with Hypothesis only to shrink a failure; it asks no worker anything."""
    plan = plans.load("attention")
    monkeypatch.setattr(search, "_GENERATED", ProcessCache())
    grader.warm_up(plan)
    assert {key[0] for key in search._GENERATED.snapshot()} == {c.id for c in plan.checks if c.id.endswith(".sizes")}

    def no_search(self, *args, **kwargs):
        raise AssertionError("Hypothesis searched again while grading")

    monkeypatch.setattr(search.Search, "_hypothesis", no_search)
    path = ROOT / "examples" / "submissions" / "andi" / "attention" / "attention.ipynb"
    result = grader.grade(Submission("andi", "attention", path), plan)
    assert result.score == result.max_score


def test_hypothesis_leaves_no_garbage_collection_callback_behind(monkeypatch):
    """A callback in gc.callbacks swallows a KeyboardInterrupt that lands in it; Hypothesis
    adds one for its timing on its first run. The grader runs Hypothesis (grader.warm_up)
    and must still stop on Ctrl-C (tests/test_interrupt.py), so no run leaves it there."""
    import gc

    from hypothesis.internal.conjecture import junkdrawer

    monkeypatch.setattr(junkdrawer, "_gc_initialized", False)  # as in a process's first run
    monkeypatch.setattr(search, "_GENERATED", ProcessCache())
    before = list(gc.callbacks)
    grader.warm_up(plans.load("attention"))
    grader.warm_up(plans.load("encoder"))
    assert gc.callbacks == before


GENERATED_SIZES = """
import json, sys
sys.path.insert(0, sys.argv[1])
if len(sys.argv) > 2:
    import many_constants  # noqa: F401  (a local module: Hypothesis would draw from its constants)
from autograder import plan as plans
from autograder.checks import search
from autograder.grading import grader
grader.warm_up(plans.load("encoder"))
print(json.dumps({str(key[0]): found for key, found in search._GENERATED._values.items()}, sort_keys=True))
"""


def test_the_sizes_hypothesis_generates_follow_from_the_seed_alone(tmp_path):
    """Hypothesis draws now and then a constant it found in the source of the process's local
    modules (search._no_local_constants): a module full of small ints, imported first, changed
    the sizes pe.sizes tried (a length of 107 instead of 100), so the same submission could be
    graded at other sizes by the command line and by nbgrader, or by an editable install and a
    wheel. Here the sizes must not move."""
    import json
    import subprocess
    import sys

    (tmp_path / "many_constants.py").write_text(f"X = {list(range(1, 200))}\n")
    script = tmp_path / "generated.py"
    script.write_text(GENERATED_SIZES)
    runs = [subprocess.run([sys.executable, str(script), str(tmp_path), *extra], capture_output=True,
                           text=True, timeout=300) for extra in ([], ["with constants"])]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    plain, with_constants = (json.loads(run.stdout) for run in runs)
    assert "pe.sizes" in plain
    assert plain == with_constants
