"""Checks of the encoder assignment: positional encoding and the feed-forward network
(the encoder block's checks are in encoder_block.py)."""

import torch

from autograder.checks.verdicts import (
    expect_spread,
    computes, expect_batch_independent, expect_depends, expect_finite_somewhere, expect_float64,
    expect_gradient_flow, expect_inputs_untouched, expect_not_identity, expect_param_count,
    expect_present, expect_runs_on_meta, expect_submodules, HINT_GATE,
    tensors, X,
)
from autograder.checks.registry import OUTPUT, check
from autograder.checks.targets import FFN, PE, ffn_parameters
from autograder.texts import bilingual


# -- positional_encoding ---------------------------------------------------------------------
HINT_PE = bilingual(
    "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) dan PE[pos, 2i+1] = cos(sudut yang sama): "
    "kolom genap sinus, kolom ganjil kosinus, dan pasangan kolom (2i, 2i+1) memakai sudut yang "
    "sama. Kembalikan tensor float32 berbentuk (length, d_model).",
    "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) and PE[pos, 2i+1] = cos(the same angle): even "
    "columns are sines, odd columns cosines, and the column pair (2i, 2i+1) shares one angle. "
    "Return a float32 tensor of shape (length, d_model).")


@check("pe.present", assignment="encoder", target=PE, category="api", points=1,
       title=bilingual("Fungsi positional_encoding(length, d_model) tersedia",
                       "Function positional_encoding(length, d_model) exists"), hint=HINT_PE)
def pe_present(ctx):
    expect_present(ctx, PE)


@check("pe.sensitivity", assignment="encoder", target=PE, category="sensitivity", points=0,
       needs=("pe.present",),
       title=bilingual("Encoding berbeda untuk setiap posisi", "The encoding differs between positions"),
       hint=HINT_PE)
def pe_sensitivity(ctx):
    def run():
        length, d_model = 6, ctx.chapter.d_model
        found = tensors(ctx.call(PE, length, d_model), 1)
        if found is None or found[0].dim() < 2 or found[0].shape[0] < 2:
            return  # another form or shape: pe.shape names it
        pe = found[0].double()
        what = f"positional_encoding({length}, {d_model})"
        expect_finite_somewhere(pe, what)
        rows = pe[pe.isfinite().all(dim=-1)] if pe.dim() == 2 else pe
        reference = ctx.reference.positional_encoding(length, d_model).double()
        spread_over_positions = rows - rows.mean(dim=0) if rows.shape[0] >= 2 else rows * 0
        expect_spread(spread_over_positions, reference - reference.mean(dim=0), bilingual(
            f"{what} memberi (hampir) vektor yang sama untuk setiap posisi, jadi posisi token "
            "tidak dapat dibedakan.",
            f"{what} gives every position (almost) the same vector, so the positions of tokens "
            "cannot be told apart."))
    computes(ctx, run)


@check("pe.shape", assignment="encoder", target=PE, category="shape", points=1,
       needs=("pe.present", "pe.sensitivity"),
       title=bilingual("Bentuk (length, d_model)", "Shape (length, d_model)"), hint=HINT_PE)
def pe_shape(ctx):
    other = next(d for d in (10, 12, 14) if d not in (ctx.avoid.d_model, ctx.chapter.d_model))
    for length, d_model in ((ctx.chapter.length, ctx.chapter.d_model), (11, other)):
        ctx.tensor(ctx.call(PE, length, d_model), f"positional_encoding({length}, {d_model})",
                   shape=(length, d_model))


@check("pe.dtype", assignment="encoder", target=PE, category="dtype", points=1,
       needs=("pe.present", "pe.sensitivity"),
       title=bilingual("Bertipe float32", "Has dtype float32"), hint=HINT_PE)
def pe_dtype(ctx):
    d_model = ctx.chapter.d_model
    ctx.tensor(ctx.call(PE, 6, d_model), f"positional_encoding(6, {d_model})", dtype=torch.float32)


def _expect_pe_values(ctx, length, d_model):
    pe = ctx.tensor(ctx.call(PE, length, d_model), f"positional_encoding({length}, {d_model})",
                    shape=(length, d_model))
    expected = ctx.reference.positional_encoding(length, d_model)
    ctx.expect_close(pe.double(), expected.double(), bilingual("Nilai positional encoding",
                     "The positional encoding values"), "positional_encoding")


@check("pe.values", assignment="encoder", target=PE, category="numeric_vs_reference", points=3,
       needs=("pe.shape",), title=bilingual("Nilai sinus-kosinus benar", "Correct sine/cosine values"),
       hint=HINT_PE)
def pe_values(ctx):
    _expect_pe_values(ctx, 50, ctx.chapter.d_model)


# -- FeedForward --------------------------------------------------------------------------------
HINT_FFN = bilingual(
    "FeedForward: l1 = nn.Linear(d_model, d_ff), lalu GELU eksak (F.gelu atau nn.GELU() tanpa "
    "approximate='tanh'), lalu l2 = nn.Linear(d_ff, d_model); diterapkan pada tiap token.",
    "FeedForward: l1 = nn.Linear(d_model, d_ff), then the exact GELU (F.gelu or nn.GELU() without "
    "approximate='tanh'), then l2 = nn.Linear(d_ff, d_model); applied to every token.")


@check("ffn.present", assignment="encoder", target=FFN, category="api", points=1,
       title=bilingual("Kelas FeedForward(nn.Module) tersedia", "Class FeedForward(nn.Module) exists"),
       hint=HINT_FFN)
def ffn_present(ctx):
    expect_present(ctx, FFN)


@check("ffn.construct", assignment="encoder", target=FFN, category="api", points=1, needs=("ffn.present",),
       title=bilingual("Dapat dibuat dan memiliki l1 serta l2", "Can be built; has l1 and l2"), hint=HINT_FFN)
def ffn_construct(ctx):
    obj = ctx.new(FFN, ctx.chapter.d_model, ctx.chapter.d_ff)
    expect_submodules(obj)


@check("ffn.sensitivity", assignment="encoder", target=FFN, category="sensitivity", points=0,
       needs=("ffn.construct",),
       title=bilingual("Keluaran bergantung pada x, tetapi tidak sama dengan x",
                       "The output depends on x and is not x itself"), hint=HINT_GATE)
def ffn_sensitivity(ctx):
    obj, ref = ctx.gate_module(FFN, ctx.chapter.d_model, ctx.chapter.d_ff)
    x, x2 = (ctx.randn(2, 5, ctx.chapter.d_model, scale=2.0) for _ in range(2))
    with torch.no_grad():
        reference = ctx.reference_result(ref, x), ctx.reference_result(ref, x2)

    def run():
        outs = [tensors(r, 1) for r, _ in ctx.record_many([{"target": obj, "args": [a]} for a in (x, x2)])]
        if None in outs:
            return  # another form: ffn.shape names it
        (out,), (out2,) = outs
        expect_finite_somewhere(out, OUTPUT)
        expect_depends(out, out2, OUTPUT, X, reference)
        expect_not_identity(out, x, out2, x2, reference)
    computes(ctx, run)


@check("ffn.param_count", assignment="encoder", target=FFN, category="param_count", points=1,
       needs=("ffn.construct", "ffn.sensitivity"), title=bilingual("Jumlah parameter (1072 untuk 16/32)",
                                                 "Parameter count (1072 for 16/32)"),
       hint=bilingual("(16·32 + 32) + (32·16 + 16) = 1072.", "(16·32 + 32) + (32·16 + 16) = 1072."))
def ffn_param_count(ctx):
    # sizes other than the chapter's, never course.toml's hidden ones (messages show them)
    other = (next(d for d in (10, 12, 14) if d not in (ctx.avoid.d_model, ctx.chapter.d_model)),
             next(f for f in (22, 26, 30) if f not in (ctx.avoid.d_ff, ctx.chapter.d_ff)))
    for d_model, d_ff in ((ctx.chapter.d_model, ctx.chapter.d_ff), other):  # messages show them
        obj = ctx.new(FFN, d_model, d_ff)
        expect_param_count(ctx, obj, ffn_parameters(d_model, d_ff), f"FeedForward({d_model}, {d_ff})")


def _ffn_input(ctx, sizes, batch=None, dtype=torch.float32):
    return ctx.randn(batch or sizes.batch, sizes.length, sizes.d_model, scale=2.0, dtype=dtype)


def _ffn_pieces(ctx, sizes, dtype=None):
    obj, ref = ctx.with_own_sublayers(FFN, sizes.d_model, sizes.d_ff, dtype=dtype)
    return obj, ref, _ffn_input(ctx, sizes, dtype=torch.float64 if dtype == "float64" else torch.float32)


def _ffn_for_properties(ctx, sizes, batch=None):
    """(student's FeedForward, input) for the checks that do not compare with the reference: the
    reference's weights where they fit, its own where they do not (a layer built with
    bias=False or other sizes costs ffn.param_count and the numeric checks, not these too)."""
    obj, _ = ctx.block(FFN, sizes.d_model, sizes.d_ff, sublayers=("l1", "l2"))
    return obj, _ffn_input(ctx, sizes, batch)


@check("ffn.shape", assignment="encoder", target=FFN, category="shape", points=1,
       needs=("ffn.construct", "ffn.sensitivity"),
       title=bilingual("Bentuk keluaran (B, T, D)", "Output shape (B, T, D)"), hint=HINT_FFN)
def ffn_shape(ctx):
    obj = ctx.new(FFN, ctx.chapter.d_model, ctx.chapter.d_ff)
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    ctx.tensor(ctx.call(obj, x), OUTPUT, shape=(2, 5, ctx.chapter.d_model))


def _expect_ffn_close(ctx, out, ref, x, tolerance="float32"):
    with torch.no_grad():
        expected = ctx.reference_result(ref, x)
    ctx.tensor(out, OUTPUT, shape=expected.shape)
    ctx.expect_close(out, expected, OUTPUT, tolerance)


@check("ffn.numeric", assignment="encoder", target=FFN, category="numeric_vs_reference", points=3,
       needs=("ffn.shape",), title=bilingual("Nilai sama dengan solusi acuan", "Values match the reference"),
       hint=HINT_FFN)
def ffn_numeric(ctx):
    obj, ref, x = _ffn_pieces(ctx, ctx.chapter)
    _expect_ffn_close(ctx, ctx.call(obj, x), ref, x)


@check("ffn.float64", assignment="encoder", target=FFN, category="dtype", points=1, needs=("ffn.shape",),
       title=bilingual("Bekerja setelah .double()", "Works after .double()"),
       hint=bilingual("Jangan menulis dtype secara tetap di dalam modul.", "Do not hard-code a dtype inside the module."))
def ffn_float64(ctx):
    obj64, ref64, x = _ffn_pieces(ctx, ctx.chapter, dtype="float64")
    obj32, ref32, _ = _ffn_pieces(ctx, ctx.chapter)
    with torch.no_grad():
        expect_float64(ctx, ctx.call(obj64, x), ctx.call(obj32, x.float()), ref64(x),
                       ref32(x.float()), OUTPUT)


@check("ffn.gradient_flow", assignment="encoder", target=FFN, category="gradient_flow", points=1,
       needs=("ffn.shape",),
       title=bilingual("Gradien sampai ke semua parameter", "Gradients reach every parameter"),
       hint=bilingual("Jangan memutus graf komputasi di dalam forward.",
                      "Do not cut the computation graph in forward."))
def ffn_gradient_flow(ctx):
    obj, x = _ffn_for_properties(ctx, ctx.chapter)
    expect_gradient_flow(ctx, obj, (x,), ctx.randn(*x.shape), inputs=(0,))


@check("ffn.batch_independence", assignment="encoder", target=FFN, category="batch_independence", points=1,
       needs=("ffn.shape",), title=bilingual("Item batch saling bebas", "Batch items are independent"),
       hint=HINT_FFN)
def ffn_batch_independence(ctx):
    obj, x = _ffn_for_properties(ctx, ctx.chapter, batch=3)
    expect_batch_independent(ctx, obj, (x,))


@check("ffn.no_inplace", assignment="encoder", target=FFN, category="inputs_untouched", points=1, needs=("ffn.shape",),
       title=bilingual("Masukan tidak diubah", "The input is not modified"),
       hint=bilingual("Jangan mengubah x secara in-place (di tempat).", "Do not modify x in place."))
def ffn_no_inplace(ctx):
    obj, x = _ffn_for_properties(ctx, ctx.chapter)
    expect_inputs_untouched(ctx, obj, (x,))


@check("ffn.device_agnostic", assignment="encoder", target=FFN, category="device_agnostic", points=1,
       needs=("ffn.shape",), title=bilingual("Tidak terikat pada satu perangkat (device)", "Not tied to one device"),
       hint=bilingual("Tensor baru di dalam forward harus dibuat di perangkat yang sama dengan masukan.",
                      "New tensors in forward must be created on the input's device."))
def ffn_device_agnostic(ctx):
    d, f = ctx.chapter.d_model, ctx.chapter.d_ff
    expect_runs_on_meta(ctx, FFN, (d, f), (ctx.randn(2, 5, d),))
