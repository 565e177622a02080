"""Checks of assignment 4's procedures: ``train_step`` and ``greedy_decode``.

Both are called on models the grader gives (``assembly``: the reference Transformer with the
shared reference weights, and scripted models), built in the worker from the grader's own
source, so that a bug in the student's Transformer costs nothing here:

- ``train.loss`` and ``train.update``: the student's step on the given model and the grader's
  Adam, against the reference step from the same state (loss, parameters, Adam's moments);
  two steps in a row, so gradients that accumulate (no ``zero_grad``) show;
- ``greedy.values``: the reference's decoding with the weights copied in, and a scripted causal
  model whose next token reads the whole prefix; ``greedy.last_position``: a scripted model that
  is not causal, where only the argmax of the last position gives the reference's sequence;
- ``train.outcome`` (``outcome.py``): the student's model trained by the student's step on a
  task the student has not seen, every step verified here, scored here.
"""

import torch

from autograder.checks import assembly
from autograder.checks.assembly import BOS, DECODED, tokens
from autograder.checks.context import SHARED_MARK, fingerprint
from autograder.checks.registry import check, fail
from autograder.checks.steps import (compare_states, initial_state, loss_variants, reference_step,
                                      same_state, state_movement, toy_batch)
from autograder.checks.targets import GREEDY, TRAIN, transformer_arguments
from autograder.checks.verdicts import HINT_GATE, computes, expect_present, fair_share
from autograder.texts import bilingual

LR = 3e-3
HINT_TRAIN = bilingual(
    "`model.train()`, `optimizer.zero_grad()`, `logits = model(src, tgt_in)`, "
    "`loss = F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1))` pada logit mentah, "
    "`loss.backward()`, `optimizer.step()`, kembalikan `loss.item()`.",
    "`model.train()`, `optimizer.zero_grad()`, `logits = model(src, tgt_in)`, "
    "`loss = F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1))` on raw logits, "
    "`loss.backward()`, `optimizer.step()`, return `loss.item()`.")
HINT_GREEDY = bilingual(
    "Mode eval, tanpa gradien; `memory = model.encode(src)` sekali; mulai dari kolom BOS; ulangi max_len "
    "kali: `logits = model.decode(out, memory)`, ambil argmax posisi **terakhir** (`logits[:, -1]`), "
    "sambungkan ke `out`; kembalikan `out[:, 1:]`.",
    "Eval mode, no gradients; `memory = model.encode(src)` once; start from a BOS column; max_len times: "
    "`logits = model.decode(out, memory)`, take the argmax of the **last** position (`logits[:, -1]`), "
    "append it to `out`; return `out[:, 1:]`.")


def given_transformer(ctx, args):
    """The reference Transformer in the worker, with the shared reference weights: (remote, here)."""
    ref, values = assembly.reference_model(ctx, args)
    ctx.session.define(assembly.given_source())
    return ctx.session.new_given("Transformer", args, values), ref


def given_scripted(ctx, causal, vocab=11):
    ctx.session.define(assembly.given_source())
    name = "ScriptedPrefix" if causal else "ScriptedWhole"
    remote = ctx.session.new_given(name, (vocab,))
    here = assembly.scripted_classes()[0 if causal else 1](vocab)
    return remote, here


def chapter_args(ctx):
    return transformer_arguments(ctx.chapter)


def step_batches(ctx, count, length=6):
    generator = torch.Generator().manual_seed(assembly.seed_of(ctx.check.id, length))
    return [toy_batch(16, length, generator) for _ in range(count)]


def first_reference_step(ctx, args, start, batch):
    """(loss, state after) of the reference's step from the shared reference model's state
    (``start``) on the check's first batch: the same for every submission, so computed once
    per check and process (``Context.once``, with autograd: it is a training step). The key
    is the grader's alone: the check id fixes both the shared model and the batch."""
    return ctx.once(("first reference step", ctx.check.id, tuple(args), LR),
                    lambda: reference_step(args, start, batch, LR), autograd=True)


def second_reference_step(ctx, args, start, batches, first):
    """(loss, state after) of the reference's step from ``first`` (the state the student's first
    step reached) on the second batch. Where that state is exactly the reference's own first
    step's (``steps.same_state``: every path, dtype and value equal), the step is the same for
    every such submission and is computed once per check and process; any other state is the
    student's own and is stepped from as it is."""
    reference_first = first_reference_step(ctx, args, start, batches[0])[1]
    if not same_state(first, reference_first):
        return reference_step(args, first, batches[1], LR)
    return ctx.once(("second reference step", ctx.check.id, tuple(args), LR),
                    lambda: reference_step(args, reference_first, batches[1], LR), autograd=True)


def reference_movement(ctx, args, start, batch):
    """How far the reference's first step moves the shared model: the grader's alone (the
    check id fixes the model and the batch), so measured once per check and process."""
    _, expected = first_reference_step(ctx, args, start, batch)
    return ctx.once(("reference movement", ctx.check.id, tuple(args), LR),
                    lambda: state_movement(start, expected))


def train_run(ctx, steps):
    """The student's train_step on the given model, ``steps`` times: (args, start, batches,
    losses, states)."""
    args = chapter_args(ctx)
    model, ref = given_transformer(ctx, args)
    optimizer = ctx.session.optimizer(model, LR)
    batches = step_batches(ctx, steps)
    losses, states = ctx.session.train(TRAIN, model, optimizer, batches)
    return args, initial_state(ref), batches, losses, states


# -- train_step ---------------------------------------------------------------------------------------
@check("train.present", assignment="transformer", target=TRAIN, category="api", points=1,
       title=bilingual("Fungsi train_step(model, optimizer, src, tgt_in, tgt_out) tersedia",
                       "Function train_step(model, optimizer, src, tgt_in, tgt_out) exists"), hint=HINT_TRAIN)
def train_present(ctx):
    expect_present(ctx, TRAIN)


@check("train.sensitivity", assignment="transformer", target=TRAIN, category="sensitivity", points=0,
       needs=("train.present",), title=bilingual("Satu langkah mengubah parameter model",
                                                 "One step changes the model's parameters"), hint=HINT_GATE)
def train_sensitivity(ctx):
    def run():
        args, start, batches, losses, states = train_run(ctx, 1)
        if not fair_share(state_movement(start, states[0]), reference_movement(ctx, args, start, batches[0])):
            fail(bilingual("Parameter model (hampir) tidak berubah setelah train_step: langkah optimizer "
                           "tidak dijalankan, atau saat dijalankan belum ada gradien (mis. optimizer.step() "
                           "sebelum loss.backward(), atau zero_grad() di antara backward() dan step()).",
                           "The model's parameters (almost) do not change after train_step: the optimizer "
                           "does not step, or no gradient is there when it does (e.g. optimizer.step() "
                           "before loss.backward(), or zero_grad() between backward() and step())."))
    computes(ctx, run)


@check("train.loss", assignment="transformer", target=TRAIN, category="numeric_vs_reference", points=2,
       needs=("train.sensitivity",), title=bilingual("Loss teacher forcing: cross-entropy pada logit",
                                                    "Teacher-forced loss: cross-entropy on logits"),
       hint=HINT_TRAIN)
def train_loss(ctx):
    args, start, batches, losses, states = train_run(ctx, 1)
    loss, expected = first_reference_step(ctx, args, start, batches[0])
    got = losses[0]
    if got is None:
        fail(bilingual("train_step tidak mengembalikan loss sebagai bilangan (float).",
                       "train_step does not return the loss as a number (a float)."))
    if abs(got - loss) <= 1e-4 * abs(loss) + 1e-5:
        return
    for said, value in loss_variants(args, start, batches[0]).items():
        if abs(got - value) <= 1e-4 * abs(value) + 1e-5:
            fail(said)
    fail(bilingual(f"Loss yang dikembalikan {got:.5g}, seharusnya {loss:.5g} (cross-entropy logit "
                   "model(src, tgt_in) terhadap tgt_out, sebelum langkah optimizer).",
                   f"The loss returned is {got:.5g}, expected {loss:.5g} (the cross-entropy of "
                   "model(src, tgt_in)'s logits against tgt_out, before the optimizer's step)."))


@check("train.update", assignment="transformer", target=TRAIN, category="numeric_vs_reference", points=2,
       needs=("train.sensitivity",), title=bilingual("Parameter setelah dua langkah sama dengan acuan",
                                                    "Parameters after two steps match the reference"),
       hint=HINT_TRAIN)
def train_update(ctx):
    args, start, batches, losses, states = train_run(ctx, 2)
    for index, (before, after) in enumerate(zip([start, states[0]], states)):
        _, expected = (first_reference_step(ctx, args, start, batches[0]) if index == 0
                       else second_reference_step(ctx, args, start, batches, before))
        problem = compare_states(after, expected, LR)
        if problem is None:
            continue
        if index == 1:
            fail(bilingual("Langkah pertama benar, tetapi langkah kedua tidak: gradien langkah sebelumnya "
                           f"ikut terbawa. Panggil optimizer.zero_grad() di awal setiap langkah ({problem.id}).",
                           "The first step is right but the second is not: the previous step's gradients "
                           f"carry over. Call optimizer.zero_grad() at the start of every step ({problem.en})."))
        fail(bilingual(f"Setelah satu langkah, model tidak sama dengan langkah acuan dari keadaan yang sama "
                       f"({problem.id}).",
                       f"After one step the model differs from the reference's step from the same state "
                       f"({problem.en})."))


@check("train.mode", assignment="transformer", target=TRAIN, category="api", points=1,
       needs=("train.sensitivity",), title=bilingual("train_step menjalankan model dalam mode train",
                                                    "train_step runs the model in training mode"),
       hint=HINT_TRAIN)
def train_mode(ctx):
    """The contract's ``model.train()``: the step is given a model in eval mode (as greedy_decode
    leaves it), and every module of it must be in training mode whenever the step calls it. Read
    while it runs, so a step that restores the caller's mode afterwards is as right."""
    args = chapter_args(ctx)
    model, _ = given_transformer(ctx, args)  # built in eval mode
    optimizer = ctx.session.optimizer(model, LR)
    _, _, modes = ctx.session.train(TRAIN, model, optimizer, step_batches(ctx, 1), modes=True)
    if modes[0] is False:
        fail(bilingual("Model diberikan dalam mode eval (seperti sesudah greedy_decode) dan train_step "
                       "menjalankannya tetap dalam mode eval: panggil model.train() di awal setiap langkah "
                       "(lapisan seperti dropout bekerja lain dalam mode train).",
                       "The model was given in eval mode (as greedy_decode leaves it) and train_step ran it in "
                       "eval mode: call model.train() at the start of every step (layers such as dropout "
                       "work differently in training mode)."))


# -- greedy_decode ------------------------------------------------------------------------------------
def reference_decoding(ctx, model, source, max_len):
    """The reference's greedy decoding of ``source`` by ``model``, the grader's own: the shared
    reference Transformer, or a scripted model (no state but its vocabulary). The inputs are
    seeded by the check, so it is decoded once per process; any other model as it is."""
    def decode():
        return ctx.reference.greedy_decode(model, source, BOS, max_len)
    if type(model) in assembly.scripted_classes():
        who = (type(model).__name__, model.vocab)
    elif model.__dict__.get(SHARED_MARK, False):
        who = model  # held by the key: its id is never reused
    else:
        return decode()
    return ctx.once(("greedy decoding", who, fingerprint((source,)), BOS, max_len), decode)


def decoded(ctx, model, src, max_len, bos=BOS, keep_bos=True):
    """greedy_decode's result; without ``keep_bos``, a leading BOS column (greedy.shape's
    finding) is dropped, so that the checks of the values do not charge it again."""
    out = ctx.tensor(ctx.call(GREEDY, model, src, bos, max_len), DECODED)
    if not keep_bos and out.dim() == 2 and out.shape[1] == max_len + 1 and bool((out[:, 0] == bos).all()):
        out = out[:, 1:]
    return out


def bos_kept_last_dropped(out, expected):
    """Whether ``out`` is the reference's decoding with the BOS in front and its last token
    dropped: the first max_len columns of a buffer that starts with the BOS, not the max_len
    after it (the shape is right, so greedy.shape does not see it)."""
    return (out.shape == expected.shape and out.dim() == 2 and out.shape[1] >= 1
            and bool((out[:, 0] == BOS).all()) and torch.equal(out[:, 1:].long(), expected[:, :-1]))


BOS_KEPT = bilingual(
    "Hasil dimulai dengan BOS dan kehilangan token terakhirnya: kembalikan max_len token sesudah BOS "
    "(`out[:, 1:]` dari buffer yang memuat BOS dan max_len token).",
    "The result starts with the BOS and loses its last token: return the max_len tokens after the "
    "BOS (`out[:, 1:]` of a buffer that holds the BOS and max_len tokens).")


@check("greedy.present", assignment="transformer", target=GREEDY, category="api", points=1,
       title=bilingual("Fungsi greedy_decode(model, src, bos, max_len) tersedia",
                       "Function greedy_decode(model, src, bos, max_len) exists"), hint=HINT_GREEDY)
def greedy_present(ctx):
    expect_present(ctx, GREEDY)


@check("greedy.sensitivity", assignment="transformer", target=GREEDY, category="sensitivity", points=0,
       needs=("greedy.present",), title=bilingual("Hasil bergantung pada sumber", "The result depends on the source"),
       hint=HINT_GATE)
def greedy_sensitivity(ctx):
    src, src2 = tokens(ctx, 4, 6, 10), tokens(ctx, 4, 6, 10)

    def run():
        model, here = given_scripted(ctx, causal=True)
        outs = [ctx.call(GREEDY, model, s, BOS, 6) for s in (src, src2)]
        if not all(isinstance(o, torch.Tensor) and o.shape == (4, 6) for o in outs):
            return  # another form: greedy.shape names it
        ref = [reference_decoding(ctx, here, s, 6) for s in (src, src2)]
        moved = (outs[0] != outs[1]).float().mean().item()
        if not fair_share(moved, (ref[0] != ref[1]).float().mean().item()):
            fail(bilingual("Hasil greedy_decode (hampir) tidak berubah ketika sumbernya diganti.",
                           "greedy_decode's result (almost) does not change when the source changes."))
    computes(ctx, run)


GREEDY_NEEDS = ("greedy.present", "greedy.sensitivity")


@check("greedy.shape", assignment="transformer", target=GREEDY, category="shape", points=1,
       needs=GREEDY_NEEDS, title=bilingual("Bentuk (B, max_len), long, tanpa BOS",
                                           "Shape (B, max_len), long, without BOS"), hint=HINT_GREEDY)
def greedy_shape(ctx):
    model, _ = given_transformer(ctx, chapter_args(ctx))
    for b, ts, max_len in ((3, 5, 6), (1, 1, 1), (2, 7, 2)):
        out = decoded(ctx, model, tokens(ctx, b, ts, 10), max_len)
        if out.shape == (b, max_len + 1):
            fail(bilingual("Hasil masih memuat BOS di posisi pertama: kembalikan `out[:, 1:]`.",
                           "The result still holds the BOS in front: return `out[:, 1:]`."))
        ctx.tensor(out, DECODED, shape=(b, max_len), dtype=torch.long)


@check("greedy.values", assignment="transformer", target=GREEDY, category="numeric_vs_reference", points=2,
       needs=GREEDY_NEEDS, title=bilingual("Sama dengan decoding acuan", "Equal to the reference's decoding"),
       hint=HINT_GREEDY)
def greedy_values(ctx):
    model, ref = given_transformer(ctx, chapter_args(ctx))
    src = tokens(ctx, 6, 5, 10)
    cases = [(model, ref, src, 7)]
    scripted, here = given_scripted(ctx, causal=True)
    cases.append((scripted, here, tokens(ctx, 5, 4, 10), 9))
    for remote, local, source, max_len in cases:
        out = decoded(ctx, remote, source, max_len, keep_bos=False)
        expected = reference_decoding(ctx, local, source, max_len)
        ctx.tensor(out, DECODED, shape=expected.shape)
        if not torch.equal(out.long(), expected):
            if bos_kept_last_dropped(out, expected):
                fail(BOS_KEPT)
            row = int((out.long() != expected).any(1).nonzero()[0, 0])
            fail(bilingual(f"Urutan hasil berbeda dari decoding acuan, mis. {out[row].tolist()} alih-alih "
                           f"{expected[row].tolist()}. Token berikutnya adalah argmax logit posisi terakhir "
                           "dari seluruh prefiks yang sudah dihasilkan.",
                           f"The sequence differs from the reference's decoding, e.g. {out[row].tolist()} "
                           f"instead of {expected[row].tolist()}. The next token is the argmax of the last "
                           "position's logits for the whole prefix generated so far."))


@check("greedy.last_position", assignment="transformer", target=GREEDY, category="causality", points=2,
       needs=GREEDY_NEEDS, title=bilingual("Satu token per langkah, dari posisi terakhir",
                                           "One token per step, from the last position"), hint=HINT_GREEDY)
def greedy_last_position(ctx):
    model, here = given_scripted(ctx, causal=False)
    src = tokens(ctx, 5, 6, 10)
    out = decoded(ctx, model, src, 6, keep_bos=False)
    expected = reference_decoding(ctx, here, src, 6)
    ctx.tensor(out, DECODED, shape=expected.shape)
    # The BOS kept and the last token lost (greedy.values names it): each token returned is
    # still the last position's argmax, one per step.
    if not torch.equal(out.long(), expected) and not bos_kept_last_dropped(out, expected):
        fail(bilingual("Dengan model yang tidak kausal, hasilnya berbeda dari decoding acuan: setiap langkah "
                       "menambahkan tepat satu token, argmax posisi terakhir (`logits[:, -1]`), bukan argmax "
                       "semua posisi.",
                       "With a model that is not causal, the result differs from the reference's decoding: "
                       "every step appends exactly one token, the argmax of the last position "
                       "(`logits[:, -1]`), not the argmax of every position."))
