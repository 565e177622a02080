"""Checks of the decoder assignment: the pre-LN decoder block with masked self-attention
and cross-attention."""

import torch

from autograder.checks.common import (
    expect_batch_independent, expect_float64, expect_gradients_consistent, expect_inputs_untouched,
    expect_param_count, expect_present, expect_rows_sum_to_one, expect_runs_on_meta,
    expect_submodules, ffn_shapes, layernorm_shapes, mha_shapes,
)
from autograder.checks.registry import OUTPUT, check, fail
from autograder.texts import bilingual

DEC = "DecoderBlock"
CROSS = bilingual("Bobot cross-attention", "The cross-attention weights")

HINT_DEC = bilingual(
    "Susunan pre-LN: n = ln1(x); h = x + self_attn(n, n, n, causal_mask(Tdec))[0]; "
    "m = ln2(memory); z, bobot = cross_attn(ln2(h), m, m); h = h + z; keluaran = h + ffn(ln3(h)); "
    "kembalikan (keluaran, bobot cross-attention).",
    "Pre-LN wiring: n = ln1(x); h = x + self_attn(n, n, n, causal_mask(Tdec))[0]; "
    "m = ln2(memory); z, weights = cross_attn(ln2(h), m, m); h = h + z; output = h + ffn(ln3(h)); "
    "return (output, cross-attention weights).")


def dec_args(sizes):
    return sizes.d_model, sizes.num_heads, sizes.d_ff


def decoder_inputs(ctx, sizes, batch=None, t_dec=None, t_src=None, dtype=torch.float32):
    batch = batch or sizes.batch
    x = ctx.randn(batch, t_dec or sizes.decoder_length, sizes.d_model, dtype=dtype)
    memory = ctx.randn(batch, t_src or sizes.length, sizes.d_model, dtype=dtype)
    return x, memory


def decoder_forward(ctx, obj, x, memory):
    result = ctx.call(obj, x, memory)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(bilingual("DecoderBlock.forward harus mengembalikan pasangan (keluaran, bobot cross-attention).",
                       "DecoderBlock.forward must return a pair (output, cross-attention weights)."))
    return ctx.tensor(result[0], OUTPUT), ctx.tensor(result[1], CROSS)


@check("dec.present", assignment="decoder", target=DEC, category="api", points=1,
       title=bilingual("Class DecoderBlock(nn.Module) ada", "Class DecoderBlock(nn.Module) exists"),
       hint=bilingual("`class DecoderBlock(nn.Module)` dengan `__init__(self, d_model, num_heads, d_ff)` "
                      "dan `forward(self, x, memory)`.",
                      "`class DecoderBlock(nn.Module)` with `__init__(self, d_model, num_heads, d_ff)` "
                      "and `forward(self, x, memory)`."))
def dec_present(ctx):
    expect_present(ctx, DEC, "module", 3, 2,
                   signature="DecoderBlock(d_model, num_heads, d_ff); forward(x, memory)")


@check("dec.construct", assignment="decoder", target=DEC, category="api", points=1, needs=("dec.present",),
       title=bilingual("Dapat dibuat; punya self_attn, cross_attn, ffn, ln1–ln3",
                       "Can be built; has self_attn, cross_attn, ffn, ln1–ln3"),
       hint=bilingual("Buat self_attn dan cross_attn (dua MultiHeadAttention terpisah), ffn, serta tiga "
                      "nn.LayerNorm(d_model): ln1, ln2, ln3.",
                      "Create self_attn and cross_attn (two separate MultiHeadAttention), ffn, and three "
                      "nn.LayerNorm(d_model): ln1, ln2, ln3."))
def dec_construct(ctx):
    obj = ctx.new(DEC, *dec_args(ctx.chapter))
    expect_submodules(obj, {"self_attn": None, "cross_attn": None, "ffn": None,
                            "ln1": "LayerNorm", "ln2": "LayerNorm", "ln3": "LayerNorm"})


@check("dec.param_count", assignment="decoder", target=DEC, category="param_count", points=2,
       needs=("dec.construct",), title=bilingual("Jumlah parameter (3344 untuk 16/4/32)",
                                                 "Parameter count (3344 for 16/4/32)"),
       hint=bilingual("2 × 1088 (self dan cross attention) + 1072 (FFN) + 3 × 32 (LayerNorm) = 3344.",
                      "2 × 1088 (self and cross attention) + 1072 (FFN) + 3 × 32 (LayerNorms) = 3344."))
def dec_param_count(ctx):
    for sizes in (ctx.chapter, ctx.hidden):
        obj = ctx.new(DEC, *dec_args(sizes))
        d = sizes.d_model
        shapes = {**mha_shapes(d, "self_attn."), **mha_shapes(d, "cross_attn."),
                  **ffn_shapes(d, sizes.d_ff, "ffn."), **layernorm_shapes(d, "ln1", "ln2", "ln3")}
        expect_param_count(ctx, obj, shapes, "DecoderBlock({}, {}, {})".format(*dec_args(sizes)))


@check("dec.shape", assignment="decoder", target=DEC, category="shape", points=1, needs=("dec.construct",),
       title=bilingual("Bentuk keluaran (B, Tdec, D) dan bobot cross (B, H, Tdec, Tsrc)",
                       "Shapes of output (B, Tdec, D) and cross weights (B, H, Tdec, Tsrc)"), hint=HINT_DEC)
def dec_shape(ctx):
    c = ctx.chapter
    obj, _ = ctx.with_reference_sublayers(DEC, *dec_args(c))
    x, memory = decoder_inputs(ctx, c)
    out, weights = decoder_forward(ctx, obj, x, memory)
    ctx.tensor(out, OUTPUT, shape=x.shape)
    ctx.tensor(weights, CROSS, shape=(c.batch, c.num_heads, c.decoder_length, c.length))
    ctx.expect_nontrivial(out, x)


@check("dec.wiring", assignment="decoder", target=DEC, category="numeric_vs_reference", points=3,
       needs=("dec.construct",),
       title=bilingual("Susunan blok decoder benar", "The decoder block's wiring is correct"),
       hint=HINT_DEC)
def dec_wiring(ctx):
    obj, ref = ctx.with_reference_sublayers(DEC, *dec_args(ctx.chapter))
    x, memory = decoder_inputs(ctx, ctx.chapter)
    out, weights = decoder_forward(ctx, obj, x, memory)
    with torch.no_grad():
        ref_out, _ = ref(x, memory)
        if not ctx.close(out, ref_out):
            for variant, label in _decoder_variants(ref, x, memory):
                if ctx.close(out, variant):
                    fail(bilingual(f"Keluaran Anda cocok dengan blok decoder yang {label['id']}.",
                                   f"Your output matches a decoder block that {label['en']}."))
    ctx.expect_close(out, ref_out, OUTPUT)


def _decoder_variants(ref, x, memory):
    """Outputs of typical mis-wirings, computed with the reference's own sub-layers."""
    t = x.size(1)
    causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)

    def run(self_mask=causal, memory_norm=ref.ln2, query_norm=ref.ln2):
        n = ref.ln1(x)
        h = x + ref.self_attn(n, n, n, self_mask)[0]
        m = memory_norm(memory)
        h = h + ref.cross_attn(query_norm(h), m, m)[0]
        return h + ref.ffn(ref.ln3(h))

    identity = torch.nn.Identity()
    return [
        (run(self_mask=None), bilingual("tidak memakai mask kausal pada self-attention",
                                        "uses no causal mask in self-attention")),
        (run(memory_norm=identity), bilingual("tidak menormalkan memori dengan ln2",
                                              "does not normalise the memory with ln2")),
        (run(memory_norm=ref.ln1), bilingual("menormalkan memori dengan ln1, bukan ln2",
                                             "normalises the memory with ln1 instead of ln2")),
        (run(query_norm=identity), bilingual("tidak menormalkan h dengan ln2 sebelum cross-attention",
                                             "does not normalise h with ln2 before cross-attention")),
    ]


@check("dec.integration", assignment="decoder", target=DEC, category="numeric_vs_reference", points=2,
       needs=("dec.construct",), title=bilingual("Blok utuh dengan sub-layer Anda sendiri",
                                                 "The whole block with your own sub-layers"),
       hint=bilingual("Blok lengkap dengan sub-layer Anda sendiri harus sama dengan solusi acuan. Jika "
                      "dec.wiring lulus tetapi ini tidak, kesalahannya ada di sub-layer.",
                      "The complete block with your own sub-layers must match the reference. If "
                      "dec.wiring passes but this one fails, the bug is in a sub-layer."))
def dec_integration(ctx):
    obj, ref = ctx.with_own_sublayers(DEC, *dec_args(ctx.chapter))
    x, memory = decoder_inputs(ctx, ctx.chapter)
    out, weights = decoder_forward(ctx, obj, x, memory)
    with torch.no_grad():
        ref_out, _ = ref(x, memory)
    ctx.expect_close(out, ref_out, OUTPUT)


@check("dec.causality", assignment="decoder", target=DEC, category="causality", points=3,
       needs=("dec.construct",), title=bilingual("Kausal: token tidak melihat masa depan",
                                                 "Causal: tokens do not see the future"),
       hint=bilingual("Self-attention decoder harus memakai mask kausal ukuran Tdec (True di atas "
                      "diagonal), dibuat di device masukan, mis. `causal_mask(T).to(x.device)`.",
                      "The decoder's self-attention must use a causal mask of size Tdec (True above the "
                      "diagonal) made on the input's device, e.g. `causal_mask(T).to(x.device)`."))
def dec_causality(ctx):
    c = ctx.chapter
    obj, _ = ctx.with_reference_sublayers(DEC, *dec_args(c))
    x, memory = decoder_inputs(ctx, c)
    out, _ = decoder_forward(ctx, obj, x, memory)
    ctx.expect_nontrivial(out, x)
    tol = ctx.tolerance("property")
    for cut in range(c.decoder_length):
        changed = x.clone()
        changed[:, cut:] += ctx.randn(c.batch, c.decoder_length - cut, c.d_model)
        out2, _ = decoder_forward(ctx, obj, changed, memory)
        if out2.shape != out.shape:
            fail(bilingual("Bentuk keluaran berubah-ubah.", "The output shape is not stable."))
        if not torch.allclose(out2[:, :cut], out[:, :cut], rtol=tol.rtol, atol=tol.atol):
            fail(bilingual(f"Mengubah token posisi ≥ {cut} mengubah keluaran posisi < {cut}: "
                           "token melihat masa depan.",
                           f"Changing tokens at positions ≥ {cut} changes the outputs at positions "
                           f"< {cut}: tokens see the future."))
        if (out2[:, cut:] - out[:, cut:]).abs().max() < 1e-4:
            fail(bilingual(f"Mengubah token posisi ≥ {cut} tidak mengubah keluaran di posisi itu.",
                           f"Changing tokens at positions ≥ {cut} does not change the outputs there."))


@check("dec.memory_path", assignment="decoder", target=DEC, category="memory_path", points=2,
       needs=("dec.construct",), title=bilingual("Memori encoder memengaruhi keluaran",
                                                 "The encoder memory affects the output"),
       hint=bilingual("Cross-attention mengambil kunci dan nilai dari memori encoder: "
                      "cross_attn(ln2(h), m, m) dengan m = ln2(memory).",
                      "Cross-attention takes keys and values from the encoder memory: "
                      "cross_attn(ln2(h), m, m) with m = ln2(memory)."))
def dec_memory_path(ctx):
    c = ctx.chapter
    obj, _ = ctx.with_reference_sublayers(DEC, *dec_args(c))
    x, memory = decoder_inputs(ctx, c)
    out, _ = decoder_forward(ctx, obj, x, memory)
    ctx.expect_nontrivial(out, x)
    for position in range(c.length):
        changed = memory.clone()
        changed[:, position] += ctx.randn(c.batch, c.d_model)
        out2, _ = decoder_forward(ctx, obj, x, changed)
        if out2.shape != out.shape or (out2 - out).abs().max() < 1e-4:
            fail(bilingual(f"Mengubah token memori posisi {position} tidak mengubah keluaran decoder: "
                           "memori tidak sampai ke cross-attention.",
                           f"Changing memory token {position} does not change the decoder output: the "
                           "memory does not reach the cross-attention."))


@check("dec.cross_weights", assignment="decoder", target=DEC, category="rows_sum_to_one", points=2,
       needs=("dec.construct",), title=bilingual("Bobot cross-attention yang dikembalikan benar",
                                                 "The returned cross-attention weights are right"),
       hint=bilingual("Kembalikan bobot dari cross_attn (B, H, Tdec, Tsrc), bukan dari self_attn; "
                      "tiap baris berjumlah 1.",
                      "Return the weights of cross_attn (B, H, Tdec, Tsrc), not those of self_attn; "
                      "every row sums to 1."))
def dec_cross_weights(ctx):
    c = ctx.chapter
    obj, ref = ctx.with_reference_sublayers(DEC, *dec_args(c))
    x, memory = decoder_inputs(ctx, c)
    _, weights = decoder_forward(ctx, obj, x, memory)
    ctx.tensor(weights, CROSS, shape=(c.batch, c.num_heads, c.decoder_length, c.length))
    ctx.expect_nontrivial(weights)
    expect_rows_sum_to_one(ctx, weights)
    with torch.no_grad():
        ctx.expect_close(weights, ref(x, memory)[1], CROSS)


@check("dec.float64", assignment="decoder", target=DEC, category="dtype", points=1, needs=("dec.construct",),
       title=bilingual("Bekerja setelah .double()", "Works after .double()"),
       hint=bilingual("Jangan menetapkan dtype di dalam blok.", "Do not hard-code a dtype inside the block."))
def dec_float64(ctx):
    obj64, ref64 = ctx.with_reference_sublayers(DEC, *dec_args(ctx.chapter), dtype="float64")
    obj32, ref32 = ctx.with_reference_sublayers(DEC, *dec_args(ctx.chapter))
    x, memory = decoder_inputs(ctx, ctx.chapter, dtype=torch.float64)
    out64, _ = decoder_forward(ctx, obj64, x, memory)
    out32, _ = decoder_forward(ctx, obj32, x.float(), memory.float())
    with torch.no_grad():
        expect_float64(ctx, out64, out32, ref64(x, memory)[0], ref32(x.float(), memory.float())[0],
                       OUTPUT)


@check("dec.hidden_config", assignment="decoder", target=DEC, category="hidden_config", points=2,
       needs=("dec.construct",), title=bilingual("Benar pada ukuran lain (tersembunyi)",
                                                 "Correct on other (hidden) sizes"),
       hint=bilingual("Jangan menulis ukuran secara tetap; mask kausal harus berukuran Tdec dari masukan.",
                      "Do not hard-code sizes; the causal mask must have the input's Tdec."))
def dec_hidden_config(ctx):
    h = ctx.hidden
    obj, ref = ctx.with_reference_sublayers(DEC, *dec_args(h))
    for t_dec, t_src in ((h.decoder_length, h.length), (h.length, h.decoder_length)):
        x, memory = decoder_inputs(ctx, h, t_dec=t_dec, t_src=t_src)
        out, weights = decoder_forward(ctx, obj, x, memory)
        with torch.no_grad():
            ref_out, _ = ref(x, memory)
        ctx.expect_close(out, ref_out, OUTPUT)


@check("dec.gradient_flow", assignment="decoder", target=DEC, category="gradient_flow", points=1,
       needs=("dec.construct",), title=bilingual("Gradien mengalir ke x, memori dan LayerNorm",
                                                 "Gradients flow to x, the memory and the LayerNorms"),
       hint=bilingual("Jangan memutus graf komputasi (`.detach()`, `.data`, `torch.no_grad()`) di "
                      "forward blok.",
                      "Do not cut the computation graph (`.detach()`, `.data`, `torch.no_grad()`) in the "
                      "block's forward."))
def dec_gradient_flow(ctx):
    obj, _ = ctx.with_reference_sublayers(DEC, *dec_args(ctx.chapter))
    x, memory = decoder_inputs(ctx, ctx.chapter)
    expect_gradients_consistent(ctx, obj, (x, memory), ctx.randn(*x.shape))


@check("dec.batch_independence", assignment="decoder", target=DEC, category="batch_independence", points=1,
       needs=("dec.construct",), title=bilingual("Item batch saling bebas", "Batch items are independent"),
       hint=bilingual("Tidak ada operasi yang mencampur item batch.", "No operation may mix batch items."))
def dec_batch_independence(ctx):
    obj, _ = ctx.with_reference_sublayers(DEC, *dec_args(ctx.chapter))
    expect_batch_independent(ctx, obj, decoder_inputs(ctx, ctx.chapter, batch=3), vary=(0, 1))


@check("dec.no_inplace", assignment="decoder", target=DEC, category="api", points=1, needs=("dec.construct",),
       title=bilingual("Masukan tidak diubah", "Inputs are not modified"),
       hint=bilingual("Jangan mengubah x atau memory di tempat (`x += ...`).",
                      "Do not modify x or memory in place (`x += ...`)."))
def dec_no_inplace(ctx):
    obj, _ = ctx.with_reference_sublayers(DEC, *dec_args(ctx.chapter))
    expect_inputs_untouched(ctx, obj, decoder_inputs(ctx, ctx.chapter))


@check("dec.device_agnostic", assignment="decoder", target=DEC, category="device_agnostic", points=1,
       needs=("dec.construct",), title=bilingual("Tidak terikat pada satu device", "Not tied to one device"),
       hint=bilingual("Mask kausal harus dibuat di device masukan: `causal_mask(T).to(x.device)`.",
                      "The causal mask must be made on the input's device: `causal_mask(T).to(x.device)`."))
def dec_device_agnostic(ctx):
    expect_runs_on_meta(ctx, DEC, dec_args(ctx.chapter), decoder_inputs(ctx, ctx.chapter))
