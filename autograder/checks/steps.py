"""Training steps in the trusted process (assignment 4): the reference's step from a state the
worker reported, the comparison of two states, the toy task and its hidden variants.

A *state* is what ``Session.state`` returns: ``{"params": {path: tensor}, "adam": {path:
{"exp_avg", "exp_avg_sq", "step"}}}``. ``reference_step`` loads one into the reference
Transformer and a fresh ``torch.optim.Adam`` and takes the reference's ``train_step``, so a
state the student's step produced is judged against one honest step from the state before it.
"""

import torch
import torch.nn.functional as F

import solutions
from autograder.texts import bilingual

# A step is one honest step when, for the parameters and both Adam moments, every element is
# close or the few that are not (at most OUTLIERS of them, where an Adam update divides by a
# gradient near eps) stay within an update's size.
RTOL, OUTLIERS = 1e-4, 1e-3


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


class Stepper:
    """The reference Transformer and an Adam, built once, loaded with a state for each step."""

    def __init__(self, args, lr):
        self.args = args
        self.model = solutions.Transformer(*args)
        self.names = dict(self.model.named_parameters())
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

    def load(self, state):
        """Hold ``state``; a path the contract does not have, or one missing or of another
        shape, is a ``KeyError`` naming it."""
        extra = sorted(set(state["params"]) - set(self.names))
        missing = sorted(set(self.names) - set(state["params"]))
        if extra or missing:
            raise KeyError((extra + missing)[0])
        self.optimizer.state.clear()
        with torch.no_grad():
            for name, p in self.names.items():
                value = state["params"][name]
                if value.shape != p.shape:
                    raise KeyError(name)
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


def load_state(args, state, lr):
    """A reference Transformer and Adam holding ``state`` (see ``Stepper.load``)."""
    return Stepper(args, lr).load(state)


def state_of(model, optimizer):
    adam = {}
    for name, p in model.named_parameters():
        kept = optimizer.state.get(p)
        if kept:
            adam[name] = {k: torch.as_tensor(kept[k]).detach().clone() for k in ("exp_avg", "exp_avg_sq", "step")}
    return {"params": {name: p.detach().clone() for name, p in model.named_parameters()}, "adam": adam}


def reference_step(args, state, batch, lr):
    """(loss, state after) of the reference's train_step from ``state`` on ``batch``."""
    return Stepper(args, lr).step(state, batch)


def _tensor_problem(got, expected, scale):
    if got is None or got.shape != expected.shape:
        return "shape"
    got = got.to(expected.dtype)
    off = ~torch.isclose(got, expected, rtol=RTOL, atol=RTOL * scale)
    if not bool(off.any()):
        return None
    worst = float((got - expected).abs().nan_to_num(float("inf")).max())
    if float(off.float().mean()) > OUTLIERS or worst > 2 * scale:
        return f"{worst:.3g}"
    return None


def compare_states(got, expected, lr):
    """None when ``got`` is one honest step (``expected``: the reference's); else a Bilingual
    naming the first parameter that is not."""
    for name, value in expected["params"].items():
        problem = _tensor_problem(got["params"].get(name), value, lr)
        if problem:
            return bilingual(f"parameter `{name}` berselisih {problem}", f"parameter `{name}` is off by {problem}")
        moments = expected["adam"].get(name)
        if moments is None:
            continue
        theirs = got["adam"].get(name) or {}
        for key in ("exp_avg", "exp_avg_sq"):
            scale = float(moments[key].abs().max()) + 1e-12
            problem = _tensor_problem(theirs.get(key), moments[key], scale * 1e-2)
            if problem:
                return bilingual(f"momen Adam `{key}` dari `{name}` tidak cocok",
                                 f"Adam's `{key}` of `{name}` does not match")
        if "step" not in theirs or float(theirs["step"]) != float(moments["step"]):
            return bilingual(f"optimizer.step() tidak dipanggil tepat sekali (`{name}`)",
                             f"optimizer.step() is not called exactly once (`{name}`)")
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


def sequence_accuracy(stepper, params, src, tgt_out):
    """Exact-sequence accuracy of greedy decoding by the reference model holding ``params``."""
    model, _ = stepper.load({"params": params, "adam": {}})
    return solutions.sequence_accuracy(model, src, tgt_out)
