"""Pictures for a student's feedback: data collected from the worker on small public inputs.

``collect(session, plan, outcomes)`` runs after the checks (``grader._advisory``: it never
changes a verdict) and returns ``records.Picture`` values holding plain numbers only. Each
picture sets the student's numbers beside what correct code gives on the same input: the
reference runs here, in the trusted process, with the same weights copied into the student's
module. Inputs and sizes are public: the chapter's sizes (``plan.chapter``), one batch item,
a fixed seed. Hidden sizes and the checks' inputs never appear.

Pictures (``kind``):

- ``attention_weights``: ``scaled_dot_product_attention`` and ``MultiHeadAttention`` on a causal
  mask, and the cross-attention weights ``DecoderBlock`` returns. ``data``: ``student`` and
  ``reference`` (heads x queries x keys), ``mask`` (queries x keys, ``True`` = blocked) or None,
  ``same_weights`` (the reference used the student's weights).
- ``positional_encoding``: ``student`` and ``reference`` (positions x features).
- ``causality``: ``DecoderBlock``; row ``t`` changes the decoder tokens at positions >= t,
  column ``p`` is how much the output at position ``p`` changed (largest absolute change).
  Correct blocks leave every column ``p < t`` at zero.
- ``loss_curve``: ``train_step``, from ``train.outcome``'s run (kept on the session, nothing
  run again): ``student`` (the losses the student's step returned, for display only) and
  ``reference`` (the reference's step from each verified state) per step, ``accuracy`` ([step,
  exact-sequence accuracy] per evaluation, measured in the trusted process), ``wanted`` (the
  accuracy the check asks for), ``examples`` (three held-out pairs of the hidden task greedily
  decoded, at the last evaluation, by the reference model holding the verified weights: what the
  student's trained model writes). Showing the hidden task gives nothing away: every step of
  the training is verified, whatever the student knows about the task.

Non-finite numbers (NaN, inf) are stored as ``None``.
"""

import copy
import functools
import math

import torch

from autograder.checks import targets
from autograder.checks.reference_weights import deterministic_weights
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.texts import bilingual

SEED = 20240917  # the public input's seed (any fixed number: nothing secret depends on it)
DIGITS = 4  # rounding of stored numbers: enough for a picture, small in record.json
MAX_ROWS = 24  # a causality picture with more rows is unreadable (and would not fit one request)
CHANGED = 1e-4  # a change above this counts as "changed" in the causality picture


DRAWINGS = []  # (target, the check that must have passed, drawing), in the order shown


def drawing(target, after):
    """Declare the decorated ``draw(session, sizes)`` as pictures of ``target``, drawn when
    the check ``after`` passed; the feedback shows them in the order they are declared."""
    def register(draw):
        DRAWINGS.append((target, after, draw))
        return draw
    return register


class _Skip(Exception):
    """This picture cannot be drawn for this student (wrong type or shape, ...)."""


def collect(session, plan, outcomes):
    """The pictures for the targets of ``outcomes`` whose code can be called at all."""
    passed = {o.check.id for o in outcomes if o.passed}
    graded = {o.check.target for o in outcomes}
    pictures = []
    for target, needs, draw in DRAWINGS:
        if target not in graded or needs not in passed:
            continue
        drawn = []
        try:
            for picture in draw(session, plan.chapter):
                drawn.append(picture)
        except (_Skip, StudentError):
            pass  # the student's code cannot draw this one; keep what was drawn, go on
        except WorkerFailure:
            pictures.extend(drawn)
            break  # the worker is gone or hanging: no more pictures for this student
        pictures.extend(drawn)
    return tuple(pictures)



# -- helpers -----------------------------------------------------------------------------------
def _generator(name):
    return torch.Generator().manual_seed(SEED + sum(map(ord, name)))


def _randn(generator, *shape):
    return torch.randn(*shape, generator=generator)


def numbers(tensor):
    """A tensor as nested lists of rounded floats, None for NaN and inf. Read through
    ``tolist`` (one conversion, not a tensor per element: a picture holds hundreds)."""
    return _rounded(tensor.tolist())


def _rounded(value):
    if type(value) is list:
        return [_rounded(v) for v in value]
    value = float(value)
    return round(value, DIGITS) if math.isfinite(value) else None


def _tensor(value, shape):
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != tuple(shape) \
            or not value.is_floating_point():
        raise _Skip()
    return value.detach().double()


def _pair(value):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise _Skip()
    return value


def _new_with_reference_weights(session, name, args, reference):
    """The student's module built with the reference's parameters copied in, in one request:
    (module, True if all of them fit)."""
    values = dict(reference.named_parameters())
    obj, missing, mismatched = session.new_with_params(name, args, {}, values)
    return obj, not missing and not mismatched


def _picture(kind, target, title, **data):
    from autograder.records import Picture

    return Picture(kind, target, title, data)


# -- the drawings --------------------------------------------------------------------------------
@drawing(targets.SDPA, after="sdpa.present")
def sdpa_weights(session, sizes):
    t, d_k = sizes.length, sizes.d_model // sizes.num_heads
    generator = _generator("sdpa")
    q, k, v = (_randn(generator, 1, t, d_k) for _ in range(3))
    mask = targets.REFERENCES.causal_mask(t)
    _, weights = _pair(session.call("scaled_dot_product_attention", q, k, v, mask=mask))
    weights = _tensor(weights, (1, t, t))
    _, expected = targets.REFERENCES.scaled_dot_product_attention(q.double(), k.double(), v.double(), mask)
    yield _picture("attention_weights", "scaled_dot_product_attention", bilingual(
        f"Bobot attention dengan mask kausal (q, k, v berbentuk (1, {t}, {d_k}))",
        f"Attention weights with a causal mask (q, k, v of shape (1, {t}, {d_k}))"),
        student=numbers(weights), reference=numbers(expected), mask=numbers_bool(mask),
        same_weights=True)


@functools.lru_cache(maxsize=4)  # public inputs and the reference only: the same for everyone
def _mha_reference(sizes):
    d, h, t = sizes.d_model, sizes.num_heads, sizes.length
    reference = deterministic_weights(targets.REFERENCES.MultiHeadAttention(d, h).eval(), SEED)
    x = _randn(_generator("mha"), 1, t, d)
    mask = targets.REFERENCES.causal_mask(t)
    with torch.no_grad():
        _, expected = copy.deepcopy(reference).double()(x.double(), x.double(), x.double(), mask=mask)
    return reference.requires_grad_(False), x, mask, expected


@drawing(targets.MHA, after="mha.construct")
def mha_weights(session, sizes):
    d, h, t = sizes.d_model, sizes.num_heads, sizes.length
    reference, x, mask, expected = _mha_reference(sizes)
    obj, same = _new_with_reference_weights(session, "MultiHeadAttention", [d, h], reference)
    _, weights = _pair(session.call(obj, x, x, x, mask=mask))
    weights = _tensor(weights, (1, h, t, t))
    yield _picture("attention_weights", "MultiHeadAttention", bilingual(
        f"Bobot attention per head: MultiHeadAttention({d}, {h}), masukan (1, {t}, {d}), mask kausal",
        f"Attention weights per head: MultiHeadAttention({d}, {h}), input (1, {t}, {d}), causal mask"),
        student=numbers(weights[0]), reference=numbers(expected[0]), mask=numbers_bool(mask),
        same_weights=same)


@drawing(targets.PE, after="pe.present")
def pe_values(session, sizes):
    length, d = sizes.length, sizes.d_model
    value = _tensor(session.call("positional_encoding", length, d), (length, d))
    expected = targets.REFERENCES.positional_encoding(length, d).double()
    yield _picture("positional_encoding", "positional_encoding", bilingual(
        f"positional_encoding({length}, {d}): posisi × fitur",
        f"positional_encoding({length}, {d}): positions × features"),
        student=numbers(value), reference=numbers(expected))


@functools.lru_cache(maxsize=4)  # public inputs and the reference only: the same for everyone
def _decoder_reference(sizes):
    """The reference block, the public inputs (the tokens, then each row's changed tokens) and
    what the reference gives on them."""
    d, h, d_ff = sizes.d_model, sizes.num_heads, sizes.d_ff
    t_dec, t_src = sizes.decoder_length, sizes.length
    reference = deterministic_weights(targets.REFERENCES.DecoderBlock(d, h, d_ff).eval(), SEED)
    generator = _generator("decoder")
    x, memory = _randn(generator, 1, t_dec, d), _randn(generator, 1, t_src, d)
    inputs = [x]
    for cut in range(t_dec):
        changed = x.clone()
        changed[:, cut:] += _randn(generator, 1, t_dec - cut, d)
        inputs.append(changed)
    with torch.no_grad():
        double = copy.deepcopy(reference).double()
        outputs = [double(tokens.double(), memory.double()) for tokens in inputs]
    expected, expected_weights = outputs[0]
    changes = torch.stack([(out - expected).abs().amax(dim=(0, 2)) for out, _ in outputs[1:]])
    return reference.requires_grad_(False), inputs, memory, expected_weights, changes


@drawing(targets.DEC, after="dec.construct")
def decoder_pictures(session, sizes):
    d, h, d_ff = sizes.d_model, sizes.num_heads, sizes.d_ff
    t_dec, t_src = sizes.decoder_length, sizes.length
    if t_dec > MAX_ROWS:
        raise _Skip()
    reference, inputs, memory, expected_weights, reference_changes = _decoder_reference(sizes)
    obj, same = _new_with_reference_weights(session, "DecoderBlock", [d, h, d_ff], reference)
    answers = session.calls_recording([{"target": obj, "args": [tokens, memory]} for tokens in inputs])
    outputs = [_pair(result) for result, _, _ in answers]
    out, weights = _tensor(outputs[0][0], (1, t_dec, d)), outputs[0][1]
    student_changes = torch.stack([(_tensor(changed, (1, t_dec, d)) - out).abs().amax(dim=(0, 2))
                                   for changed, _ in outputs[1:]])
    yield _picture("causality", "DecoderBlock", bilingual(
        f"Kausalitas: baris t mengubah token decoder di posisi ≥ t; sel = perubahan terbesar "
        f"keluaran di tiap posisi (DecoderBlock({d}, {h}, {d_ff}), Tdec = {t_dec})",
        f"Causality: row t changes the decoder tokens at positions ≥ t; cell = largest change of "
        f"the output at each position (DecoderBlock({d}, {h}, {d_ff}), Tdec = {t_dec})"),
        student=numbers(student_changes),
        reference=numbers(reference_changes), threshold=CHANGED, same_weights=same)
    try:
        weights = _tensor(weights, (1, h, t_dec, t_src))
    except _Skip:
        return
    yield _picture("attention_weights", "DecoderBlock", bilingual(
        f"Bobot cross-attention yang dikembalikan (kueri: {t_dec} token decoder, kunci: {t_src} "
        "token memori)",
        f"The cross-attention weights returned (queries: {t_dec} decoder tokens, keys: {t_src} "
        "memory tokens)"),
        student=numbers(weights[0]), reference=numbers(expected_weights[0]), mask=None,
        same_weights=same)


def numbers_bool(mask):
    return [[bool(value) for value in row] for row in mask.tolist()]


@drawing(targets.TRAIN, after="train.present")
def training_curve(session, sizes):
    curve = getattr(session, "training_curve", None)
    if not curve or not curve["reference"]:
        raise _Skip()

    def rounded(values):
        return [None if v is None or v != v or abs(v) == float("inf") else round(float(v), DIGITS)
                for v in values]
    yield _picture("loss_curve", targets.TRAIN,
                   bilingual("Pelatihan pada tugas tersembunyi: loss per langkah",
                             "Training on the hidden task: loss per step"),
                   student=rounded(curve["student"]), reference=rounded(curve["reference"]),
                   accuracy=[[int(step), round(float(acc), DIGITS)] for step, acc in curve["accuracy"]],
                   wanted=float(curve["target"]), examples=curve.get("examples", []))
