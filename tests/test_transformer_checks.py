"""Assignment 4's grading (autograder/checks/transformer.py, training.py, outcome.py, steps.py):
the step comparison that every training step is held to, the hidden task the reference must
learn within the stated budget, and hostile train_steps (tests/hostile/training/) graded through
the real loader, sandbox and checks: none of them earns train.outcome. The correct and one-bug
submissions are in tests/corpus/transformer/ (tests/test_corpus.py); the reference notebook's
training, its loss curves and the class report's training table are checked on the real reports
of nbgrader autograde and ``autograder grade`` (tests/test_nbgrader.py), the one place the suite
trains the reference through the grader."""

import time
from pathlib import Path

import pytest
import torch

import solutions
from autograder import plan as plans
from autograder.checks import load, registry

load()

from autograder.checks import outcome, steps  # noqa: E402  (after the registry: outcome needs it)

HOSTILE = Path(__file__).parent / "hostile" / "training"
ARGS = outcome.NOTEBOOK


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def honest_pair(seed=0, length=6):
    """(state before, batch, the reference's state after one step)."""
    torch.manual_seed(seed)
    before = steps.initial_state(solutions.Transformer(*ARGS))
    stepper = steps.Stepper(ARGS, outcome.LR)
    generator = torch.Generator().manual_seed(seed)
    _, after = stepper.step(before, steps.toy_batch(16, length, generator))  # moments exist now
    batch = steps.toy_batch(16, length, generator)
    _, expected = stepper.step(after, batch)
    return stepper, after, batch, expected


def test_an_honest_step_in_another_style_is_one_step():
    """The same step computed another way (cross-entropy on (B, V, T), PE recomputed in the
    model's dtype) differs by rounding only, the key biases (no true gradient) included."""
    stepper, before, batch, expected = honest_pair()
    model, optimizer = stepper.load(before)
    optimizer.zero_grad()
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)
    torch.nn.functional.cross_entropy(logits.transpose(1, 2), tgt_out).backward()
    optimizer.step()
    assert steps.compare_states(steps.state_of(model, optimizer), expected, outcome.LR) is None


def copied(state):
    return {"params": {k: v.clone() for k, v in state["params"].items()},
            "adam": {k: {m: v.clone() for m, v in moments.items()} for k, moments in state["adam"].items()}}


def test_only_an_exactly_equal_state_is_the_same_state():
    """train.update takes the reference's second step once per process for a first state that
    is exactly the reference's (``steps.same_state``); any other state is stepped from itself."""
    _, state, _, _ = honest_pair()
    name, moment = next(iter(state["params"])), next(iter(state["adam"]))
    state["params"][name].view(-1)[0] = 0.0
    assert steps.same_state(state, copied(state))
    changes = {
        "a value": lambda s: s["params"][name].view(-1)[1].add_(1e-7),
        "a zero's sign": lambda s: s["params"][name].view(-1)[0].copy_(torch.tensor(-0.0)),
        "a dtype": lambda s: s["params"].__setitem__(name, s["params"][name].double()),
        "NaN": lambda s: s["params"][name].view(-1)[1].copy_(torch.tensor(float("nan"))),
        "a moment": lambda s: s["adam"][moment]["exp_avg"].view(-1)[0].add_(1e-7),
        "the step count": lambda s: s["adam"][moment].__setitem__("step", s["adam"][moment]["step"] + 1),
        "an extra path": lambda s: s["params"].__setitem__("extra", torch.zeros(1)),
        "a missing moment": lambda s: s["adam"].pop(moment),
        "not a tensor": lambda s: s["params"].__setitem__(name, [0.0]),
    }
    for what, change in changes.items():
        other = copied(state)
        change(other)
        assert not steps.same_state(state, other), what
        assert not steps.same_state(other, state), what


@pytest.mark.parametrize("tamper, said", [
    ("planted", "is off by"),
    ("two_steps", "exactly once"),
    ("other_batch", "is off by"),
    ("lr", "is off by"),
    ("moments", "exp_avg"),
    ("step_count", "exactly once"),
])
def test_a_dishonest_step_is_named(tamper, said):
    stepper, before, batch, expected = honest_pair()
    model, optimizer = stepper.load(before)
    if tamper == "other_batch":
        batch = steps.toy_batch(16, 6, torch.Generator().manual_seed(99))
    if tamper == "lr":
        for group in optimizer.param_groups:
            group["lr"] = 3 * outcome.LR
    for _ in range(2 if tamper == "two_steps" else 1):
        solutions.train_step(model, optimizer, *batch)
    got = steps.state_of(model, optimizer)
    if tamper == "planted":
        got["params"] = {k: v + 0.05 * torch.randn_like(v) for k, v in got["params"].items()}
    if tamper == "moments":
        got["adam"] = {k: {**m, "exp_avg": m["exp_avg"] * 0.5} for k, m in got["adam"].items()}
    if tamper == "step_count":
        got["adam"] = {k: {**m, "step": m["step"] + 1} for k, m in got["adam"].items()}
    problem = steps.compare_states(got, expected, outcome.LR)
    assert problem is not None and said in problem.en, problem


def test_the_budget_is_stated_in_the_feedback():
    declared = registry.REGISTRY["train.outcome"]
    for language in ("id", "en"):
        assert f"{outcome.MAX_STEPS}" in declared.hint[language]
        assert f"{outcome.BUDGET_SECONDS}" in declared.hint[language]


@pytest.mark.slow
def test_the_reference_learns_the_hidden_task_within_the_budget():
    """The reference's own training on the hidden variant reaches the target well inside the
    step budget (the check would fail a correct submission otherwise)."""
    length, relabel, order, seed = outcome.variant()
    assert 4 <= length <= 12 and not torch.equal(order, torch.arange(length).flip(0))
    torch.manual_seed(seed)
    state = steps.initial_state(solutions.Transformer(*ARGS))
    stepper = steps.Stepper(ARGS, outcome.LR)
    evaluation = steps.toy_batch(outcome.EVAL, length, torch.Generator().manual_seed(seed + 1), relabel, order)
    batches = torch.Generator().manual_seed(seed + 2)
    began = time.process_time()
    for step in range(1, outcome.MAX_STEPS + 1):
        _, state = stepper.step(state, steps.toy_batch(outcome.BATCH, length, batches, relabel, order))
        if step % outcome.EVERY == 0:
            accuracy = steps.sequence_accuracy(stepper, state["params"], evaluation[0], evaluation[2])
            if accuracy >= outcome.TARGET:
                break
    assert accuracy >= outcome.TARGET and step <= outcome.MAX_STEPS * 0.75, (step, accuracy)
    assert time.process_time() - began < outcome.BUDGET_SECONDS / 2


@pytest.mark.slow
@pytest.mark.parametrize("name, said", [
    ("planted_weights", "Training step 3 (your model and train_step) is not the reference's step"),
    ("reads_ahead", "is not the reference's step"),
    ("forks", "is not the reference's step"),
    ("sleeps", "ran past its time budget after 25 steps"),
])
def test_a_hostile_train_step_earns_no_training_outcome(tmp_path, monkeypatch, name, said):
    from autograder.grading.grader import grade
    from autograder.loading import Submission

    # the sleeper sleeps from its 26th step: the budget stops it at whatever it is (the first 25
    # steps take ~2 s); 8 s instead of the declared 60 spares the suite ~50 s of waiting
    monkeypatch.setattr(outcome, "BUDGET_SECONDS", 8)
    monkeypatch.setattr(outcome, "WALL_FACTOR", 1)  # the sleeper uses no CPU: the wall clock stops it
    plan = plans.load("transformer")
    result = grade(Submission(name, "transformer", HOSTILE / f"{name}.py"), plan)
    by_id = {o.check.id: o for o in result.outcomes}
    assert by_id["train.outcome"].status in ("failed", "skipped"), by_id["train.outcome"]
    if name in ("planted_weights", "sleeps"):  # honest on the short checks: caught by the long run
        assert by_id["train.update"].status == "passed"
        assert said in by_id["train.outcome"].message["en"], by_id["train.outcome"].message
        assert "Your loss curve:" in by_id["train.outcome"].message["en"]
    elif by_id["train.outcome"].status == "failed":
        assert said in by_id["train.outcome"].message["en"], by_id["train.outcome"].message
    else:  # caught already by the two-step check
        assert by_id["train.update"].status == "failed"
    assert all(o.status != "error" for o in result.outcomes)
    assert result.score <= result.max_score - registry.REGISTRY["train.outcome"].points


# -- one check of the reference with a part of it rewritten, in-process (trusted test code) -------------
def one_check(check_id, code):
    """The English message of ``check_id`` failing on the reference solution followed by
    ``code`` (which redefines a part of it), or None when it passes."""
    from autograder.checks.context import Context
    from autograder.checks.registry import CheckFailed
    from autograder.sandbox import inprocess

    session = inprocess.session("from solutions import *\nimport torch\n" + code, origin="rewritten")
    plan = plans.load("transformer")
    check = next(c for c in plan.checks if c.id == check_id)
    try:
        check.run(Context(session, plan, check))
        return None
    except CheckFailed as failure:
        return failure.message["en"]
    finally:
        session.close()


def expect_verdict(said, expected):
    """``expected``: None (the check passes) or a text its failure must say."""
    if expected is None:
        assert said is None, said
    else:
        assert said is not None and expected in said, said


# -- tf.length_error: the contract's "a length over max_len is a clear ValueError" -----------------
LENGTH_RULES = {
    "the reference's own": "",
    "a ValueError subclass": """
class SequenceTooLong(ValueError):
    pass

class Transformer(Transformer):
    def _embed(self, embedding, tokens):
        if tokens.size(1) > self.max_len:
            raise SequenceTooLong(f"{tokens.size(1)} > max_len")
        return embedding(tokens) * self.d_model ** 0.5 + self.pe[:tokens.size(1)]
""",
    "no check (the PE slice fails to broadcast)": """
class Transformer(Transformer):
    def _embed(self, embedding, tokens):
        return embedding(tokens) * self.d_model ** 0.5 + self.pe[:tokens.size(1)]
""",
    "off by one (exactly max_len refused)": """
class Transformer(Transformer):
    def _embed(self, embedding, tokens):
        if tokens.size(1) >= self.max_len:
            raise ValueError("too long")
        return embedding(tokens) * self.d_model ** 0.5 + self.pe[:tokens.size(1)]
""",
    "checked in encode only": """
class Transformer(Transformer):
    def encode(self, src):
        if src.size(1) > self.max_len:
            raise ValueError("too long")
        return super().encode(src)

    def _embed(self, embedding, tokens):
        return embedding(tokens) * self.d_model ** 0.5 + self.pe[:tokens.size(1)]
""",
    "an assertion instead": """
class Transformer(Transformer):
    def _embed(self, embedding, tokens):
        assert tokens.size(1) <= self.max_len, "too long"
        return embedding(tokens) * self.d_model ** 0.5 + self.pe[:tokens.size(1)]
""",
}
LENGTH_VERDICTS = {
    "the reference's own": None, "a ValueError subclass": None,
    "no check (the PE slice fails to broadcast)": "encode(...) with 7 tokens raised RuntimeError",
    "off by one (exactly max_len refused)": "a sequence of exactly 6 tokens is refused",
    "checked in encode only": "decode(...) with 7 tokens raised RuntimeError",
    "an assertion instead": "raised AssertionError",
}


@pytest.mark.parametrize("rule", LENGTH_RULES)
def test_only_a_clear_valueerror_over_max_len_passes_the_length_check(rule):
    """A ValueError (or a subclass of it) for a length over max_len, in encode and in decode,
    and exactly max_len accepted: anything else fails tf.length_error, saying what happened."""
    expect_verdict(one_check("tf.length_error", LENGTH_RULES[rule]), LENGTH_VERDICTS[rule])


@pytest.mark.parametrize("change, why, said", [
    ("extra", "extra", "as an nn.Parameter; see tf.param_count"),
    ("missing", "missing", "lacks the contract's parameter"),
    ("shape", "shape", "in another shape"),
])
def test_a_state_of_another_layout_names_its_parameter_and_the_count_check(change, why, said):
    """train.outcome cannot measure a model whose parameters differ from the contract's; it
    says which parameter and how, and points at tf.param_count (the root), not at the steps."""
    stepper, state, batch, _ = honest_pair()
    name = next(iter(state["params"]))
    if change == "extra":
        state["params"]["pe"] = torch.zeros(32, 32)
        name = "pe"
    elif change == "missing":
        del state["params"][name]
    else:
        state["params"][name] = torch.zeros(3)
    with pytest.raises(steps.LayoutMismatch) as mismatch:
        stepper.step(state, batch)
    assert (mismatch.value.path, mismatch.value.why) == (name, why)
    message = outcome.layout_mismatch(mismatch.value)
    assert said in message.en and f"`{name}`" in message.en and "tf.param_count" in message.id


# -- train.mode: the contract's model.train(), read while the step runs ----------------------------------
TRAIN_MODES = {
    "the reference's own": (None, ""),
    "no model.train()": ("call model.train()", """
def train_step(model, optimizer, src, tgt_in, tgt_out):
    optimizer.zero_grad()
    logits = model(src, tgt_in)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()
"""),
    "model.train() only after the forward": ("call model.train()", """
def train_step(model, optimizer, src, tgt_in, tgt_out):
    optimizer.zero_grad()
    logits = model(src, tgt_in)
    model.train()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()
"""),
    "the caller's mode restored afterwards": (None, """
def train_step(model, optimizer, src, tgt_in, tgt_out):
    was_training = model.training
    model.train()
    try:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten())
        loss.backward()
        optimizer.step()
        return loss.item()
    finally:
        model.train(was_training)
"""),
    "encode and decode called directly": (None, """
def train_step(model, optimizer, src, tgt_in, tgt_out):
    model.train()
    optimizer.zero_grad()
    logits = model.decode(tgt_in, model.encode(src))
    loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), tgt_out)
    loss.backward()
    optimizer.step()
    return loss.item()
"""),
}


@pytest.mark.parametrize("rule", TRAIN_MODES)
def test_train_mode_reads_the_mode_while_the_step_runs(rule):
    """The step gets a model in eval mode; it must run it in training mode, however it is
    written (restoring the caller's mode afterwards, calling encode and decode itself)."""
    expected, code = TRAIN_MODES[rule]
    expect_verdict(one_check("train.mode", code), expected)
