"""Training steps in the trusted process (assignment 4): the reference's step from a state the
worker reported, the comparison of two states, the toy task and its hidden variants.

A *state* is what ``Session.state`` returns: ``{"params": {path: tensor}, "adam": {path:
{"exp_avg", "exp_avg_sq", "step"}}}``. ``reference_step`` loads one into the reference
Transformer and a fresh ``torch.optim.Adam`` (``eager_steps.adam``) and takes the reference's
``train_step``, so a state the student's step produced is judged against one honest step from
the state before it.
"""

import threading

import torch
import torch.nn.functional as F

import solutions
from solutions.transformer import BOS
from autograder.checks import eager_steps
from autograder.texts import bilingual

# A step is one honest step when the parameters and both Adam moments are close to the reference
# step's. Close: within RTOL (relative) and RTOL times a scale (absolute: the learning rate for
# the parameters, the largest value of all tensors for a moment), except for at most OUTLIERS of
# all elements, which must stay within two updates (2 lr). Those are the parameters whose true
# gradient is zero (an attention's key bias: the softmax ignores it): rounding noise is all their
# gradient has, and Adam divides it by its own size, so any two correct implementations move
# them differently (~0.4% of the notebook model's parameters).
RTOL, OUTLIERS = 1e-4, 0.02


def toy_batch(n, length, generator, relabel=None, order=None):
    """(src, tgt_in, tgt_out) of the contract's task (the source reversed), or of a variant: the
    target is ``relabel[src[:, order]]`` (token ids and positions permuted)."""
    src = torch.randint(0, 10, (n, length), generator=generator)
    out = src.flip(1) if order is None else src[:, order]
    if relabel is not None:
        out = relabel[out]
    return src, solutions.shift_right(out, 10), out


def initial_state(model):
    """The state of a reference model before any step (no Adam moments yet)."""
    return {"params": {name: p.detach().clone() for name, p in model.named_parameters()}, "adam": {}}


class LayoutMismatch(KeyError):
    """A state that does not fit the contract's model: its parameter ``path`` is one the model
    has not (``why`` "extra"), one it lacks ("missing") or of another shape ("shape")."""

    def __init__(self, path, why):
        super().__init__(path)
        self.path, self.why = path, why


class Stepper:
    """The reference Transformer and an Adam, built once, loaded with a state for each step."""

    def __init__(self, args, lr):
        self.args = args
        self.model = solutions.Transformer(*args)
        self.names = dict(self.model.named_parameters())
        # a plain Adam that does not import torch._dynamo (seconds of CPU; see eager_steps)
        self.optimizer = eager_steps.adam(self.model.parameters(), lr=lr)

    def load(self, state):
        """Hold ``state``; a path the contract does not have, or one missing or of another
        shape, is a ``LayoutMismatch`` (a ``KeyError``) naming it."""
        extra = sorted(set(state["params"]) - set(self.names))
        missing = sorted(set(self.names) - set(state["params"]))
        if extra or missing:
            raise LayoutMismatch(*((extra[0], "extra") if extra else (missing[0], "missing")))
        self.optimizer.state.clear()
        with torch.no_grad():
            for name, p in self.names.items():
                value = state["params"][name]
                if value.shape != p.shape:
                    raise LayoutMismatch(name, "shape")
                p.copy_(value)
                moments = state["adam"].get(name)
                if moments:
                    self.optimizer.state[p] = {
                        "step": torch.tensor(float(moments["step"])),
                        "exp_avg": moments["exp_avg"].to(p.dtype).clone(),
                        "exp_avg_sq": moments["exp_avg_sq"].to(p.dtype).clone()}
        return self.model, self.optimizer

    def step(self, state, batch):
        """(loss, state after) of the reference's train_step from ``state`` on ``batch``."""
        model, optimizer = self.load(state)
        loss = solutions.train_step(model, optimizer, *batch)
        return loss, state_of(model, optimizer)


_STEPPERS = threading.local()  # each grading thread's Steppers: a Stepper holds one state at a time


def stepper(args, lr):
    """This thread's Stepper for ``args`` and ``lr``, built once (a Transformer and an Adam cost
    more than the step itself)."""
    kept = _STEPPERS.__dict__.setdefault("by_arguments", {})
    key = (tuple(args), lr)
    if key not in kept:
        if len(kept) >= 16:
            kept.clear()
        kept[key] = Stepper(args, lr)
    return kept[key]


def load_state(args, state, lr):
    """A reference Transformer and Adam holding ``state`` (see ``Stepper.load``); this thread's,
    valid until its next load."""
    return stepper(args, lr).load(state)


def state_of(model, optimizer):
    adam = {}
    for name, p in model.named_parameters():
        kept = optimizer.state.get(p)
        if kept:
            adam[name] = {k: torch.as_tensor(kept[k]).detach().clone() for k in ("exp_avg", "exp_avg_sq", "step")}
    return {"params": {name: p.detach().clone() for name, p in model.named_parameters()}, "adam": adam}


def reference_step(args, state, batch, lr):
    """(loss, state after) of the reference's train_step from ``state`` on ``batch``."""
    return stepper(args, lr).step(state, batch)


def same_state(a, b):
    """Whether two states are exactly equal: the same paths, and every parameter and Adam moment
    of the same dtype and shape with equal values (NaN is never equal), the same step counts.
    Only then may a step from ``a`` be taken as the step from ``b``."""
    if set(a["params"]) != set(b["params"]) or set(a["adam"]) != set(b["adam"]):
        return False
    pairs = [(a["params"][name], b["params"][name]) for name in a["params"]]
    for name, moments in a["adam"].items():
        theirs = b["adam"][name]
        if set(moments) != set(theirs) or not _same_number(moments["step"], theirs["step"]):
            return False
        pairs += [(moments[key], theirs[key]) for key in ("exp_avg", "exp_avg_sq")]
    return all(isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.dtype == y.dtype
               and torch.equal(x, y) and torch.equal(torch.signbit(x), torch.signbit(y))  # 0.0, -0.0
               for x, y in pairs)


def _same_number(a, b):
    try:
        return float(a) == float(b)
    except (TypeError, ValueError, RuntimeError):  # not one number
        return False


def _close(pairs):
    """(elements that are not close, the worst difference, the name it is in) over ``pairs`` of
    (name, got, expected, scale), all compared at once: one step of the notebook's model has ~90
    tensors per kind, and a training run a few hundred steps."""
    names = [name for name, _, _, _ in pairs]
    got = torch.cat([g.detach().reshape(-1).to(e.dtype) for _, g, e, _ in pairs])
    expected = torch.cat([e.reshape(-1) for _, _, e, _ in pairs])
    scale = pairs[0][3]  # one scale per kind (the learning rate, or the largest moment)
    off = ~torch.isclose(got, expected, rtol=RTOL, atol=RTOL * scale)
    difference = (got - expected).abs().nan_to_num(float("inf"))
    worst = int(difference.argmax())
    ends = torch.tensor([e.numel() for _, _, e, _ in pairs]).cumsum(0)
    return int(off.sum()), float(difference[worst]), names[int(torch.searchsorted(ends, worst, right=True))]


def compare_states(got, expected, lr):
    """None when ``got`` is one honest step (``expected``: the reference's); else a Bilingual
    naming what is not."""
    found = {"params": [], "exp_avg": [], "exp_avg_sq": []}
    scales = {key: max((float(m[key].abs().max()) for m in expected["adam"].values()), default=0.0) + 1e-30
              for key in ("exp_avg", "exp_avg_sq")}
    scales["params"] = lr
    for name, value in expected["params"].items():
        pairs = [("params", got["params"].get(name), value)]
        moments = expected["adam"].get(name)
        if moments is not None:
            theirs = got["adam"].get(name) or {}
            if "step" not in theirs or float(theirs["step"]) != float(moments["step"]):
                return bilingual(f"optimizer.step() tidak dipanggil tepat sekali (`{name}`)",
                                 f"optimizer.step() is not called exactly once (`{name}`)")
            pairs += [(key, theirs.get(key), moments[key]) for key in ("exp_avg", "exp_avg_sq")]
        for key, mine, reference in pairs:
            if not isinstance(mine, torch.Tensor) or mine.shape != reference.shape:
                return bilingual(f"`{name}` tidak ada atau bentuknya lain", f"`{name}` is missing or has another shape")
            found[key].append((name, mine, reference, scales[key]))
    for key, pairs in found.items():
        if not pairs:
            continue
        outliers, worst, where = _close(pairs)
        total = sum(reference.numel() for _, _, reference, _ in pairs) or 1
        limit = 2 * lr if key == "params" else 2 * scales[key]
        if outliers and (outliers > OUTLIERS * total or worst > limit):
            what = bilingual("parameter", "parameter") if key == "params" else bilingual(
                f"momen Adam `{key}` dari parameter", f"Adam's `{key}` of parameter")
            return bilingual(f"{what.id} `{where}` berselisih {worst:.3g}",
                             f"{what.en} `{where}` is off by {worst:.3g}")
    return None


def state_movement(before, after):
    """Mean absolute change of the parameters between two states."""
    moved = [(after["params"][k].double() - v.double()).abs().flatten()
             for k, v in before["params"].items() if k in after["params"] and after["params"][k].shape == v.shape]
    return float(torch.cat(moved).mean()) if moved else 0.0


def loss_variants(args, state, batch):
    """The losses of the usual mistakes, each with what it says."""
    model, _ = load_state(args, state, 1e-3)
    src, tgt_in, tgt_out = batch
    with torch.no_grad():
        logits = model(src, tgt_in)
        flat, target = logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1)
        found = {
            bilingual("Loss dihitung dari probabilitas (softmax sebelum cross_entropy); F.cross_entropy "
                      "menerima logit mentah.",
                      "The loss is computed from probabilities (softmax before cross_entropy); "
                      "F.cross_entropy takes raw logits."): F.cross_entropy(flat.softmax(-1), target),
            bilingual("Loss memakai tgt_in sebagai sasaran; sasarannya tgt_out (target yang tidak digeser).",
                      "The loss uses tgt_in as its target; the target is tgt_out (not shifted)."):
                F.cross_entropy(flat, tgt_in.reshape(-1)),
            bilingual("Loss dijumlahkan, bukan dirata-rata.", "The loss is summed, not averaged."):
                F.cross_entropy(flat, target, reduction="sum"),
        }
    return {said: float(value) for said, value in found.items()}


def evaluate(stepper, params, src, tgt_out, shown=3):
    """(exact-sequence accuracy, the first ``shown`` pairs) of greedy decoding by the reference
    model holding ``params``, decoded once; a pair is {"source", "expected", "decoded"} as lists
    of token ids."""
    model, _ = stepper.load({"params": params, "adam": {}})
    decoded = solutions.greedy_decode(model, src, BOS, tgt_out.size(1))
    accuracy = (decoded == tgt_out).all(dim=1).float().mean().item()  # as solutions.sequence_accuracy
    return accuracy, [{"source": s.tolist(), "expected": e.tolist(), "decoded": d.tolist()}
                      for s, e, d in zip(src[:shown], tgt_out[:shown], decoded[:shown])]


def sequence_accuracy(stepper, params, src, tgt_out):
    """Exact-sequence accuracy of greedy decoding by the reference model holding ``params``."""
    return evaluate(stepper, params, src, tgt_out)[0]
