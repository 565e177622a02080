"""``train.outcome``: the student's model, trained by the student's ``train_step`` on a task it
has not seen, reaches the contract's accuracy, and nothing about it can be faked.

- The task is a hidden variant of the notebook's (``VARIANT``): the target is the source with
  its positions permuted (not reversed) and its token ids relabelled, at a length of its own.
- The student's ``Transformer`` starts from the reference's seeded parameters (copied in by
  name; the layout must be the contract's) and the grader's Adam (lr 3e-3), in the worker.
- The grader sends the batches, ``EVERY`` steps per request, and the worker returns the state
  (parameters and Adam's moments) after every step. Here, each reported state must be one
  honest step from the state before it: the reference's ``train_step`` from that state on the
  same batch (``steps.reference_step``). Weights loaded or planted, extra steps, batches read
  ahead, an optimizer changed: the first such step fails the check, naming it.
- After every ``EVERY`` steps the reference model, holding the reported (verified) parameters,
  decodes ``EVAL`` held-out pairs greedily here; the check passes at the first evaluation with
  at least ``TARGET`` exact-sequence accuracy within ``MAX_STEPS`` steps and ``BUDGET_SECONDS``
  seconds of the worker's CPU time (``TrainingBudget``: the kernel's count, so a busy machine
  does not fail a correct run), and at most ``WALL_FACTOR`` times that in wall-clock time (a
  worker that waits instead of computing is stopped there). The loss values the worker reports are only shown (with the
  reference's) in the message of a run that fails.
"""

import time
import zlib

import torch

import solutions
from autograder.checks.registry import check, fail
from autograder.checks.steps import Stepper, compare_states, evaluate, initial_state, toy_batch
from autograder.checks.targets import TRAIN, TRANSFORMER
from autograder.sandbox.process import WorkerFailure
from autograder.texts import bilingual

NOTEBOOK = (10, 11, 32, 4, 64, 2, 32)  # the notebook's Transformer
LR, BATCH, EVAL, TARGET = 3e-3, 64, 500, 0.95
EVERY, MAX_STEPS, BUDGET_SECONDS, WALL_FACTOR = 25, 400, 60, 4
VARIANT = zlib.crc32(b"train.outcome/variant-1")  # the hidden seed: length, permutations, batches


def variant():
    """(length, relabel, order, seed) of the hidden task."""
    generator = torch.Generator().manual_seed(VARIANT)
    length = 5 + int(torch.randint(0, 4, (1,), generator=generator))
    relabel = torch.randperm(10, generator=generator)
    order = torch.randperm(length, generator=generator)
    return length, relabel, order, VARIANT % 10_000


def curve(values, width=24):
    """A loss curve as one line of text: first value, bars, last value."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    step = max(1, len(values) // width)
    picked = values[::step]
    low, high = min(picked), max(picked)
    bars = "▁▂▃▄▅▆▇█"
    line = "".join(bars[int((v - low) / (high - low + 1e-12) * (len(bars) - 1))] for v in picked)
    return f"{values[0]:.3g} {line} {values[-1]:.3g}"


def curves(mine, reference):
    return bilingual(f" Kurva loss Anda: {curve(mine)}; acuan: {curve(reference)}.",
                     f" Your loss curve: {curve(mine)}; the reference's: {curve(reference)}.")


def layout_mismatch(error):
    """The message for a trained state the reference cannot load (``steps.LayoutMismatch``):
    the root is the model's parameters, which tf.param_count names; training cannot be measured."""
    path, why = getattr(error, "path", error.args[0] if error.args else "?"), getattr(error, "why", "shape")
    what = {
        "extra": (f"punya parameter `{path}` yang tidak ada pada Transformer kontrak (mis. tabel positional "
                  "encoding sebagai nn.Parameter; lihat tf.param_count)",
                  f"has a parameter `{path}` the contract's Transformer does not have (e.g. the positional "
                  "table as an nn.Parameter; see tf.param_count)"),
        "missing": (f"tidak punya parameter `{path}` dari Transformer kontrak (lihat tf.param_count)",
                    f"lacks the contract's parameter `{path}` (see tf.param_count)"),
    }.get(why, (f"menyimpan parameter `{path}` dengan bentuk lain daripada Transformer kontrak (lihat "
                "tf.param_count)",
                f"holds the parameter `{path}` in another shape than the contract's Transformer (see "
                "tf.param_count)"))
    return bilingual(f"Model Anda {what[0]}, jadi pelatihannya tidak dapat dimulai dari parameter acuan dan "
                     "diukur. Begitu parameternya sesuai kontrak, pemeriksaan ini mengukur pelatihan Anda.",
                     f"Your model {what[1]}, so its training cannot start from the reference's parameters "
                     "and be measured. Once the parameters match the contract, this check measures your "
                     "training.")


def budget_text():  # a function: tests shorten the budget
    return bilingual(f"Anggaran: {MAX_STEPS} langkah, {BUDGET_SECONDS} detik CPU (satu inti) di sandbox, "
                     f"paling lama {WALL_FACTOR * BUDGET_SECONDS} detik waktu jam dinding.",
                     f"Budget: {MAX_STEPS} steps, {BUDGET_SECONDS} s of CPU (one core) in the sandbox, "
                     f"at most {WALL_FACTOR * BUDGET_SECONDS} s of wall-clock time.")


BUDGET = budget_text()


class TrainingBudget:
    """What the long run may spend: ``BUDGET_SECONDS`` of the worker's CPU time, counted by
    the kernel (``Session.worker_cpu_seconds``), never by the worker, and unaffected by other
    load on the machine; and ``WALL_FACTOR`` times that in wall-clock time, so that a worker
    that sleeps or blocks is stopped too. Where no CPU clock can be read, wall-clock time is
    charged instead."""

    def __init__(self, session):
        self.session, self.cpu, self.wall = session, 0.0, 0.0

    @property
    def exceeded(self):
        return self.cpu > BUDGET_SECONDS

    def timeout(self):
        """The next request's wall-clock limit: what is left of both budgets."""
        return max(1.0, min(WALL_FACTOR * (BUDGET_SECONDS - self.cpu), WALL_FACTOR * BUDGET_SECONDS - self.wall))

    def run(self, request):
        """``request(timeout)``, charged to the budget."""
        cpu_before, began = self.session.worker_cpu_seconds(), time.monotonic()
        try:
            return request(self.timeout())
        finally:
            wall = time.monotonic() - began
            cpu_after = self.session.worker_cpu_seconds()
            self.wall += wall
            self.cpu += cpu_after - cpu_before if None not in (cpu_before, cpu_after) else wall


@check("train.outcome", assignment="transformer", target=TRAIN, category="numeric_vs_reference", points=5,
       needs=("train.loss", "train.update", "tf.integration"),
       title=bilingual("Model Anda belajar tugas tersembunyi (≥ 95% urutan tepat)",
                       "Your model learns a hidden task (≥ 95% exact sequences)"),
       hint=bilingual("Penilai melatih Transformer Anda dengan train_step Anda pada varian tugas yang "
                      "tidak Anda lihat; setiap langkah harus satu langkah jujur (tanpa bobot yang dimuat, "
                      "langkah tambahan, atau optimizer yang diubah). " + BUDGET.id,
                      "The grader trains your Transformer with your train_step on a variant of the task "
                      "you have not seen; every step must be one honest step (no weights loaded, extra "
                      "steps or optimizer changed). " + BUDGET.en))
def train_outcome(ctx):
    stepper = Stepper(NOTEBOOK, LR)  # before the first request: a warm-up builds it (and imports Adam's needs)
    length, relabel, order, seed = variant()
    torch.manual_seed(seed)
    start = initial_state(solutions.Transformer(*NOTEBOOK))  # the paper's initialisation
    obj, missing, mismatched = ctx.session.new_with_params(TRANSFORMER, NOTEBOOK, {}, start["params"])
    ctx._expect_weights_fit(obj, missing, mismatched)
    optimizer = ctx.session.optimizer(obj, LR)
    evaluation = toy_batch(EVAL, length, torch.Generator().manual_seed(seed + 1), relabel, order)
    batches = torch.Generator().manual_seed(seed + 2)
    state, mine, reference, accuracy = start, [], [], 0.0
    budget, over = TrainingBudget(ctx.session), budget_text()
    evaluations = []
    # what the feedback draws (checks.pictures: training_curve): the losses and the accuracies
    ctx.session.training_curve = {"student": mine, "reference": reference, "accuracy": evaluations,
                                  "target": TARGET, "every": EVERY}
    for done in range(0, MAX_STEPS, EVERY):
        chunk = [toy_batch(BATCH, length, batches, relabel, order) for _ in range(EVERY)]
        try:
            losses, states = budget.run(lambda timeout: ctx.session.train(TRAIN, obj, optimizer, chunk,
                                                                          timeout=timeout))
            finished = done + EVERY
        except WorkerFailure as failure:
            if failure.kind != "timeout":
                raise
            finished = done  # stopped by the wall clock, in this chunk
        if finished == done or budget.exceeded:
            fail(bilingual(f"Pelatihan melewati anggaran waktu setelah {finished} langkah. " + over.id
                           + curves(mine, reference).id,
                           f"Training ran past its time budget after {finished} steps. " + over.en
                           + curves(mine, reference).en))
        for index, (batch, loss, after) in enumerate(zip(chunk, losses, states)):
            try:
                expected_loss, expected = stepper.step(state, batch)
            except KeyError as mismatch:
                fail(layout_mismatch(mismatch))
            problem = compare_states(after, expected, LR)
            mine.append(loss)
            reference.append(expected_loss)
            if problem is not None:
                step = done + index + 1
                fail(bilingual(f"Langkah pelatihan ke-{step} (model dan train_step Anda) bukan langkah acuan "
                               f"dari keadaan yang sama ({problem.id}). Setiap langkah diperiksa; langkah lain "
                               "(dropout, bobot yang diubah, langkah tambahan) tidak dapat dinilai."
                               + curves(mine, reference).id,
                               f"Training step {step} (your model and train_step) is not the reference's step "
                               f"from the same state ({problem.en}). Every step is verified; another step "
                               "(dropout, weights changed, extra steps) cannot be scored." + curves(mine, reference).en))
            state = after
        accuracy, ctx.session.training_curve["examples"] = evaluate(stepper, state["params"], evaluation[0], evaluation[2])
        evaluations.append([done + EVERY, accuracy])
        if accuracy >= TARGET:
            return
    fail(bilingual(f"Setelah {MAX_STEPS} langkah akurasi urutan-tepat baru {accuracy:.0%} (target "
                   f"{TARGET:.0%})." + curves(mine, reference).id,
                   f"After {MAX_STEPS} steps the exact-sequence accuracy is {accuracy:.0%} (target "
                   f"{TARGET:.0%})." + curves(mine, reference).en))
