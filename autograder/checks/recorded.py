"""Records of a block's own sub-layers: what each recorded call got and returned (``Call``,
``Records``), and the wiring helpers that read them (``blocked``, ``layer_norm``, ``only_call``,
``tokenwise_result``, ``expect_heads``). A check that grades a block apart from its sub-layers
recomputes the block's own part here from the recorded results (see ``context.Context.record``)."""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from autograder.checks.registry import fail
from autograder.texts import bilingual


# -- records of a block's own sub-layers -----------------------------------------------------------
class Missing:
    """An argument the call did not pass (and whose default is not plain data)."""

    def __repr__(self):
        return "<missing>"


MISSING = Missing()

# Parameter names a student may give a sub-layer's arguments, mapped to the contract's.
ALIASES = {"query": "q", "key": "k", "value": "v", "attn_mask": "mask", "input": "x", "inputs": "x"}
_POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")


@dataclass(frozen=True)
class Call:
    """One recorded call of a student's sub-layer or function."""

    names: tuple  # the attribute paths (or function name) it was recorded under
    index: int  # its number among the calls of names[0] in that request
    params: tuple | None  # the callee's signature: (name, kind, has_default) per parameter
    defaults: dict  # plain-data defaults of the parameters
    args: list  # as passed (a snapshot taken at the call)
    kwargs: dict
    output: object  # the result (a snapshot), or the stand-in if ``replaced``
    grad: dict  # enabled, inputs, output: autograd state at the call (grad requests)
    replaced: dict | None  # {"raised": text} or {"returned": shapes} when a stand-in was used
    seed: int | None = None  # the seed the worker says the call started from (to make it again)

    def arguments(self, slots):
        """The call's arguments mapped onto the contract's parameter names ``slots`` (e.g.
        ("q", "k", "v", "mask")): a parameter of the callee named like a slot (or an alias:
        query, key, value, attn_mask, input) fills it; the other slots are filled in order by
        the remaining positional parameters. The callee's own parameter names decide, so
        ``attn(query=x, key=x, value=x)`` and ``attn(x, x, x, m)`` read the same. A slot the
        call left to its default holds that default (None), or ``MISSING``."""
        args, kwargs = list(self.args), dict(self.kwargs)
        if self.params is None:  # no signature: positions, then keywords by name
            values = {slot: args[i] for i, slot in enumerate(slots) if i < len(args)}
            for name, value in kwargs.items():
                slot = name if name in slots else ALIASES.get(name)
                if slot in slots:
                    values.setdefault(slot, value)
            return values
        positional = [n for n, kind, _ in self.params if kind in _POSITIONAL]
        bound = dict(zip(positional, args))
        extra = [f"*{i}" for i in range(len(args) - len(positional))]
        bound.update(zip(extra, args[len(positional):]))
        bound.update(kwargs)
        for name, kind, has_default in self.params:
            if name not in bound and has_default:
                bound[name] = self.defaults.get(name, MISSING)
        values, used = {}, set()
        for slot in slots:
            for name in (slot, *[a for a, s in ALIASES.items() if s == slot]):
                if name in bound and name not in used:
                    values[slot], used = bound[name], used | {name}
                    break
        remaining = [n for n in positional + extra if n not in used]
        for slot in slots:
            if slot not in values and remaining:
                values[slot] = bound.get(remaining.pop(0), MISSING)
        return values

    def attention_arguments(self):
        """(q, k, v, mask) of a MultiHeadAttention or scaled_dot_product_attention call; k
        left out (None or not passed) means q, v left out means k, as in a forward that
        defaults them (``def forward(self, q, k=None, v=None, mask=None)``)."""
        values = self.arguments(("q", "k", "v", "mask"))
        q, k, v, mask = (values.get(s, MISSING) for s in ("q", "k", "v", "mask"))
        k = q if k is None or k is MISSING else k
        v = k if v is None or v is MISSING else v
        return q, k, v, (None if mask is MISSING else mask)

    @property
    def main(self):
        """The result, or its first item when it is a sequence (an attention's output)."""
        if isinstance(self.output, (tuple, list)):
            return self.output[0] if self.output else None
        return self.output

    @property
    def second(self):
        """The second item of a pair (an attention's weights), or None."""
        if isinstance(self.output, (tuple, list)) and len(self.output) >= 2:
            return self.output[1]
        return None


class Records:
    """The calls a recording request saw, in the order they started."""

    def __init__(self, raw, inputs_after=None):
        self.calls = [Call(**entry) for entry in raw]
        self.inputs_after = inputs_after

    def of(self, name):
        return [c for c in self.calls if name in c.names]


def blocked(mask, shape):
    """Which positions a mask argument blocks, broadcast to ``shape`` (e.g. the scores'
    (B, H, Tq, Tk)); None when it is not a mask the course's attention accepts. Boolean:
    True blocks; float (additive): -inf or <= -1e4 blocks and every other entry is 0; integer:
    non-zero blocks; None (or not passed) blocks nothing."""
    if mask is None or mask is MISSING:
        return torch.zeros(shape, dtype=torch.bool)
    if not isinstance(mask, torch.Tensor) or mask.dim() > len(shape):
        return None
    if mask.dtype == torch.bool:
        blocks = mask
    elif mask.is_floating_point():
        if bool(torch.isnan(mask).any()):
            return None
        blocks = mask <= -1e4
        if bool((mask[~blocks] != 0).any()):
            return None
    else:
        blocks = mask != 0
    try:
        return torch.broadcast_to(blocks, shape)
    except RuntimeError:
        return None


def layer_norm(x, reference_ln):
    """The reference LayerNorm's math with the weights the check copied in, here."""
    with torch.no_grad():
        return F.layer_norm(x, reference_ln.normalized_shape, reference_ln.weight.to(x.dtype),
                            reference_ln.bias.to(x.dtype), reference_ln.eps)


def _same_call(a, b):
    """Two calls with the same arguments (e.g. attn called again only to keep its weights)."""
    def flat(call):
        return [*call.args, *sorted(call.kwargs.items(), key=lambda item: item[0])]

    def same(x, y):
        if isinstance(x, tuple) and isinstance(y, tuple):
            return x[0] == y[0] and same(x[1], y[1])
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            return (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
                    and x.dtype == y.dtype and torch.equal(x, y))
        return type(x) is type(y) and (x is y or x is None or isinstance(x, (bool, int, float, str)) and x == y)

    fa, fb = flat(a), flat(b)
    return len(fa) == len(fb) and all(same(x, y) for x, y in zip(fa, fb))


def only_call(records, path):
    """The one call of the sub-layer at ``path`` that a block's forward makes (calling it
    again with the very same arguments changes nothing)."""
    calls = records.of(path)
    if len(calls) > 1 and all(_same_call(calls[0], c) for c in calls[1:]):
        calls = calls[:1]
    if not calls:
        fail(bilingual(f"`self.{path}` tidak pernah dipanggil di forward (atau dipanggil dengan cara "
                       "yang tidak terekam, mis. lewat salinan modulnya).",
                       f"`self.{path}` is never called in forward (or in a way that is not seen, e.g. "
                       "through a copy of the module)."))
    if len(calls) > 1:
        shared = [n for n in calls[0].names if n != path]
        also = (bilingual(f" Modul yang sama juga dipakai sebagai `{shared[0]}`.",
                          f" The same module is also used as `{shared[0]}`.") if shared
                else bilingual("", ""))
        fail(bilingual(f"`self.{path}` dipanggil {len(calls)} kali dalam satu forward; seharusnya sekali."
                       + also["id"],
                       f"`self.{path}` is called {len(calls)} times in one forward; it should be called "
                       "once." + also["en"]))
    return calls[0]


def tokenwise_result(ctx, records, path, wanted, tolerance="float32"):
    """What the token-wise sub-layer at ``path`` (the FeedForward) returned for the tokens of
    ``wanted`` (B, T, D), its expected input; None when it was not given exactly those tokens.
    The usual form is one call on ``wanted``; a position-wise layer may also be called on the
    tokens flattened to (B*T, D), once per position, or on any split of them: each token of
    ``wanted`` must then reach it exactly once, and its result is put back in that token's place.
    A sub-layer that is never called, or called more than once on anything but a split of the
    tokens, fails here as in ``only_call``."""
    calls = records.of(path)
    if len(calls) <= 1 or all(_same_call(calls[0], c) for c in calls[1:]):
        call = only_call(records, path)
        given = call.arguments(("x",)).get("x", MISSING)
        if ctx.same(given, wanted, tolerance):
            return call.main
        calls = [call]
    if any(c.replaced for c in calls):
        return None
    d = wanted.shape[-1]
    wanted_rows, tol = wanted.reshape(-1, d), ctx.tolerance(tolerance)
    placed = torch.full((wanted_rows.shape[0],), -1, dtype=torch.long)
    inputs, outputs = [], []
    for call in calls:
        given, result = call.arguments(("x",)).get("x", MISSING), call.main
        if not (isinstance(given, torch.Tensor) and isinstance(result, torch.Tensor)
                and given.dim() >= 1 and given.shape[-1] == d and result.shape == given.shape
                and given.dtype != torch.bool):
            return None
        inputs.append(given.reshape(-1, d).to(wanted.dtype))
        outputs.append(result.reshape(-1, d))
    rows, results = torch.cat(inputs), torch.cat(outputs)
    if rows.shape[0] == wanted_rows.shape[0]:
        matches = torch.isclose(rows[:, None, :], wanted_rows[None, :, :], rtol=tol.rtol,
                                atol=tol.atol, equal_nan=True).all(-1)
        for row in range(rows.shape[0]):
            free = (matches[row] & (placed < 0)).nonzero()
            if not len(free):
                break
            placed[free[0, 0]] = row
        else:
            return results[placed].reshape(wanted.shape)
    if len(calls) > 1:
        only_call(records, path)  # not a split of the tokens: called more than once, as it says
    return None


def expect_heads(call, heads, path):
    """The attention sub-layer was built with the block's ``num_heads``: its weights (its own,
    also when a stand-in replaced them) have that many heads."""
    weights = call.second
    found = None
    returned = call.replaced.get("returned") if call.replaced else None
    if isinstance(returned, list) and len(returned) >= 2:
        shape = returned[1]
        found = shape[1] if isinstance(shape, tuple) and len(shape) == 4 else None
    elif not call.replaced and isinstance(weights, torch.Tensor) and weights.dim() == 4:
        found = weights.shape[1]
    if found is not None and found != heads:
        fail(bilingual(f"`self.{path}` memakai {found} head, padahal num_heads = {heads}: buat sub-layer "
                       "dengan argumen blok, bukan angka tetap.",
                       f"`self.{path}` uses {found} heads although num_heads = {heads}: build the "
                       "sub-layer with the block's arguments, not a fixed number."))
