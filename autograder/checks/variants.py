"""The reference, with bugs switched on, and how the diagnosis probes each target.

``_sdpa``, ``_mha``, ... compute what the reference computes (float64, in the trusted process,
from the reference's weights ``P`` and inputs made here) with the mistakes named by ``flags``
switched on (the catalogue's ``variants``). Each target registers a ``Model`` (``@model``):
how it is probed (its calls on inputs made here), what a variant returns on those inputs, the
calls the symptom probes use at the chapter's sizes, and its calls at size one. The diagnosis
engine (``checks.diagnosis``) knows no target by name; it asks these models.
"""

import math

import torch
import torch.nn.functional as F

from autograder.checks.targets import CAUSAL, DEC, ENC, FFN, MHA, PE, SDPA

MODELS = {}  # target name -> Model


def model(name):
    """Register the decorated ``Model`` class as target ``name``'s."""
    def register(cls):
        MODELS[name] = cls()
        return cls
    return register


class Unmodelled(Exception):
    """The variant cannot be computed for these inputs (e.g. a mask with a (T, B, D) layout)."""


class Model:
    """How the diagnosis probes one target (see the module docstring). ``kit`` is the
    diagnosis's ``ProbeKit``: sizes, inputs, the student's calls."""

    two_lengths = False  # it takes queries and keys of their own lengths (equal_lengths_assumed)
    cube = False  # its probe also runs with every leading size equal (the "cube" probe)

    def probe(self, kit):
        """(outputs: key -> what the student returned, inputs the variants need)."""
        raise NotImplementedError

    def expected(self, i, flags, fill):
        """What the reference with ``flags`` returns on the probe's inputs ``i`` (floating
        tensors in float64): key -> tensor, or None where the variant says nothing."""
        raise NotImplementedError

    def setups(self, kit, batch):
        """Calls at the chapter's sizes for the symptom probes: [(callee, args, kwargs,
        reference module or None)], one per form of the target."""
        return []

    def size_one_calls(self, kit):
        """[(the student's results, the reference's)] of calls with size-1 axes, or None."""
        return None

    def meta_kwargs(self, reference):
        """Constructor keywords of the form ``reference`` is (e.g. prenorm)."""
        return {}


# -- the reference, with bugs switched on (float64, in the trusted process) ---------------------
def _softmax_dim(flags):
    for flag in flags:
        if flag.startswith("softmax_dim:"):
            return int(flag.split(":")[1])
    return -1


def _softmax(scores, dim, flags):
    if "softmax_no_keepdim" in flags:  # e / e.sum(-1): the sums broadcast from the left
        e = (scores - scores.nan_to_num(0.0, neginf=0.0).max()).exp()  # one shift: it cancels
        return e / e.sum(-1)
    return scores.softmax(dim)


def _sdpa(q, k, v, mask, flags, scale_dim=None, fill=float("-inf")):
    scores = q @ k.transpose(-2, -1)
    scale = math.sqrt(scale_dim or q.size(-1))
    if "scale_dk" in flags:
        scale = q.size(-1)
    elif "scale_half_dk" in flags:  # d_k ** 1/2 is (d_k ** 1) / 2
        scale = (scale_dim or q.size(-1)) / 2
    if "no_scale" not in flags and "scale_after_softmax" not in flags:
        scores = scores / scale
    dim = _softmax_dim(flags)
    if dim >= scores.dim() or -dim > scores.dim():
        return None
    if mask is not None and "mask_ignored" not in flags:
        blocked = ~mask if "mask_inverted" in flags else mask
        if "mask_after_softmax" in flags:
            weights = _softmax(scores, dim, flags).masked_fill(blocked, 0.0)
        elif "mask_times_inf" in flags:  # scores + mask * -inf: 0 * -inf is NaN
            weights = _softmax(scores + blocked.to(scores.dtype) * float("-inf"), dim, flags)
        else:
            weights = _softmax(scores.masked_fill(blocked, 0.0 if "mask_fill_zero" in flags else fill),
                               dim, flags)
    else:
        weights = _softmax(scores, dim, flags)
    if "scale_after_softmax" in flags:
        weights = weights / scale
    return weights @ v, weights


def _causal(t, flags):
    ones = torch.ones(t, t, dtype=torch.bool)
    if "causal_none" in flags:
        return None
    if "causal_diag" in flags:
        return torch.triu(ones, diagonal=0)
    if "causal_tril" in flags:
        return torch.tril(ones)
    if "causal_tril_strict" in flags:
        return torch.tril(ones, diagonal=-1)
    return torch.triu(ones, diagonal=1)


def _linear(P, name, x, flags=()):
    out = x @ P[f"{name}.weight"].T
    return out if f"{name}.bias" not in P else out + P[f"{name}.bias"]


def _mha(P, prefix, q, k, v, mask, heads, flags, fill=float("-inf")):
    if "seq_first" in flags:  # a (T, B, D) implementation fed batch-first tensors
        if mask is not None:
            return None
        b, tq, d = q.shape
        tk, dk = k.shape[1], d // heads
        split = lambda x, t: x.reshape(t, b * heads, dk).transpose(0, 1)  # noqa: E731
        found = _sdpa(split(_linear(P, prefix + "wq", q), tq), split(_linear(P, prefix + "wk", k), tk),
                      split(_linear(P, prefix + "wv", v), tk), None, flags - {"seq_first"})
        if found is None:
            return None
        z, weights = found
        z = z.transpose(0, 1).reshape(tq, b, d).transpose(0, 1)
        return _linear(P, prefix + "wo", z), weights.reshape(b, heads, tq, tk)
    b, tq, d = q.shape
    tk, dk = k.shape[1], d // heads

    def split(x, t):
        if "split_no_transpose" in flags:
            return x.reshape(b, heads, t, dk)
        return x.reshape(b, t, heads, dk).transpose(1, 2)

    if "v_from_q" in flags:
        if tq != tk:
            raise Unmodelled  # it raises there
        v = q
    w = {slot: prefix + next((f.split(":")[1] for f in flags if f.startswith(f"{slot}_with:")), f"w{slot}")
         for slot in "qkv"}  # "k_with:wq": the keys projected with wq
    found = _sdpa(split(_linear(P, w["q"], q), tq), split(_linear(P, w["k"], k), tk),
                  split(_linear(P, w["v"], v), tk), mask, flags,
                  scale_dim=d if "scale_dmodel" in flags else None, fill=fill)
    if found is None:
        return None
    z, weights = found
    if "merge_no_transpose" in flags:
        z = z.reshape(b, tq, d)
    elif "merge_dk_major" in flags:  # (B, H, T, d_k) -> (B, T, d_k, H): feature j*H + h
        z = z.permute(0, 2, 3, 1).reshape(b, tq, d)
    else:
        z = z.transpose(1, 2).reshape(b, tq, d)
    out = z if "no_wo" in flags else _linear(P, prefix + "wo", z)
    return out, (weights.mean(1) if "weights_averaged" in flags else weights)


def _pe(length, d_model, flags):
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1) + (1 if "pe_from_one" in flags else 0)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    exponent = two_i / d_model
    if "pe_exp_doubled" in flags:
        exponent = 2 * two_i / d_model
    if "pe_exp_half" in flags:
        exponent = two_i / 2 / d_model
    angle = pos * 10000 ** exponent if "pe_mul" in flags else pos / 10000 ** exponent
    odd_angle = pos / 10000 ** ((two_i + 1) / d_model) if "pe_exp_column" in flags else angle
    sin, cos = torch.sin(angle), torch.cos(odd_angle)
    if "pe_blocks" in flags:
        return torch.cat([sin, cos], dim=1)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = (cos, sin) if "pe_swapped" in flags else (sin, cos)
    return pe


def _ffn(P, prefix, x, flags):
    if "identity" in flags and not prefix:
        return x
    h = _linear(P, prefix + "l1", x)
    if "relu" in flags:
        h = torch.relu(h)
    elif "gelu_tanh" in flags:
        h = F.gelu(h, approximate="tanh")
    elif not {"no_act", "act_after_l2"} & flags:
        h = F.gelu(h)
    out = _linear(P, prefix + "l2", h)
    return F.gelu(out) if {"act_after_l2", "act_twice"} & flags else out


LN_KINDS = ("ln_plain", "ln_tokens", "ln_eps")
WIDE_EPS = 1e-3  # Keras' LayerNormalization default, where PyTorch's (and the contract's) is 1e-5


def _ln_kinds(on, slot):
    """The LN_KINDS flagged (``on``) for every LayerNorm ("ln_plain") or for ``slot`` alone
    ("ln_plain@ln1")."""
    return frozenset(k for k in LN_KINDS if on(k) or on(f"{k}@{slot}"))


def _ln(P, name, x, flags=frozenset()):
    """LayerNorm ``name``; "ln_plain": without its weight and bias, "ln_tokens": over the tokens,
    "ln_eps": with Keras' eps (1e-3) instead of 1e-5."""
    weight, bias = P[f"{name}.weight"], P[f"{name}.bias"]
    eps = WIDE_EPS if "ln_eps" in flags else 1e-5
    if "ln_plain" in flags:
        weight = bias = None
    if "ln_tokens" in flags:
        mean, var = x.mean(1, keepdim=True), x.var(1, unbiased=False, keepdim=True)
        out = (x - mean) / torch.sqrt(var + eps)
        return out if weight is None else out * weight + bias
    return F.layer_norm(x, x.shape[-1:], weight, bias, eps=eps)


def _enc(P, x, mask, prenorm, heads, flags, fill=float("-inf")):
    mode = "pre" if prenorm else "post"

    def on(flag):  # a flag for both forms, or for this one only (e.g. "no_ln2:pre")
        return flag in flags or f"{flag}:{mode}" in flags

    if "identity" in flags:
        return x
    if on("seq_first"):
        if mask is not None:
            return None
        rest = frozenset(f for f in flags if not f.startswith("seq_first"))
        found = _enc(P, x.transpose(0, 1), None, prenorm, heads, rest)
        return None if found is None else found.transpose(0, 1)
    if on("pe_inside"):
        x = x + _pe(x.size(1), x.size(2), ())
    ln1, ln2 = ("ln1", "ln1") if on("ln_shared1") else ("ln2", "ln2") if on("ln_shared2") else ("ln1", "ln2")
    norm1 = (lambda a: a) if on("no_ln1") else (lambda a: _ln(P, ln1, a, _ln_kinds(on, "ln1")))
    norm2 = (lambda a: a) if on("no_ln2") else (lambda a: _ln(P, ln2, a, _ln_kinds(on, "ln2")))
    half = 0.5 if on("ffn_half") else 1.0
    used_mask = None if on("enc_mask_ignored") else mask

    def attn(a):
        found = _mha(P, "attn.", a, a, a, used_mask, heads, flags, fill)
        if found is None:
            raise Unmodelled
        return found[0]

    def ffn(a):
        return _ffn(P, "ffn.", a, flags)

    if prenorm != on("ln_swapped"):  # computes pre-LN
        n = norm1(x)
        h = (0 if on("no_res_attn") else n if on("res_norm_attn") else x) + attn(n)
        n2 = norm2(h)
        out = (0 if on("no_res_ffn") else n2 if on("res_norm_ffn") else h) + half * ffn(n2)
        return norm2(out) if on("out_norm") else out
    if on("res_norm_attn") or on("res_norm_ffn"):
        return None  # a pre-LN mistake only
    if on("out_norm"):
        return None  # a pre-LN mistake only
    h = norm1((0 if on("no_res_attn") else x) + attn(x))
    return norm2((0 if on("no_res_ffn") else h) + half * ffn(h))


def _dec(P, x, memory, heads, flags, fill=float("-inf")):
    if "identity" in flags:
        return x, None
    mask = _causal(x.size(1), flags)

    def attn(prefix, q, kv, m=None, values=None):
        if "shared_attn_self" in flags:
            prefix = "self_attn."
        elif "shared_attn_cross" in flags:
            prefix = "cross_attn."
        found = _mha(P, prefix, q, kv, kv if values is None else values, m, heads, flags, fill)
        if found is None:
            raise Unmodelled
        return found

    def ffn(a):
        return _ffn(P, "ffn.", a, flags)

    def ln(name, a):
        return _ln(P, {"ln2": "ln1"}.get(name, name) if "ln2_is_ln1" in flags else name, a,
                   _ln_kinds(flags.__contains__, name))

    if "dec_post_ln" in flags:
        h = ln("ln1", x + attn("self_attn.", x, x, mask)[0])
        z, weights = attn("cross_attn.", h, memory)
        h = ln("ln2", h + z)
        return ln("ln3", h + ffn(h)), weights
    n = ln("ln1", x)
    sa, self_weights = attn("self_attn.", n, n, mask)
    h = (0 if "no_res_self" in flags else x) + sa
    m = memory if "mem_raw" in flags else ln("ln1" if "mem_ln1" in flags else
                                             "ln3" if "mem_ln3" in flags else "ln2", memory)
    query = h if "query_raw" in flags else ln("ln2", x if "query_from_x" in flags else h)
    values = memory if "values_raw" in flags else m
    cross_mask = None
    if "cross_causal" in flags:  # the causal mask passed on to cross-attention too
        if memory.size(1) != x.size(1):
            raise Unmodelled  # it raises there
        cross_mask = mask
    z, weights = (attn("cross_attn.", query, query) if "memory_ignored" in flags
                  else attn("cross_attn.", query, m, cross_mask, values=values))
    h = (0 if "no_res_cross" in flags else h) + z
    out = (0 if "no_res_ffn" in flags else h) + (0.5 if "ffn_half" in flags else 1.0) * ffn(ln("ln3", h))
    return out, (self_weights if "self_weights" in flags else weights)


# -- the targets' models -------------------------------------------------------------------------
def causal_like(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


@model(SDPA)
class AttentionFunction(Model):
    two_lengths = True
    cube = True

    def probe(self, kit):
        z = kit.z
        heads = z.h if kit.kind == "cube" else 3
        q = kit.randn(z.b, heads, z.tq, z.dk, scale=1.5)
        k, v = kit.randn(z.b, heads, z.tk, z.dk), kit.randn(z.b, heads, z.tk, 3)
        # every row has blocked and allowed keys, also when the mask is read inverted
        mask = torch.tensor([[i in ((r + 1) % z.tk, (r + 3) % z.tk) for i in range(z.tk)]
                             for r in range(z.tq)])
        out, w = kit.call(SDPA, q, k, v)
        out_m, w_m = kit.call(SDPA, q, k, v, mask=mask)
        return {"out": out, "w": w, "out_m": out_m, "w_m": w_m}, dict(q=q, k=k, v=v, mask=mask)

    def expected(self, i, flags, fill):
        a = _sdpa(i["q"], i["k"], i["v"], None, flags, fill=fill)
        b = _sdpa(i["q"], i["k"], i["v"], i["mask"], flags, fill=fill)
        return {"out": a and a[0], "w": a and a[1], "out_m": b and b[0], "w_m": b and b[1]}

    def setups(self, kit, batch):
        c = kit.chapter
        q, k, v = (kit.randn(batch, 2, 6, c.d_model // c.num_heads) for _ in range(3))
        return [(SDPA, [q, k, v], {"mask": causal_like(6)}, None)]

    def size_one_calls(self, kit):
        q, k, v = kit.randn(1, 1, 1, 1), kit.randn(1, 1, 3, 1), kit.randn(1, 1, 3, 1)
        got = kit.tensors(kit.ctx.call(SDPA, q, k, v))
        return [(got, kit.reference.scaled_dot_product_attention(q, k, v))]


@model(CAUSAL)
class CausalMask(Model):
    def probe(self, kit):
        return {"mask": kit.call(CAUSAL, kit.z.causal, count=1)[0]}, dict(t=kit.z.causal)

    def expected(self, i, flags, fill):
        return {"mask": _causal(i["t"], flags)}


@model(MHA)
class MultiHeadAttention(Model):
    two_lengths = True
    cube = True

    def probe(self, kit):
        z = kit.z
        obj, _, P = kit.module(MHA, z.d, z.h)
        q, k, v = kit.randn(z.b, z.tq, z.d), kit.randn(z.b, z.tk, z.d), kit.randn(z.b, z.tk, z.d)
        mask = kit.padding(z.b, z.tk)
        out, w = kit.call(obj, q, k, v)
        out_m, w_m = kit.call(obj, q, k, v, mask=mask)
        return ({"out": out, "w": w, "out_m": out_m, "w_m": w_m},
                dict(P=P, q=q, k=k, v=v, mask=mask, heads=z.h))

    def expected(self, i, flags, fill):
        a = _mha(i["P"], "", i["q"], i["k"], i["v"], None, i["heads"], flags, fill)
        b = _mha(i["P"], "", i["q"], i["k"], i["v"], i["mask"], i["heads"], flags, fill)
        return {"out": a and a[0], "w": a and a[1], "out_m": b and b[0], "w_m": b and b[1]}

    def setups(self, kit, batch):
        c = kit.chapter
        obj, ref, _ = kit.module(MHA, c.d_model, c.num_heads)
        return [(obj, [kit.randn(batch, 6, c.d_model) for _ in range(3)], {"mask": causal_like(6)}, ref)]

    def size_one_calls(self, kit):
        calls = []
        for d, h, b, tq, tk in ((6, 1, 1, 1, 3), (4, 4, 2, 3, 1)):
            obj, ref, _ = kit.module(MHA, d, h)
            q, kv = kit.randn(b, tq, d), kit.randn(b, tk, d)
            with torch.no_grad():
                calls.append((kit.tensors(kit.ctx.call(obj, q, kv, kv)), ref(q, kv, kv)))
        return calls


@model(PE)
class PositionalEncoding(Model):
    def probe(self, kit):
        length, d = kit.z.pe
        return {"pe": kit.call(PE, length, d, count=1)[0]}, dict(length=length, d=d)

    def expected(self, i, flags, fill):
        return {"pe": _pe(i["length"], i["d"], flags)}

    def size_one_calls(self, kit):
        return [([kit.ctx.call(PE, 1, 6)], [kit.reference.positional_encoding(1, 6)])]


class _Block(Model):
    """A module on (B, T, D) tokens (``target``), called at size one on one token."""

    target = None
    returns_pair = False  # forward returns (output, weights)

    def size_one_inputs(self, kit):
        return [kit.randn(1, 1, kit.chapter.d_model)]

    def size_one_calls(self, kit):
        obj, ref, _ = kit.module(self.target, *kit.arguments(self.target))
        x = self.size_one_inputs(kit)
        result = kit.ctx.call(obj, *x)
        with torch.no_grad():
            expected = ref(*x)
        if self.returns_pair:
            return [(kit.tensors(result), list(expected))]
        return [([result], [expected])]


@model(FFN)
class FeedForward(_Block):
    target = FFN

    def probe(self, kit):
        obj, _, P = kit.module(FFN, *kit.z.ffn)
        x = kit.randn(2, kit.z.t, kit.z.ffn[0], scale=4.0)  # large enough for tanh-GELU to show
        return {"out": kit.call(obj, x, count=1)[0]}, dict(P=P, x=x)

    def expected(self, i, flags, fill):
        return {"out": _ffn(i["P"], "", i["x"], flags)}

    def setups(self, kit, batch):
        c = kit.chapter
        obj, ref, _ = kit.module(FFN, c.d_model, c.d_ff)
        return [(obj, [kit.randn(batch, 5, c.d_model)], {}, ref)]


@model(ENC)
class EncoderBlock(_Block):
    target = ENC

    def probe(self, kit):
        z = kit.z
        post, _, P = kit.module(ENC, z.d, z.h, z.f, prenorm=False)
        pre, _, P_pre = kit.module(ENC, z.d, z.h, z.f, prenorm=True)
        x, mask = kit.randn(2, z.t, z.d), kit.padding(2, z.t)
        return ({"post": kit.call(post, x)[0], "pre_m": kit.call(pre, x, mask=mask)[0]},
                dict(P=P, P_pre=P_pre, x=x, mask=mask, heads=z.h))

    def expected(self, i, flags, fill):
        P_pre = {k: v.double() for k, v in i["P_pre"].items()}
        return {"post": _enc(i["P"], i["x"], None, False, i["heads"], flags, fill),
                "pre_m": _enc(P_pre, i["x"], i["mask"], True, i["heads"], flags, fill)}

    def setups(self, kit, batch):
        c = kit.chapter
        x = kit.randn(batch, 5, c.d_model)
        forms = [kit.module(ENC, c.d_model, c.num_heads, c.d_ff, prenorm=p) for p in (False, True)]
        return [(obj, [x], {}, ref) for obj, ref, _ in forms]

    def meta_kwargs(self, reference):
        return {"prenorm": reference.prenorm}


@model(DEC)
class DecoderBlock(_Block):
    target = DEC
    two_lengths = True
    returns_pair = True

    def size_one_inputs(self, kit):
        d = kit.chapter.d_model
        return [kit.randn(1, 1, d), kit.randn(1, 3, d)]

    def probe(self, kit):
        z = kit.z
        obj, _, P = kit.module(DEC, z.d, z.h, z.f)
        t_src = z.tk if kit.kind in ("chapter", "square") else 3
        x, memory = kit.randn(2, z.tq, z.d), kit.randn(2, t_src, z.d)
        out, w = kit.call(obj, x, memory)
        return {"out": out, "w": w}, dict(P=P, x=x, memory=memory, heads=z.h)

    def expected(self, i, flags, fill):
        out, w = _dec(i["P"], i["x"], i["memory"], i["heads"], flags, fill)
        return {"out": out, "w": w}

    def setups(self, kit, batch):
        c = kit.chapter
        obj, ref, _ = kit.module(DEC, c.d_model, c.num_heads, c.d_ff)
        return [(obj, [kit.randn(batch, 6, c.d_model), kit.randn(batch, 5, c.d_model)], {}, ref)]


from autograder.checks import transformer_variants  # noqa: E402,F401  (assignment 4's models)
