"""Checks of the attention assignment: scaled dot-product attention and the causal mask
(multi-head attention is in multihead.py)."""

import torch

from autograder.checks.verdicts import (
    expect_spread,
    computes, expect_batch_independent, expect_blocked_values_ignored, expect_finite_somewhere,
    expect_float64, expect_gradient_flow, expect_inputs_untouched, expect_masked,
    expect_present, expect_rows_sum_to_one, expect_runs_on_meta, HINT_GATE,
    HINT_MASK, padding_mask, tensors,
)
from autograder.checks.attention_calls import expect_attention_computes
from autograder.checks.registry import OUTPUT, WEIGHTS, check, fail
from autograder.checks.targets import CAUSAL, SDPA
from autograder.texts import bilingual


HINT_SDPA = bilingual(
    "Periksa rumus softmax(q kᵀ / √d_k) v, dengan q = kueri (query), k = kunci (key) dan "
    "v = nilai (value): bagi skor dengan akar d_k (ukuran sumbu terakhir q), ambil softmax pada "
    "sumbu terakhir (sumbu kunci), lalu kalikan dengan v.",
    "Check the formula softmax(q kᵀ / √d_k) v: scale by the square root of d_k (the last "
    "axis of q), take the softmax over the last axis (the keys), then multiply by v.")


# -- scaled_dot_product_attention -----------------------------------------------------------
@check("sdpa.present", assignment="attention", target=SDPA, category="api", points=1,
       title=bilingual("Fungsi tersedia dengan parameter (q, k, v, mask=None)",
                       "Function exists with signature (q, k, v, mask=None)"),
       hint=bilingual("Definisikan `def scaled_dot_product_attention(q, k, v, mask=None)`.",
                      "Define `def scaled_dot_product_attention(q, k, v, mask=None)`."))
def sdpa_present(ctx):
    expect_present(ctx, SDPA)


def _sdpa_inputs(ctx, batch=(2, 3), tq=5, tk=7, d_k=8, d_v=6, dtype=torch.float32):
    return (ctx.randn(*batch, tq, d_k, dtype=dtype), ctx.randn(*batch, tk, d_k, dtype=dtype),
            ctx.randn(*batch, tk, d_v, dtype=dtype))


@check("sdpa.sensitivity", assignment="attention", target=SDPA, category="sensitivity", points=0,
       needs=("sdpa.present",),
       title=bilingual("Bobot bergantung pada q dan k, keluaran pada v",
                       "The weights depend on q and k, the output on v"), hint=HINT_GATE)
def sdpa_sensitivity(ctx):
    q, k, v = _sdpa_inputs(ctx)
    q2, k2, v2 = _sdpa_inputs(ctx)
    inputs = ((q, k, v), (q2, k, v), (q, k2, v), (q, k, v2))
    runs = [{"target": SDPA, "args": list(a)} for a in inputs]
    reference = [ctx.reference.scaled_dot_product_attention(*a) for a in inputs]
    computes(ctx, lambda: expect_attention_computes(ctx, [r for r, _ in ctx.record_many(runs)], reference))


@check("sdpa.shape", assignment="attention", target=SDPA, category="shape", points=1,
       needs=("sdpa.present", "sdpa.sensitivity"),
       title=bilingual("Bentuk keluaran dan bobot", "Shapes of output and weights"),
       hint=bilingual("Keluaran berbentuk (..., Tq, d_v) dan bobot (..., Tq, Tk); Tq, Tk, d_k dan d_v "
                      "boleh berbeda satu sama lain.",
                      "The output is (..., Tq, d_v) and the weights (..., Tq, Tk); Tq, Tk, d_k and "
                      "d_v may all differ."))
def sdpa_shape(ctx):
    for batch in ((4,), (2, 3)):  # (B, T, d), then with a head axis as MultiHeadAttention calls it
        q, k, v = _sdpa_inputs(ctx, batch=batch)
        try:
            result = ctx.call(SDPA, q, k, v)
        except ctx.StudentError as error:
            if len(batch) == 1:
                raise
            fail(bilingual(
                "Berhasil untuk masukan (B, T, d), tetapi gagal bila ada sumbu head (B, H, T, d_k), "
                f"seperti saat dipanggil MultiHeadAttention: {error.type}: {error.message[:200]}. "
                "Hitung pada sumbu dari belakang: `k.transpose(-2, -1)`, `softmax(dim=-1)`, "
                "`q.size(-1)`.",
                "Works for (B, T, d) inputs but fails with a head axis (B, H, T, d_k), as "
                f"MultiHeadAttention calls it: {error.type}: {error.message[:200]}. Count axes from "
                "the end: `k.transpose(-2, -1)`, `softmax(dim=-1)`, `q.size(-1)`."))
        out, weights = ctx.pair(result, SDPA)
        ctx.tensor(out, OUTPUT, shape=(*batch, 5, 6))
        ctx.tensor(weights, WEIGHTS, shape=(*batch, 5, 7))


@check("sdpa.numeric", assignment="attention", target=SDPA, category="numeric_vs_reference", points=3,
       needs=("sdpa.shape",), title=bilingual("Nilai sama dengan solusi acuan", "Values match the reference"),
       hint=HINT_SDPA)
def sdpa_numeric(ctx):
    q, k, v = _sdpa_inputs(ctx)
    q = q * 2  # sharper scores make a missing or wrong scale visible
    out, weights = ctx.pair(ctx.call(SDPA, q, k, v), SDPA)
    ref_out, ref_weights = ctx.reference.scaled_dot_product_attention(q, k, v)
    ctx.expect_close(weights, ref_weights, WEIGHTS)
    ctx.expect_close(out, ref_out, OUTPUT)


@check("sdpa.float64", assignment="attention", target=SDPA, category="dtype", points=1, needs=("sdpa.shape",),
       title=bilingual("Bekerja dalam float64", "Works in float64"),
       hint=bilingual("Jangan menulis dtype secara tetap; tensor baru mengikuti dtype masukan.",
                      "Do not hard-code a dtype; new tensors follow the input's dtype."))
def sdpa_float64(ctx):
    q, k, v = _sdpa_inputs(ctx, dtype=torch.float64)
    out64, weights64 = ctx.pair(ctx.call(SDPA, q, k, v), SDPA)
    out32, weights32 = ctx.pair(ctx.call(SDPA, q.float(), k.float(), v.float()), SDPA)
    ref64, ref_weights64 = ctx.reference.scaled_dot_product_attention(q, k, v)
    ref32, ref_weights32 = ctx.reference.scaled_dot_product_attention(q.float(), k.float(), v.float())
    expect_float64(ctx, weights64, weights32, ref_weights64, ref_weights32,
                   bilingual("Bobot (float64)", "The weights (float64)"))
    expect_float64(ctx, out64, out32, ref64, ref32, bilingual("Keluaran (float64)", "The output (float64)"))


@check("sdpa.rows_sum_to_one", assignment="attention", target=SDPA, category="rows_sum_to_one", points=1,
       needs=("sdpa.shape",), title=bilingual("Tiap baris bobot berjumlah 1", "Each row of weights sums to 1"),
       hint=bilingual("Softmax harus diambil pada sumbu terakhir (dim=-1), yaitu sumbu kunci (key).",
                      "The softmax must be taken over the last axis (dim=-1)."))
def sdpa_rows(ctx):
    q, k, v = _sdpa_inputs(ctx)
    out, weights = ctx.pair(ctx.call(SDPA, q, k, v), SDPA)
    ctx.tensor(weights, WEIGHTS, shape=(2, 3, 5, 7))
    ctx.tensor(out, OUTPUT)
    expect_rows_sum_to_one(ctx, weights)


def _masking_verdicts(ctx, q, k, v, mask):
    """Blocked weights are 0, rows still sum to 1, blocked values do not matter. No numeric
    comparison: a wrong scale is the numeric check's business, not the mask's."""
    out, weights = ctx.pair(ctx.call(SDPA, q, k, v, mask=mask), SDPA)
    ctx.tensor(weights, WEIGHTS, shape=(*q.shape[:-1], k.shape[-2]))
    expect_masked(ctx, weights, mask)
    ctx.tensor(out, OUTPUT)
    expect_rows_sum_to_one(ctx, weights)
    expect_blocked_values_ignored(
        ctx, lambda a: ctx.tensor(ctx.pair(ctx.call(SDPA, *a, mask=mask), SDPA)[0], OUTPUT),
        2, (q, k, v), mask)


@check("sdpa.causal_masking", assignment="attention", target=SDPA, category="masking", points=2,
       needs=("sdpa.shape",), title=bilingual("Mask kausal (Tq, Tk)", "Causal (Tq, Tk) mask"), hint=HINT_MASK)
def sdpa_causal_masking(ctx):
    q, k, v = _sdpa_inputs(ctx, tq=6, tk=6)
    _masking_verdicts(ctx, q, k, v, ctx.reference.causal_mask(6))


@check("sdpa.padding_masking", assignment="attention", target=SDPA, category="masking", points=2,
       needs=("sdpa.shape",), title=bilingual("Mask padding (B, 1, 1, Tk)", "Padding (B, 1, 1, Tk) mask"),
       hint=HINT_MASK)
def sdpa_padding_masking(ctx):
    q, k, v = _sdpa_inputs(ctx, batch=(3, 2), tq=5, tk=7)
    _masking_verdicts(ctx, q, k, v, padding_mask(3, 7, (2, 0, 4)))


@check("sdpa.mask_convention", assignment="attention", target=SDPA, category="mask_convention", points=1,
       needs=("sdpa.shape",),
       title=bilingual("Konvensi mask: True = diblokir", "Mask convention: True = blocked"),
       hint=HINT_MASK)
def sdpa_mask_convention(ctx):
    q, k, v = _sdpa_inputs(ctx, tq=6, tk=6)
    mask = ctx.reference.causal_mask(6)
    _, weights = ctx.pair(ctx.call(SDPA, q, k, v, mask=mask), SDPA)
    ctx.tensor(weights, WEIGHTS, shape=(2, 3, 6, 6))
    expect_masked(ctx, weights, mask)


@check("sdpa.gradient_flow", assignment="attention", target=SDPA, category="gradient_flow", points=1,
       needs=("sdpa.shape",), title=bilingual("Gradien mengalir ke q, k dan v", "Gradients flow to q, k and v"),
       hint=bilingual("Jangan memakai `.detach()`, `.data`, `.numpy()` atau `torch.no_grad()` di dalam fungsi.",
                      "Do not use `.detach()`, `.data`, `.numpy()` or `torch.no_grad()` inside the function."))
def sdpa_gradient_flow(ctx):
    q, k, v = _sdpa_inputs(ctx)
    expect_gradient_flow(ctx, SDPA, (q, k, v), ctx.randn(2, 3, 5, 6), inputs=(0, 1, 2))


@check("sdpa.batch_independence", assignment="attention", target=SDPA, category="batch_independence", points=1,
       needs=("sdpa.shape",), title=bilingual("Item batch saling bebas", "Batch items are independent"),
       hint=bilingual("Operasi matriks harus bekerja per item batch: pakai `k.transpose(-2, -1)`, bukan `k.T`.",
                      "Matrix products must work per batch item: use `k.transpose(-2, -1)`, not `k.T`."))
def sdpa_batch_independence(ctx):
    expect_batch_independent(ctx, SDPA, _sdpa_inputs(ctx), vary=(0, 1, 2))


@check("sdpa.no_inplace", assignment="attention", target=SDPA, category="inputs_untouched", points=1, needs=("sdpa.shape",),
       title=bilingual("Masukan tidak diubah", "Inputs are not modified"),
       hint=bilingual("Jangan mengubah q, k, v atau mask secara in-place (di tempat).",
                      "Do not modify q, k, v or mask in place."))
def sdpa_no_inplace(ctx):
    q, k, v = _sdpa_inputs(ctx, tq=6, tk=6)
    expect_inputs_untouched(ctx, SDPA, (q, k, v), {"mask": ctx.reference.causal_mask(6)})
    expect_inputs_untouched(ctx, SDPA, (q, k, v))


@check("sdpa.device_agnostic", assignment="attention", target=SDPA, category="device_agnostic", points=1,
       needs=("sdpa.shape",), title=bilingual("Tidak terikat pada satu perangkat (device)", "Not tied to one device"),
       hint=bilingual("Tensor yang dibuat di dalam fungsi harus berada di perangkat yang sama dengan masukan.",
                      "Tensors created inside the function must be on the input's device."))
def sdpa_device_agnostic(ctx):
    q, k, v = _sdpa_inputs(ctx, tq=6, tk=6)
    expect_runs_on_meta(ctx, SDPA, (), (q, k, v), {"mask": ctx.reference.causal_mask(6)}, function=True)


# -- causal_mask ----------------------------------------------------------------------------------
HINT_CAUSAL = bilingual(
    "causal_mask(t) mengembalikan tensor bool (t, t) yang True tepat DI ATAS diagonal: "
    "`torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`. Diagonal sendiri tidak diblokir.",
    "causal_mask(t) returns a bool (t, t) tensor that is True strictly ABOVE the diagonal: "
    "`torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`. The diagonal itself is not blocked.")


@check("causal.present", assignment="attention", target=CAUSAL, category="api", points=1,
       title=bilingual("Fungsi causal_mask(t) tersedia", "Function causal_mask(t) exists"), hint=HINT_CAUSAL)
def causal_present(ctx):
    expect_present(ctx, CAUSAL)


@check("causal.sensitivity", assignment="attention", target=CAUSAL, category="sensitivity", points=0,
       needs=("causal.present",),
       title=bilingual("Mask tidak sama di semua posisi", "The mask is not the same everywhere"),
       hint=HINT_CAUSAL)
def causal_sensitivity(ctx):
    def run():
        for t in (4, 6):
            found = tensors(ctx.call(CAUSAL, t), 1)
            if found is None or found[0].numel() < 2:
                return  # another form or shape: the shape and dtype checks name it
            values = found[0].double().flatten()
            expect_finite_somewhere(values, f"causal_mask({t})")
            expect_spread(values, ctx.reference.causal_mask(t).double().flatten(), bilingual(
                f"causal_mask({t}) (hampir) bernilai sama di semua posisi: mask ini tidak "
                "membedakan masa lalu dari masa depan.",
                f"causal_mask({t}) has (almost) the same value at every position: it cannot tell "
                "the past from the future."))
    computes(ctx, run)


@check("causal.shape", assignment="attention", target=CAUSAL, category="shape", points=1,
       needs=("causal.present", "causal.sensitivity"),
       title=bilingual("Bentuk (t, t)", "Shape (t, t)"), hint=HINT_CAUSAL)
def causal_shape(ctx):
    for t in (4, _other_length(ctx)):
        ctx.tensor(ctx.call(CAUSAL, t), f"causal_mask({t})", shape=(t, t))


@check("causal.dtype", assignment="attention", target=CAUSAL, category="dtype", points=1,
       needs=("causal.present", "causal.sensitivity"),
       title=bilingual("Bertipe bool", "Has dtype bool"), hint=HINT_CAUSAL)
def causal_dtype(ctx):
    ctx.tensor(ctx.call(CAUSAL, 4), "causal_mask(4)", dtype=torch.bool)


@check("causal.convention", assignment="attention", target=CAUSAL, category="mask_convention", points=1,
       needs=("causal.present", "causal.sensitivity"), title=bilingual("Masa depan diblokir, masa lalu tidak",
                                                  "The future is blocked, the past is not"), hint=HINT_CAUSAL)
def causal_convention(ctx):
    mask = ctx.tensor(ctx.call(CAUSAL, 4), "causal_mask(4)", shape=(4, 4))
    blocked = mask.bool() if mask.dtype == torch.bool or not mask.is_floating_point() else mask != 0
    rows, columns = torch.meshgrid(torch.arange(4), torch.arange(4), indexing="ij")
    # the whole matrix but the diagonal (blocking it is causal.values' business)
    if not bool(blocked[columns > rows].all()) or bool(blocked[columns < rows].any()):
        fail(bilingual("Mask kausal harus True untuk kunci (key) di masa depan (j > i) dan False untuk "
                       "masa lalu.",
                       "The causal mask must be True for future keys (j > i) and False for past ones."))


@check("causal.values", assignment="attention", target=CAUSAL, category="masking", points=2,
       needs=("causal.present", "causal.sensitivity"), title=bilingual("Nilai mask kausal tepat", "Exact causal mask values"),
       hint=HINT_CAUSAL)
def causal_values(ctx):
    for t in (5, _other_length(ctx), 1, 70):
        mask = ctx.tensor(ctx.call(CAUSAL, t), f"causal_mask({t})", shape=(t, t))
        expected = ctx.reference.causal_mask(t)
        got = mask.bool() if mask.dtype == torch.bool or not mask.is_floating_point() else mask != 0
        if not torch.equal(got, expected):
            wrong = int((got != expected).sum())
            fail(bilingual(f"causal_mask({t}) tidak sama dengan triu(ones, diagonal=1): {wrong} dari "
                           f"{t * t} posisi salah.",
                           f"causal_mask({t}) is not triu(ones, diagonal=1): {wrong} of {t * t} "
                           "positions are wrong."))


def _other_length(ctx):
    """A length other than the chapter's (and never the hidden one: messages show it)."""
    return next(t for t in (9, 11, 13)
                if t not in (ctx.avoid.length, ctx.avoid.decoder_length, ctx.chapter.length))
