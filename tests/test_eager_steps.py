"""autograder/checks/eager_steps.py: the grader's Adam takes the same steps as a plain
torch.optim.Adam, bit for bit, and never imports torch._dynamo (seconds of CPU in every grading
process). In a fresh interpreter: the test process has torch._dynamo imported already."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from autograder.checks import eager_steps

ROOT = Path(__file__).resolve().parent.parent

# Several steps of the reference Transformer through the grader's own Stepper (its reference
# step, from the state before each step) and of a small model under other Adam options with
# eager_steps.adam; then (importing torch._dynamo) the same steps with a plain torch.optim.Adam
# from the same start; every parameter and moment compared bitwise.
SCRIPT = textwrap.dedent("""
    import json, sys
    import torch
    import solutions
    from autograder.checks import eager_steps, load
    load()  # the registry, before outcome
    from autograder.checks import outcome, steps

    def flat(state):
        return [*state["params"].values(), *(m[k] for m in state["adam"].values()
                                             for k in ("exp_avg", "exp_avg_sq", "step"))]

    def with_optimizer(make, build, batches, train):
        torch.manual_seed(0)
        model = build()
        optimizer = make(model.parameters())
        losses = [train(model, optimizer, batch) for batch in batches]
        tensors = flat(steps.state_of(model, optimizer))
        tensors += [optimizer.state[p]["max_exp_avg_sq"] for p in model.parameters()
                    if "max_exp_avg_sq" in optimizer.state[p]]
        return losses, tensors

    def with_stepper(batches):
        torch.manual_seed(0)
        state, losses = steps.initial_state(solutions.Transformer(*outcome.NOTEBOOK)), []
        stepper = steps.Stepper(outcome.NOTEBOOK, outcome.LR)
        for batch in batches:
            loss, state = stepper.step(state, batch)
            losses.append(loss)
        return losses, flat(state)

    def small_step(model, optimizer, batch):
        optimizer.zero_grad()
        loss = (model(batch) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss.item()

    g = torch.Generator().manual_seed(1)
    toy = [steps.toy_batch(8, 6, g) for _ in range(4)]
    small = [torch.randn(5, 8, generator=g) for _ in range(4)]
    options = dict(lr=3e-2, weight_decay=0.1, amsgrad=True, betas=(0.8, 0.99))
    small_model = lambda: torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    torch.manual_seed(0)
    start = flat(steps.initial_state(small_model()))
    eager = [with_stepper(toy),
             with_optimizer(lambda p: eager_steps.adam(p, **options), small_model, small, small_step)]
    report = {"dynamo_after_eager": "torch._dynamo" in sys.modules, "grad_mode_after": torch.is_grad_enabled()}
    plain = [with_optimizer(lambda p: torch.optim.Adam(p, lr=outcome.LR),
                            lambda: solutions.Transformer(*outcome.NOTEBOOK), toy,
                            lambda m, o, b: solutions.train_step(m, o, *b)),
             with_optimizer(lambda p: torch.optim.Adam(p, **options), small_model, small, small_step)]
    report["dynamo_after_plain"] = "torch._dynamo" in sys.modules
    report["losses_equal"] = [e[0] == p[0] for e, p in zip(eager, plain)]
    report["tensors"] = [len(e[1]) for e in eager]
    report["bitwise"] = [len(e[1]) == len(p[1]) and all(a.dtype == b.dtype and torch.equal(a, b)
                                                        for a, b in zip(e[1], p[1]))
                         for e, p in zip(eager, plain)]
    report["small_moved"] = not all(torch.equal(a, b) for a, b in zip(eager[1][1], start))
    print(json.dumps(report))
""")


def test_the_grader_adam_steps_bitwise_as_plain_adam_without_importing_dynamo():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["dynamo_after_eager"] is False
    assert report["dynamo_after_plain"] is True  # the plain Adam does import it: the test can tell
    assert report["grad_mode_after"] is True
    assert report["losses_equal"] == [True, True]
    assert report["bitwise"] == [True, True]
    # every parameter with its three moments (and amsgrad's maximum); the steps moved them
    assert report["tensors"][0] > 4 * 50 and report["tensors"][1] == 4 * 4 + 4
    assert report["small_moved"] is True


def test_a_registered_step_hook_still_runs():
    layer = torch.nn.Linear(3, 3)
    optimizer = eager_steps.adam(layer.parameters(), lr=0.1)
    seen = []
    handle = optimizer.register_step_post_hook(lambda opt, args, kwargs: seen.append("post"))
    try:
        layer(torch.ones(2, 3)).sum().backward()
        optimizer.step()
    finally:
        handle.remove()
    assert seen == ["post"]


def test_decorators_it_does_not_know_are_left_alone():
    def step(self, closure=None):
        return None

    def unknown(*args):
        return step(*args)
    unknown.__wrapped__ = step
    assert eager_steps._undecorated(step, eager_steps._STEP_WRAPPERS) is None
    assert eager_steps._undecorated(unknown, eager_steps._STEP_WRAPPERS) is None
    assert eager_steps._undecorated(torch.optim.Adam.step, eager_steps._STEP_WRAPPERS) is not None
    assert eager_steps._undecorated(torch.optim.Adam.zero_grad, (eager_steps._DISABLE_DYNAMO,)) is not None
