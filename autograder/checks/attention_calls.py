"""What the attention checks share: the attention gate (output and weights respond to q, k and
v), and grading a MultiHeadAttention *around* its own scaled_dot_product_attention (the recorded
calls' queries, keys, values and mask read in any of the layouts here, and the output the
contract's projections and merge give from what those calls returned)."""

import torch
import torch.nn.functional as F

from autograder.checks.recorded import blocked
from autograder.checks.registry import OUTPUT, WEIGHTS, fail
from autograder.checks.verdicts import (expect_finite_somewhere, fail_ignores, fair_share, movement,
                                       tensors)
from autograder.texts import bilingual


QUERY = (bilingual("kueri (query) q", "the query q"), bilingual("q diabaikan", "q is ignored"))
KEY = (bilingual("kunci (key) k", "the key k"), bilingual("k diabaikan", "k is ignored"))
VALUE = (bilingual("nilai (value) v", "the value v"), bilingual("v diabaikan", "v is ignored"))
BOTH = bilingual("Keluaran maupun bobot attention", "The output and the attention weights")


def expect_attention_computes(ctx, results, reference):
    """The gate of an attention (function or module): ``results`` of calls on (q, k, v),
    (q', k, v), (q, k', v), (q, k, v'), ``reference`` the reference's on the same inputs (and
    weights). For each of q, k and v, what it returns moves by a fair share of what the
    reference's output or weights move (``verdicts.fair_share``; in whichever order it returns
    output and weights: a swapped pair is the shape check's business), and neither item is NaN
    or inf everywhere."""
    pairs = [tensors(r, 2) for r in results]
    if any(p is None for p in pairs):
        return
    (out, weights), *changed = pairs
    expect_finite_somewhere(weights, WEIGHTS)
    expect_finite_somewhere(out, OUTPUT)
    (ref_out, ref_weights), *ref_changed = reference
    for (out2, weights2), (ref_out2, ref_weights2), on in zip(changed, ref_changed, (QUERY, KEY, VALUE)):
        moved = max(movement(out, out2), movement(weights, weights2))
        wanted = [m for m in (movement(ref_out, ref_out2), movement(ref_weights, ref_weights2)) if m > 0]
        if wanted and not fair_share(moved, min(wanted)):
            fail_ignores(BOTH, on)


# -- MultiHeadAttention around its own scaled_dot_product_attention -----------------------------
def _split(x, heads):
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def _flat(x, tail):
    """(..., *tail) -> (N, *tail), or None."""
    if not isinstance(x, torch.Tensor) or x.dim() < len(tail) + 1 or tuple(x.shape[-len(tail):]) != tail:
        return None
    return x.reshape(-1, *tail)


LAYOUTS = {  # how (B, H, T, X) heads are laid out along one axis of scaled_dot_product_attention calls
    "batch-major": (lambda x: x.reshape(-1, *x.shape[2:]),
                    lambda x, b, h: x.reshape(b, h, *x.shape[1:])),
    "head-major": (lambda x: x.transpose(0, 1).reshape(-1, *x.shape[2:]),
                   lambda x, b, h: x.reshape(h, b, *x.shape[1:]).transpose(0, 1)),
}


def around_sdpa(ctx, ref, q, k, v, mask, calls, tolerance="float32"):
    """(expected out, expected weights) from the recorded scaled_dot_product_attention calls
    of one forward, or None when there are none or their layout is not one read here: one call
    on (B, H, T, d_k), on (B*H, T, d_k), or one call per head or per batch item. Fails when the
    layout is read but MultiHeadAttention passes the wrong keys, values or mask."""
    if not calls:
        return None
    b, tq, d = q.shape
    tk, heads = k.shape[1], ref.num_heads
    d_k = d // heads
    with torch.no_grad():
        Q, K, V = (_split(F.linear(x, lin.weight.to(x.dtype), lin.bias.to(x.dtype)), heads)
                   for x, lin in ((q, ref.wq), (k, ref.wk), (v, ref.wv)))
    pieces = {"q": [], "k": [], "v": [], "mask": [], "out": [], "weights": []}
    for call in calls:
        cq, ck, cv, cmask = call.attention_arguments()
        flat = {"q": _flat(cq, (tq, d_k)), "k": _flat(ck, (tk, d_k)), "v": _flat(cv, (tk, d_k)),
                "out": _flat(call.main, (tq, d_k)), "weights": _flat(call.second, (tq, tk))}
        if any(x is None for x in flat.values()) or len({x.shape[0] for x in flat.values()}) != 1:
            return None
        scores = (*cq.shape[:-1], tk)
        flat["mask"] = blocked(cmask, scores)
        if flat["mask"] is None and isinstance(cmask, torch.Tensor) and cmask.dim() > len(scores):
            shape = ", ".join(map(str, cmask.shape))  # e.g. a (B, 1, 1, Tk) mask, 3-D scores
            fail(bilingual(
                f"Mask berbentuk ({shape}) diteruskan ke panggilan scaled_dot_product_attention yang "
                "skornya berdimensi lebih sedikit daripada mask itu, sehingga mask tidak dapat "
                "diterapkan. Mask "
                "MultiHeadAttention berlaku untuk skor (B, H, Tq, Tk), mis. mask padding "
                "(B, 1, 1, Tk): panggil scaled_dot_product_attention pada tensor dengan sumbu "
                "head, (B, H, T, d_k).",
                f"A mask of shape ({shape}) is passed to a scaled_dot_product_attention call whose "
                "scores have fewer dimensions than the mask, so it cannot apply. MultiHeadAttention's "
                "masks apply to scores of shape (B, H, Tq, Tk), e.g. a (B, 1, 1, Tk) padding mask: "
                "call scaled_dot_product_attention on tensors with the head axis, (B, H, T, d_k)."))
        if flat["mask"] is None:
            fail(bilingual("Mask yang diteruskan ke scaled_dot_product_attention bukan mask yang "
                           "diterima MultiHeadAttention.",
                           "The mask passed on to scaled_dot_product_attention is not the mask "
                           "MultiHeadAttention received."))
        flat["mask"] = flat["mask"].reshape(-1, tq, tk)
        for name, value in flat.items():
            pieces[name].append(value)
    got = {name: torch.cat(values) for name, values in pieces.items()}
    if got["q"].shape[0] != b * heads:
        return None
    for name, (arrange, restore) in LAYOUTS.items():
        if ctx.same(got["q"], arrange(Q), tolerance):
            break
    else:
        return None  # not the projected, split queries in a layout read here: compare the whole
    for key, expected, label in ((
            "k", K, bilingual("kunci (key) k", "keys (k)")), ("v", V, bilingual("nilai (value) v", "values (v)"))):
        if not ctx.same(got[key], arrange(expected), tolerance):
            fail(bilingual(f"{label['id'].capitalize()} yang diteruskan ke scaled_dot_product_attention "
                           "bukan hasil proyeksi yang dipecah menjadi head seperti kueri (query).",
                           f"The {label['en']} passed to scaled_dot_product_attention are not the "
                           "projected inputs split into heads like the queries."))
    wanted = arrange(blocked(mask, (b, heads, tq, tk)).contiguous())
    if not torch.equal(got["mask"], wanted):
        fail(bilingual("Mask yang diteruskan ke scaled_dot_product_attention bukan mask yang diterima "
                       "MultiHeadAttention.",
                       "The mask passed on to scaled_dot_product_attention is not the mask "
                       "MultiHeadAttention received."))
    heads_out = restore(got["out"], b, heads)
    weights = restore(got["weights"], b, heads)
    merged = heads_out.to(q.dtype).transpose(1, 2).reshape(b, tq, d)
    with torch.no_grad():
        out = F.linear(merged, ref.wo.weight.to(q.dtype), ref.wo.bias.to(q.dtype))
    return out, weights


def sdpa_standin(ctx, heads, q, k):
    """Stand-ins for MultiHeadAttention's one call of the student's scaled_dot_product_attention
    on (B, H, T, d_k) heads, used only when that function raises or returns another form there:
    MultiHeadAttention's own part is then still graded, and the function's bug costs its own
    checks and ``mha.integration``. Check-made values, never the reference's result."""
    b, tq, d = q.shape
    tk, d_k = k.shape[1], d // heads
    weights = ctx.randn(b, heads, tq, tk, dtype=q.dtype).softmax(-1)
    return {"scaled_dot_product_attention": [{"result": (ctx.randn(b, heads, tq, d_k, dtype=q.dtype), weights),
                    "inputs": [(b, heads, tq, d_k), (b, heads, tk, d_k), (b, heads, tk, d_k)]}]}
