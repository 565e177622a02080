"""The reference's named steps, for localization (``checks.localization``).

For each target, ``runs(target, sizes)`` gives the calls to make at the chapter's sizes (public
inputs from a fixed seed, the reference's weights to copy into the student's module) and, for
each call, the reference's intermediate tensors in the order the reference computes them, each
with the steps it is computed from. All of it depends only on the sizes: it is made once per
grading process (``functools.lru_cache``) and is the same for every student.
"""

import copy
import functools
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from autograder.checks import targets
from autograder.checks.reference_weights import deterministic_weights
from autograder.texts import Bilingual, bilingual

SEED = 20250322


@dataclass(frozen=True)
class Step:
    name: str
    title: Bilingual
    value: torch.Tensor  # float64
    deps: tuple = ()  # the steps it is computed from (none: only from the inputs)
    head_axis: int | None = None  # a per-head step: a head loop may make it one head at a time
    returned: int | None = None  # its place in what the target returns (-1: the result itself)
    optional: bool = False  # a step code may make in another dtype (an integer arange): never the first wrong one
    layout: bool = False  # its dep rearranged (heads split): found only where nothing holds its values otherwise arranged


@dataclass(frozen=True)
class Run:
    target: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    build: tuple | None = None  # (constructor args, kwargs) of a module target
    reference: object = None  # the reference module whose weights are copied in
    steps: tuple = ()


def runs(name, sizes):
    maker = _MAKERS.get(name)
    return maker(sizes) if maker is not None else ()


def _generator(name):
    return torch.Generator().manual_seed(SEED + sum(map(ord, name)))


def _randn(generator, *shape):
    return torch.randn(*shape, generator=generator, dtype=torch.float64).float()


def _mask(tq, tk):
    """Query i may not see keys j > i (no row blocks every key when tk >= 1)."""
    return torch.ones(tq, tk, dtype=torch.bool).triu(1)


def _reference(name, *args, **kwargs):
    module = targets.get(name).implementation()(*args, **kwargs).eval()
    return deterministic_weights(module, SEED).requires_grad_(False)


T = bilingual
SCORES = T("`q @ kᵀ`", "`q @ kᵀ`")
SCALED = T("skor yang diskalakan (`q @ kᵀ / √d_k`)", "the scaled scores (`q @ kᵀ / √d_k`)")
MASKED = T("skor setelah mask", "the masked scores")
WEIGHTS = T("bobot softmax", "the softmax weights")


def _attention_steps(q, k, v, mask, prefix, head_axis=None, deps=(), returned=(None, None)):
    """The steps of softmax(q kᵀ / √d_k) v; ``deps``: the steps q, k, v come from."""
    dq, dk, dv = deps or (None, None, None)
    scores = q @ k.transpose(-2, -1)
    scaled = scores / math.sqrt(q.size(-1))
    masked = scaled.masked_fill(mask, float("-inf")) if mask is not None else None
    weights = (masked if masked is not None else scaled).softmax(-1)
    out = weights @ v
    steps = [Step(prefix + "scores", SCORES if not prefix else T("skor `Q @ Kᵀ` tiap head", "each head's scores `Q @ Kᵀ`"),
                  scores, tuple(d for d in (dq, dk) if d), head_axis),
             Step(prefix + "scaled", SCALED, scaled, (prefix + "scores",), head_axis)]
    last = prefix + "scaled"
    if masked is not None:
        steps.append(Step(prefix + "masked", MASKED, masked, (last,), head_axis))
        last = prefix + "masked"
    steps.append(Step(prefix + "weights", WEIGHTS, weights, (last,), head_axis, returned[1]))
    title = (T("keluaran `weights @ v`", "the output `weights @ v`") if not prefix else
             T("keluaran tiap head (`weights @ V`)", "each head's output (`weights @ V`)"))
    steps.append(Step(prefix + "out", title, out, tuple(d for d in (prefix + "weights", dv) if d),
                      head_axis, returned[0]))
    return steps


def _lengths(sizes):
    """(Tq, Tk) of the attention runs: Tq != Tk first, then Tq = Tk (for code that only
    works when they are equal: its other bug is still localized)."""
    return (sizes.decoder_length, sizes.length), (sizes.length, sizes.length)


def _sdpa(sizes):
    g = _generator("sdpa")
    b, h, d_k = sizes.batch, sizes.num_heads, sizes.d_model // sizes.num_heads
    found = []
    for tq, tk in _lengths(sizes):
        q, k, v = _randn(g, b, h, tq, d_k), _randn(g, b, h, tk, d_k), _randn(g, b, h, tk, d_k)
        mask = _mask(tq, tk)
        steps = _attention_steps(q.double(), k.double(), v.double(), mask, "", returned=(0, 1))
        found.append(Run(targets.SDPA, (q, k, v), {"mask": mask}, steps=tuple(steps)))
    return tuple(found)


def _mha_steps(ref, q, k, v, mask, prefix="", deps=(None, None, None), returned=(0, 1)):
    """The steps of the reference MultiHeadAttention ``ref`` (float64) on q, k, v."""
    b, tq, d = q.shape
    heads = ref.num_heads
    Q, K, V = ref.wq(q), ref.wk(k), ref.wv(v)

    def split(x):
        return x.view(b, x.size(1), heads, d // heads).transpose(1, 2)

    steps = [Step(prefix + "q_proj", T("proyeksi `wq(q)`", "the projection `wq(q)`"), Q, tuple(filter(None, deps[:1]))),
             Step(prefix + "k_proj", T("proyeksi `wk(k)`", "the projection `wk(k)`"), K, tuple(filter(None, deps[1:2]))),
             Step(prefix + "v_proj", T("proyeksi `wv(v)`", "the projection `wv(v)`"), V, tuple(filter(None, deps[2:])))]
    for name, value in (("q", Q), ("k", K), ("v", V)):  # a layout of the projection when right
        steps.append(Step(f"{prefix}head_{name}", T(f"`{name.upper()}` yang dibagi menjadi head (B, H, T, d_k)",
                                                    f"`{name.upper()}` split into heads (B, H, T, d_k)"),
                          split(value), (f"{prefix}{name}_proj",), head_axis=1, layout=True))
    inner = _attention_steps(split(Q), split(K), split(V), mask, prefix + "head_", head_axis=1,
                             deps=(prefix + "head_q", prefix + "head_k", prefix + "head_v"),
                             returned=(None, returned[1]))
    merged = inner[-1].value.transpose(1, 2).reshape(b, tq, d)
    steps += inner
    steps.append(Step(prefix + "merged", T("head yang digabung kembali (B, T, d_model)",
                                           "the heads merged back (B, T, d_model)"), merged, (prefix + "head_out",)))
    steps.append(Step(prefix + "out", T("keluaran `wo(...)`", "the output `wo(...)`"), ref.wo(merged),
                      (prefix + "merged",), returned=returned[0]))
    return steps


def _heads_apart(d, h):
    """(d_model, num_heads) with d_k != num_heads: where they are equal, heads split the other
    way round (head i takes features i, i + H, ...) are the right heads transposed, a layout the
    search would accept."""
    if d // h != h:
        return d, h
    return (d, h // 2) if h % 2 == 0 and (d // (h // 2)) != h // 2 else (2 * d, h)


def _mha(sizes):
    g = _generator("mha")
    b = sizes.batch
    d, h = _heads_apart(sizes.d_model, sizes.num_heads)
    ref = _reference(targets.MHA, d, h)
    found = []
    for tq, tk in _lengths(sizes):
        q, k, v = _randn(g, b, tq, d), _randn(g, b, tk, d), _randn(g, b, tk, d)
        mask = _mask(tq, tk)
        with torch.no_grad():
            steps = _mha_steps(copy.deepcopy(ref).double(), q.double(), k.double(), v.double(), mask)
        found.append(Run(targets.MHA, (q, k, v), {"mask": mask}, ((d, h), {}), ref, tuple(steps)))
    return tuple(found)


def _ffn(sizes):
    g = _generator("ffn")
    d, d_ff = sizes.d_model, sizes.d_ff
    x = _randn(g, sizes.batch, sizes.length, d) * 3
    ref = _reference(targets.FFN, d, d_ff)
    with torch.no_grad():
        double = copy.deepcopy(ref).double()
        hidden = double.l1(x.double())
        act = F.gelu(hidden)
        steps = (Step("hidden", T("`l1(x)`", "`l1(x)`"), hidden),
                 Step("gelu", T("GELU dari `l1(x)`", "the GELU of `l1(x)`"), act, ("hidden",)),
                 Step("out", T("keluaran `l2(...)`", "the output `l2(...)`"), double.l2(act), ("gelu",), returned=-1))
    return (Run(targets.FFN, (x,), {}, ((d, d_ff), {}), ref, steps),)


def _pe(sizes):
    """The sinusoidal table's steps: positions and the even indices 2i (either may be made as
    integers: optional), the frequencies 10000^(-2i/d_model) (code that divides by
    10000^(2i/d_model) instead never makes them: found through the angles), the angles, their
    sines and cosines, the table."""
    length, d = 2 * sizes.length, sizes.d_model  # longer than the chapter's: the angles grow
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    freq = torch.exp(two_i * (-math.log(10000.0) / d))
    angles = pos * freq
    table = torch.zeros(length, d, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    steps = (Step("positions", T("posisi `0 … length-1`", "the positions `0 … length-1`"), pos, optional=True),
             Step("two_i", T("indeks genap `2i`", "the even indices `2i`"), two_i, optional=True),
             Step("freq", T("frekuensi `1 / 10000^(2i/d_model)`", "the frequencies `1 / 10000^(2i/d_model)`"),
                  freq, ("two_i",)),
             Step("angles", T("sudut `pos / 10000^(2i/d_model)`", "the angles `pos / 10000^(2i/d_model)`"),
                  angles, ("positions", "freq")),
             Step("sin", T("`sin` dari sudut", "the `sin` of the angles"), torch.sin(angles), ("angles",)),
             Step("cos", T("`cos` dari sudut", "the `cos` of the angles"), torch.cos(angles), ("angles",)),
             Step("out", T("tabel yang dikembalikan (sin di kolom genap, cos di kolom ganjil)",
                           "the table returned (sin in the even columns, cos in the odd ones)"),
                  table, ("sin", "cos"), returned=-1))
    return (Run(targets.PE, (length, d), {}, steps=steps),)


ATTN_OUT = T("keluaran self-attention", "the self-attention output")
FFN_OUT = T("keluaran feed-forward", "the feed-forward output")


def _encoder(sizes):
    g = _generator("encoder")
    d, h, d_ff = sizes.d_model, sizes.num_heads, sizes.d_ff
    x = _randn(g, sizes.batch, sizes.length, d)
    padding = torch.zeros(sizes.batch, 1, 1, sizes.length, dtype=torch.bool)
    padding[0, ..., -2:] = True  # the first item's last two tokens are padding
    found = []
    # without a mask, then with a padding mask (code that drops the mask on one path)
    for prenorm, mask in ((False, None), (True, None), (False, padding), (True, padding)):
        ref = _reference(targets.ENC, d, h, d_ff, prenorm=prenorm)
        with torch.no_grad():
            r, xd = copy.deepcopy(ref).double(), x.double()
            if not prenorm:
                attn = r.attn(xd, xd, xd, mask)[0]
                res1 = xd + attn
                ln1 = r.ln1(res1)
                ffn = r.ffn(ln1)
                res2 = ln1 + ffn
                steps = (Step("attn", ATTN_OUT, attn),
                         Step("res1", T("residual pertama `x + attn(x)`", "the first residual `x + attn(x)`"), res1, ("attn",)),
                         Step("ln1", T("LayerNorm pertama `ln1(...)`", "the first LayerNorm `ln1(...)`"), ln1, ("res1",)),
                         Step("ffn", FFN_OUT, ffn, ("ln1",)),
                         Step("res2", T("residual kedua `h + ffn(h)`", "the second residual `h + ffn(h)`"), res2, ("ln1", "ffn")),
                         Step("out", T("keluaran `ln2(...)`", "the output `ln2(...)`"), r.ln2(res2), ("res2",), returned=-1))
            else:
                ln1 = r.ln1(xd)
                attn = r.attn(ln1, ln1, ln1, mask)[0]
                res1 = xd + attn
                ln2 = r.ln2(res1)
                ffn = r.ffn(ln2)
                steps = (Step("ln1", T("`ln1(x)`", "`ln1(x)`"), ln1),
                         Step("attn", ATTN_OUT, attn, ("ln1",)),
                         Step("res1", T("residual pertama `x + attn(...)`", "the first residual `x + attn(...)`"), res1, ("attn",)),
                         Step("ln2", T("LayerNorm kedua `ln2(...)`", "the second LayerNorm `ln2(...)`"), ln2, ("res1",)),
                         Step("ffn", FFN_OUT, ffn, ("ln2",)),
                         Step("out", T("keluaran, residual kedua `h + ffn(...)`", "the output, the second residual `h + ffn(...)`"),
                              res1 + ffn, ("res1", "ffn"), returned=-1))
        found.append(Run(targets.ENC, (x,), {} if mask is None else {"mask": padding},
                         ((d, h, d_ff), {"prenorm": prenorm}), ref, steps))
    return tuple(found)


def _decoder(sizes):
    g = _generator("decoder")
    d, h, d_ff = sizes.d_model, sizes.num_heads, sizes.d_ff
    x, memory = _randn(g, sizes.batch, sizes.decoder_length, d), _randn(g, sizes.batch, sizes.length, d)
    ref = _reference(targets.DEC, d, h, d_ff)
    with torch.no_grad():
        r, xd, md = copy.deepcopy(ref).double(), x.double(), memory.double()
        mask = targets.REFERENCES.causal_mask(x.size(1))
        ln1 = r.ln1(xd)
        self_attn = r.self_attn(ln1, ln1, ln1, mask)[0]
        res1 = xd + self_attn
        mem = r.ln2(md)
        query = r.ln2(res1)
        cross, cross_weights = r.cross_attn(query, mem, mem)
        res2 = res1 + cross
        ln3 = r.ln3(res2)
        ffn = r.ffn(ln3)
        steps = (Step("ln1", T("`ln1(x)`", "`ln1(x)`"), ln1),
                 Step("self_attn", T("keluaran self-attention bermask", "the masked self-attention output"), self_attn, ("ln1",)),
                 Step("res1", T("residual pertama `x + self_attn(...)`", "the first residual `x + self_attn(...)`"), res1, ("self_attn",)),
                 Step("memory", T("`ln2(memory)`", "`ln2(memory)`"), mem),
                 Step("query", T("kueri cross-attention `ln2(h)`", "the cross-attention query `ln2(h)`"), query, ("res1",)),
                 Step("cross", T("keluaran cross-attention", "the cross-attention output"), cross, ("query", "memory")),
                 Step("res2", T("residual kedua `h + cross_attn(...)`", "the second residual `h + cross_attn(...)`"), res2, ("res1", "cross")),
                 Step("ln3", T("`ln3(h)`", "`ln3(h)`"), ln3, ("res2",)),
                 Step("ffn", FFN_OUT, ffn, ("ln3",)),
                 Step("out", T("keluaran, residual ketiga `h + ffn(...)`", "the output, the third residual `h + ffn(...)`"),
                      res2 + ffn, ("res2", "ffn"), returned=0),
                 Step("cross_weights", T("bobot cross-attention yang dikembalikan", "the cross-attention weights returned"),
                      cross_weights, ("query", "memory"), returned=1))
    return (Run(targets.DEC, (x, memory), {}, ((d, h, d_ff), {}), ref, steps),)


_MAKERS = {targets.PE: _pe, targets.SDPA: _sdpa, targets.MHA: _mha, targets.FFN: _ffn, targets.ENC: _encoder, targets.DEC: _decoder}


@functools.lru_cache(maxsize=16)
def cached_runs(name, sizes):
    return runs(name, sizes)
