"""Checks of the encoder assignment: the encoder block (post-LN and pre-LN)."""

import torch

from autograder.checks.common import (
    expect_batch_independent, expect_float64, expect_gradients_consistent,
    expect_inputs_untouched, expect_param_count, expect_present, expect_runs_on_meta,
    expect_submodules, ffn_shapes, first_output, layernorm_shapes, mha_shapes,
)
from autograder.checks.context import SUBLAYERS
from autograder.checks.registry import OUTPUT, check, fail
from autograder.texts import bilingual

ENC = "EncoderBlock"

# -- EncoderBlock -----------------------------------------------------------------------------
HINT_POST = bilingual(
    "Post-LN (prenorm=False): h = ln1(x + attn(x, x, x, mask)[0]); keluaran = ln2(h + ffn(h)).",
    "Post-LN (prenorm=False): h = ln1(x + attn(x, x, x, mask)[0]); output = ln2(h + ffn(h)).")
HINT_PRE = bilingual(
    "Pre-LN (prenorm=True): n = ln1(x); h = x + attn(n, n, n, mask)[0]; keluaran = h + ffn(ln2(h)).",
    "Pre-LN (prenorm=True): n = ln1(x); h = x + attn(n, n, n, mask)[0]; output = h + ffn(ln2(h)).")
PERMUTATION = [3, 0, 4, 1, 2]


def enc_args(sizes):
    return sizes.d_model, sizes.num_heads, sizes.d_ff


def block_output(ctx, obj, *args, **kwargs):
    return first_output(ctx, ctx.call(obj, *args, **kwargs), OUTPUT)


@check("enc.present", assignment="encoder", target=ENC, category="api", points=1,
       title=bilingual("Class EncoderBlock(nn.Module) ada", "Class EncoderBlock(nn.Module) exists"),
       hint=bilingual("`class EncoderBlock(nn.Module)` dengan `__init__(self, d_model, num_heads, d_ff, "
                      "prenorm=False)` dan `forward(self, x, mask=None)`.",
                      "`class EncoderBlock(nn.Module)` with `__init__(self, d_model, num_heads, d_ff, "
                      "prenorm=False)` and `forward(self, x, mask=None)`."))
def enc_present(ctx):
    expect_present(ctx, ENC, "module", 3, 1, keywords=("prenorm",), forward_keywords=("mask",),
                   defaults=("prenorm", "mask"),
                   signature="EncoderBlock(d_model, num_heads, d_ff, prenorm=False); forward(x, mask=None)")


@check("enc.construct", assignment="encoder", target=ENC, category="api", points=1, needs=("enc.present",),
       title=bilingual("Dapat dibuat; punya attn, ffn, ln1, ln2", "Can be built; has attn, ffn, ln1, ln2"),
       hint=bilingual("Buat self.attn = MultiHeadAttention(...), self.ffn = FeedForward(...), "
                      "self.ln1 dan self.ln2 = nn.LayerNorm(d_model) — dua LayerNorm terpisah.",
                      "Create self.attn = MultiHeadAttention(...), self.ffn = FeedForward(...), "
                      "self.ln1 and self.ln2 = nn.LayerNorm(d_model) — two separate LayerNorms."))
def enc_construct(ctx):
    for prenorm in (False, True):
        obj = ctx.new(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        expect_submodules(obj, {"attn": None, "ffn": None, "ln1": "LayerNorm", "ln2": "LayerNorm"})


@check("enc.param_count", assignment="encoder", target=ENC, category="param_count", points=2,
       needs=("enc.construct",), title=bilingual("Jumlah parameter (2224 untuk 16/4/32)",
                                                 "Parameter count (2224 for 16/4/32)"),
       hint=bilingual("1088 (attention) + 1072 (FFN) + 64 (dua LayerNorm) = 2224.",
                      "1088 (attention) + 1072 (FFN) + 64 (two LayerNorms) = 2224."))
def enc_param_count(ctx):
    for sizes in (ctx.chapter, ctx.hidden):
        obj = ctx.new(ENC, *enc_args(sizes))
        shapes = {**mha_shapes(sizes.d_model, "attn."), **ffn_shapes(sizes.d_model, sizes.d_ff, "ffn."),
                  **layernorm_shapes(sizes.d_model, "ln1", "ln2")}
        expect_param_count(ctx, obj, shapes, "EncoderBlock({}, {}, {})".format(*enc_args(sizes)))


@check("enc.shape", assignment="encoder", target=ENC, category="shape", points=1, needs=("enc.construct",),
       title=bilingual("Bentuk (B, T, D); dua blok bertumpuk juga", "Shape (B, T, D); two stacked blocks too"),
       hint=bilingual("forward mengembalikan satu tensor (B, T, D), sehingga blok bisa ditumpuk dengan "
                      "nn.Sequential.",
                      "forward returns a single (B, T, D) tensor, so blocks can be stacked with "
                      "nn.Sequential."))
def enc_shape(ctx):
    d = ctx.chapter.d_model
    x = ctx.randn(2, 5, d)
    for prenorm in (False, True):
        obj, _ = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        out = ctx.tensor(ctx.call(obj, x), OUTPUT, shape=(2, 5, d))
        ctx.expect_nontrivial(out, x)
    stacked = ctx.new(ENC, *enc_args(ctx.chapter), repeat=2, proxies=SUBLAYERS)
    ctx.tensor(ctx.call(stacked, x),
               bilingual("Keluaran dua blok bertumpuk", "The output of two stacked blocks"), shape=(2, 5, d))


def _diagnose_block(ctx, out, x, prenorm, ref):
    """Name a swapped LN variant when the output matches the other one."""
    other = ctx.reference_instance(ENC, *enc_args(ctx.chapter), prenorm=not prenorm)
    other.load_state_dict(ref.state_dict())
    with torch.no_grad():
        expected_other = other(x)
    if out.shape == expected_other.shape and torch.allclose(out, expected_other, atol=1e-5):
        wanted = "pre-LN" if prenorm else "post-LN"
        got = "post-LN" if prenorm else "pre-LN"
        fail(bilingual(f"Dengan prenorm={prenorm} blok Anda menghitung {got}, padahal seharusnya {wanted}.",
                       f"With prenorm={prenorm} your block computes {got}, but it should be {wanted}."))


def _expect_wiring(ctx, prenorm):
    obj, ref = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    out = block_output(ctx, obj, x)
    with torch.no_grad():
        expected = ref(x)
    ctx.tensor(out, OUTPUT, shape=expected.shape)
    if not ctx.close(out, expected):
        _diagnose_block(ctx, out, x, prenorm, ref)
    ctx.expect_close(out, expected, OUTPUT)


@check("enc.postln_wiring", assignment="encoder", target=ENC, category="numeric_vs_reference", points=3,
       needs=("enc.construct",), title=bilingual("Susunan post-LN (prenorm=False) benar",
                                                 "Post-LN wiring (prenorm=False) is correct"), hint=HINT_POST)
def enc_postln_wiring(ctx):
    _expect_wiring(ctx, prenorm=False)


@check("enc.preln_wiring", assignment="encoder", target=ENC, category="numeric_vs_reference", points=3,
       needs=("enc.construct",), title=bilingual("Susunan pre-LN (prenorm=True) benar",
                                                 "Pre-LN wiring (prenorm=True) is correct"), hint=HINT_PRE)
def enc_preln_wiring(ctx):
    _expect_wiring(ctx, prenorm=True)


@check("enc.integration", assignment="encoder", target=ENC, category="numeric_vs_reference", points=2,
       needs=("enc.construct",), title=bilingual("Blok utuh dengan sub-layer Anda sendiri",
                                                 "The whole block with your own sub-layers"),
       hint=bilingual("Blok lengkap (MultiHeadAttention dan FeedForward Anda sendiri) harus sama dengan "
                      "solusi acuan. Jika pemeriksaan susunan lulus tetapi ini tidak, kesalahannya ada di "
                      "sub-layer — lihat pemeriksaan sub-layer tersebut.",
                      "The complete block (with your own MultiHeadAttention and FeedForward) must match "
                      "the reference. If the wiring checks pass but this one fails, the bug is in a "
                      "sub-layer — see that sub-layer's checks."))
def enc_integration(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        obj, ref = ctx.with_own_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        with torch.no_grad():
            expected = ref(x)
        ctx.expect_close(block_output(ctx, obj, x), expected, OUTPUT)


@check("enc.layernorm_stats", assignment="encoder", target=ENC, category="layernorm_stats", points=1,
       needs=("enc.construct",), title=bilingual("Post-LN: tiap token rata-rata 0, simpangan baku 1",
                                                 "Post-LN: every token has mean 0, std 1"), hint=HINT_POST)
def enc_layernorm_stats(ctx):
    obj, _ = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter),  # default: post-LN
                                          randomize_layernorm=False)
    x = ctx.randn(2, 5, ctx.chapter.d_model, scale=3.0)
    out = ctx.tensor(block_output(ctx, obj, x), OUTPUT, shape=x.shape)
    ctx.expect_nontrivial(out, x)
    mean, std = out.double().mean(-1), out.double().std(-1, unbiased=False)
    if not (torch.allclose(mean, torch.zeros_like(mean), atol=1e-4)
            and torch.allclose(std, torch.ones_like(std), atol=1e-3)):
        fail(bilingual(f"Keluaran post-LN (prenorm bawaan) harus ternormalisasi per token; ditemukan "
                       f"rata-rata hingga {mean.abs().max():.3g} dan simpangan baku {std.min():.3g}–"
                       f"{std.max():.3g}. LayerNorm terakhir harus diterapkan pada h + ffn(h), dan "
                       "prenorm harus bawaannya False.",
                       f"The post-LN output (default prenorm) must be normalised per token; found means "
                       f"up to {mean.abs().max():.3g} and std {std.min():.3g}–{std.max():.3g}. The last "
                       "LayerNorm must be applied to h + ffn(h), and prenorm must default to False."))


@check("enc.masking", assignment="encoder", target=ENC, category="masking", points=2, needs=("enc.construct",),
       title=bilingual("Mask diteruskan ke attention", "The mask is passed on to attention"),
       hint=bilingual("Teruskan `mask` dari forward(x, mask) ke self.attn(..., mask).",
                      "Pass `mask` from forward(x, mask) on to self.attn(..., mask)."))
def enc_masking(ctx):
    d = ctx.chapter.d_model
    mask = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
    mask[0, ..., 3:] = True
    mask[1, ..., 4:] = True
    x = ctx.randn(2, 5, d)
    changed = x.clone()
    changed[0, 3:] = ctx.randn(2, d, scale=3.0)
    changed[1, 4:] = ctx.randn(1, d, scale=3.0)
    for prenorm in (False, True):
        obj, ref = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        out = ctx.tensor(block_output(ctx, obj, x, mask=mask), OUTPUT, shape=x.shape)
        ctx.expect_nontrivial(out, x)
        out2 = ctx.tensor(block_output(ctx, obj, changed, mask=mask), OUTPUT, shape=x.shape)
        kept = ~mask[:, 0, 0, :]  # (B, T): tokens that are not padding
        tol = ctx.tolerance("property")
        if not torch.allclose(out[kept], out2[kept], rtol=tol.rtol, atol=tol.atol):
            fail(bilingual("Token yang tidak di-padding berubah ketika token padding diubah: mask tidak "
                           "sampai ke attention.",
                           "Tokens that are not padding change when padding tokens change: the mask "
                           "does not reach the attention."))
        with torch.no_grad():
            expected = ref(x, mask=mask)
        ctx.expect_close(out, expected, bilingual("Keluaran bermask", "The masked output"))


def _permute(x):
    return x[:, PERMUTATION]


@check("enc.permutation_equivariance", assignment="encoder", target=ENC, category="permutation_equivariance",
       points=2, needs=("enc.construct",),
       title=bilingual("Tanpa positional encoding, blok setara-permutasi",
                       "Without positional encoding the block is permutation-equivariant"),
       hint=bilingual("Blok encoder tidak boleh memakai posisi token (tanpa mask kausal, tanpa positional "
                      "encoding di dalam blok): block(x[:, p]) harus sama dengan block(x)[:, p].",
                      "The encoder block must not use token positions (no causal mask, no positional "
                      "encoding inside the block): block(x[:, p]) must equal block(x)[:, p]."))
def enc_permutation_equivariance(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    tol = ctx.tolerance("property")
    for prenorm in (False, True):
        obj, _ = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        out = ctx.tensor(block_output(ctx, obj, x), OUTPUT, shape=x.shape)
        ctx.expect_nontrivial(out, x)
        out_permuted = ctx.tensor(block_output(ctx, obj, _permute(x)), OUTPUT, shape=x.shape)
        if not torch.allclose(out_permuted, _permute(out), rtol=tol.rtol, atol=tol.atol):
            fail(bilingual(f"prenorm={prenorm}: mengacak urutan token mengubah hasil lebih dari sekadar "
                           "urutannya.",
                           f"prenorm={prenorm}: shuffling the tokens changes the result beyond "
                           "its order."))


@check("enc.pe_breaks_equivariance", assignment="encoder", target=ENC, category="permutation_equivariance",
       points=1, needs=("enc.construct",),
       title=bilingual("Dengan positional encoding, urutan token berpengaruh",
                       "With positional encoding the order of tokens matters"),
       hint=bilingual("Keluaran blok harus bergantung pada masukannya; setelah x + PE, mengacak token "
                      "harus mengubah hasil.",
                      "The block's output must depend on its input; after x + PE, shuffling the tokens "
                      "must change the result."))
def enc_pe_breaks_equivariance(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    pe = ctx.reference.positional_encoding(5, ctx.chapter.d_model)
    obj, _ = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter))
    out = ctx.tensor(block_output(ctx, obj, x + pe), OUTPUT, shape=x.shape)
    ctx.expect_nontrivial(out, x + pe)
    out_permuted = ctx.tensor(block_output(ctx, obj, _permute(x) + pe), OUTPUT, shape=x.shape)
    if torch.allclose(out_permuted, _permute(out), atol=1e-4):
        fail(bilingual("Setelah positional encoding ditambahkan, mengacak token seharusnya tidak lagi "
                       "hanya mengacak keluaran; blok Anda tampaknya mengabaikan isi masukannya.",
                       "After adding positional encoding, shuffling the tokens should no longer just "
                       "shuffle the output; your block seems to ignore what its input holds."))


@check("enc.float64", assignment="encoder", target=ENC, category="dtype", points=1, needs=("enc.construct",),
       title=bilingual("Bekerja setelah .double()", "Works after .double()"),
       hint=bilingual("Jangan menetapkan dtype di dalam blok.", "Do not hard-code a dtype inside the block."))
def enc_float64(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model, dtype=torch.float64)
    for prenorm in (False, True):
        obj64, ref64 = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm,
                                                    dtype="float64")
        obj32, ref32 = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        with torch.no_grad():
            expect_float64(ctx, block_output(ctx, obj64, x), block_output(ctx, obj32, x.float()),
                           ref64(x), ref32(x.float()), OUTPUT)


@check("enc.hidden_config", assignment="encoder", target=ENC, category="hidden_config", points=2,
       needs=("enc.construct",), title=bilingual("Benar pada ukuran lain (tersembunyi)",
                                                 "Correct on other (hidden) sizes"),
       hint=bilingual("Jangan menulis ukuran secara tetap; satu blok harus bisa dipakai untuk panjang "
                      "urutan berbeda.",
                      "Do not hard-code sizes; one block must work for different sequence lengths."))
def enc_hidden_config(ctx):
    sizes = ctx.hidden
    for prenorm in (False, True):
        obj, ref = ctx.with_reference_sublayers(ENC, *enc_args(sizes), prenorm=prenorm)
        for length in (sizes.length, sizes.decoder_length):
            x = ctx.randn(sizes.batch, length, sizes.d_model)
            with torch.no_grad():
                expected = ref(x)
            ctx.expect_close(block_output(ctx, obj, x), expected, OUTPUT)


@check("enc.gradient_flow", assignment="encoder", target=ENC, category="gradient_flow", points=1,
       needs=("enc.construct",),
       title=bilingual("Gradien mengalir melalui blok", "Gradients flow through the block"),
       hint=bilingual("Jangan memutus graf komputasi (`.detach()`, `.data`, `torch.no_grad()`) di "
                      "forward blok.",
                      "Do not cut the computation graph (`.detach()`, `.data`, `torch.no_grad()`) in the "
                      "block's forward."))
def enc_gradient_flow(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        obj, _ = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        expect_gradients_consistent(ctx, obj, (x,), ctx.randn(*x.shape))


@check("enc.batch_independence", assignment="encoder", target=ENC, category="batch_independence", points=1,
       needs=("enc.construct",), title=bilingual("Item batch saling bebas", "Batch items are independent"),
       hint=bilingual("Normalisasi dan penjumlahan harus per token, bukan lintas batch.",
                      "Normalisation and sums must be per token, not across the batch."))
def enc_batch_independence(ctx):
    for prenorm in (False, True):
        obj, _ = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        expect_batch_independent(ctx, obj, (ctx.randn(3, 5, ctx.chapter.d_model),))


@check("enc.no_inplace", assignment="encoder", target=ENC, category="api", points=1, needs=("enc.construct",),
       title=bilingual("Masukan tidak diubah", "The input is not modified"),
       hint=bilingual("Jangan menulis `x += ...` pada masukan; buat tensor baru (`h = x + ...`).",
                      "Do not write `x += ...` on the input; make a new tensor (`h = x + ...`)."))
def enc_no_inplace(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        obj, _ = ctx.with_reference_sublayers(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        expect_inputs_untouched(ctx, obj, (x,))


@check("enc.device_agnostic", assignment="encoder", target=ENC, category="device_agnostic", points=1,
       needs=("enc.construct",), title=bilingual("Tidak terikat pada satu device", "Not tied to one device"),
       hint=bilingual("Tensor baru di forward harus dibuat di device masukan.",
                      "New tensors in forward must be created on the input's device."))
def enc_device_agnostic(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        expect_runs_on_meta(ctx, ENC, (*enc_args(ctx.chapter), prenorm), (x,))
