"""Checks of the encoder assignment: the encoder block (post-LN and pre-LN).

The block always runs with its own sub-layers (attn, ffn, ln1, ln2). What each check uses:

- wiring (``enc.postln_wiring``, ``enc.preln_wiring``, ``enc.hidden_config``, ``enc.float64``):
  ``attn`` and ``ffn`` are recorded, and the contract's wiring is recomputed here from what they
  returned, with the reference LayerNorm math and the weights copied in: attn gets (x, x, x,
  mask) (post-LN) or ln1(x) three times (pre-LN), ffn gets h, and the output is ln2(h + ffn(h))
  or h + ffn(ln2(h)). A bug inside attn or ffn therefore costs only their own checks and
  ``enc.integration``; ``enc.float64`` asks the same in float64, where the float32 wiring holds;
- ``enc.masking``: the recorded attn call got the block's mask (any form that blocks the same
  positions), and changing padding tokens leaves the other tokens' outputs as they were;
- the whole block against the reference: ``enc.integration`` only;
- properties (``enc.shape``, ``enc.layernorm_stats``, ``enc.permutation_equivariance``,
  ``enc.pe_breaks_equivariance``, ``enc.batch_independence``, ``enc.no_inplace``): the block as
  written;
- ``enc.gradient_flow``: the block as written, its sub-layers recorded to tell a cut in the
  block (a sub-layer called under no_grad, a detached residual) from one inside a sub-layer;
- ``enc.device_agnostic``: the block as written, on the meta device;
- ``enc.sensitivity``, the gate every other check except ``enc.present``, ``enc.construct``,
  ``enc.param_count`` and ``enc.shape`` (which need no output that computes)
  stands behind (registry.py): the block as written, with stand-ins for broken sub-layers; its
  output must respond to x, differ from x plus something fixed, and not be NaN everywhere.

Wherever the block runs with recording, a sub-layer that the block calls with the contract's
shapes but that raises or returns another form (e.g. a FeedForward that forgets l2) hands the
block a check-made stand-in of the right shape instead, so that the block itself can still be
graded. Sub-layers with another parameter layout keep their own parameters (``ctx.block``).
"""

import torch

from autograder.checks.verdicts import (
    expect_mixes_tokens, one_token_changed,
    computes, expect_batch_independent, expect_depends, expect_finite_somewhere,
    expect_gradients_consistent, expect_inputs_untouched, expect_not_identity,
    expect_param_count, expect_present, expect_runs_on_meta, expect_submodules, 
    first_output, HINT_GATE_BLOCK, tensors, X,
)
from autograder.checks.recorded import (
    blocked, expect_heads, layer_norm, only_call, tokenwise_result,
)
from autograder.checks import targets
from autograder.checks.registry import OUTPUT, CheckFailed, check, fail
from autograder.checks.targets import ENC, encoder_parameters
from autograder.texts import bilingual

SUBLAYERS = targets.get(ENC).sublayers

# -- EncoderBlock -----------------------------------------------------------------------------
HINT_POST = bilingual(
    "Post-LN (prenorm=False): h = ln1(x + attn(x, x, x, mask)[0]); keluaran = ln2(h + ffn(h)).",
    "Post-LN (prenorm=False): h = ln1(x + attn(x, x, x, mask)[0]); output = ln2(h + ffn(h)).")
HINT_PRE = bilingual(
    "Pre-LN (prenorm=True): n = ln1(x); h = x + attn(n, n, n, mask)[0]; keluaran = h + ffn(ln2(h)).",
    "Pre-LN (prenorm=True): n = ln1(x); h = x + attn(n, n, n, mask)[0]; output = h + ffn(ln2(h)).")
PERMUTATION = [3, 0, 4, 1, 2]


enc_args = targets.get(ENC).arguments  # the constructor's arguments at a configuration


def block_output(ctx, obj, *args, **kwargs):
    return first_output(ctx, ctx.call(obj, *args, **kwargs), OUTPUT)


def standins(ctx, x, heads, prefix=""):
    """Check-made results for attn and ffn, used only where the block's own one is broken."""
    b, t, d = x.shape
    return {prefix + "attn": [ctx.standin_attention(b, heads, t, t, d, x.dtype)],
            prefix + "ffn": [ctx.standin_tokenwise(x.shape, x.dtype)]}


def _permute(x):
    return x[:, PERMUTATION]


def permute_standins(offered):
    """The same stand-ins for the permuted tokens."""
    attn, ffn = offered["attn"][0], offered["ffn"][0]
    out, weights = attn["result"]
    return {"attn": [{**attn, "result": (_permute(out), weights[:, :, PERMUTATION][..., PERMUTATION])}],
            "ffn": [{**ffn, "result": _permute(ffn["result"])}]}


def block_run(ctx, obj, x, heads, mask=None, offered=None, return_inputs=False, prefix=""):
    """One run of the block on x, its attn and ffn recorded (stand-ins where they are broken),
    for ``ctx.record_many``."""
    return {"target": obj, "args": [x], "kwargs": {} if mask is None else {"mask": mask},
            "modules": (prefix + "attn", prefix + "ffn"), "standins": offered or standins(ctx, x, heads, prefix),
            "return_inputs": return_inputs}


def run_block(ctx, obj, x, heads, mask=None, offered=None, return_inputs=False):
    """The block's result on x and the records of its attn and ffn."""
    return ctx.record_many([block_run(ctx, obj, x, heads, mask, offered, return_inputs)])[0]


def expect_mask_passed(attn, mask, x, heads):
    """attn got the block's mask, in any form that blocks the same positions (a boolean mask of
    another shape that broadcasts the same, an additive float mask; nothing or all-False when
    there is none)."""
    b, t, _ = x.shape
    passed = blocked(attn.attention_arguments()[3], (b, heads, t, t))
    if passed is None or not torch.equal(passed, blocked(mask, (b, heads, t, t))):
        fail(bilingual("Mask tidak diteruskan apa adanya ke self.attn: teruskan `mask` dari "
                       "forward(x, mask) ke self.attn(..., mask).",
                       "The mask does not reach self.attn as it was given: pass `mask` from "
                       "forward(x, mask) on to self.attn(..., mask)."))


def expected_output(ctx, records, ref, x, prenorm, heads, mask=None, tolerance="float32"):
    """The output the contract's wiring gives with the block's own sub-layer results (from the
    records) and the reference LayerNorm math; fails naming the first step that differs."""
    attn = only_call(records, "attn")
    expect_heads(attn, heads, "attn")
    n = layer_norm(x, ref.ln1)
    wanted, other = (n, x) if prenorm else (x, n)
    for slot, value in zip("qkv", attn.attention_arguments()[:3]):
        if not ctx.same(value, wanted, tolerance):
            if ctx.same(value, other, tolerance):
                want, got = ("pre-LN", "post-LN") if prenorm else ("post-LN", "pre-LN")
                fail(bilingual(f"Dengan prenorm={prenorm} blok Anda menghitung {got}, padahal seharusnya "
                               f"{want}.",
                               f"With prenorm={prenorm} your block computes {got}, but it should be {want}."))
            wanted_text = "ln1(x)" if prenorm else "x"
            fail(bilingual(f"Argumen {slot} untuk self.attn bukan {wanted_text}.",
                           f"The {slot} argument of self.attn is not {wanted_text}."))
    expect_mask_passed(attn, mask, x, heads)
    a = ctx.tensor(attn.main, bilingual("Keluaran self.attn", "The output of self.attn"), shape=x.shape)
    h = x + a if prenorm else layer_norm(x + a, ref.ln1)
    wanted = layer_norm(h, ref.ln2) if prenorm else h
    f = tokenwise_result(ctx, records, "ffn", wanted, tolerance)
    if f is None:
        text = "ln2(x + attn(n, n, n, mask)[0])" if prenorm else "ln1(x + attn(x, x, x, mask)[0])"
        fail(bilingual(f"`self.ffn` tidak menerima `{text}`.", f"`self.ffn` does not receive `{text}`."))
    f = ctx.tensor(f, bilingual("Keluaran self.ffn", "The output of self.ffn"), shape=x.shape)
    return h + f if prenorm else layer_norm(h + f, ref.ln2)


def expect_wiring(ctx, obj, ref, x, prenorm, heads, mask=None, tolerance="float32"):
    """Run the block with recording; its output must be the contract's wiring of what its own
    sub-layers returned. Returns (output, expected)."""
    return expect_wired(ctx, run_block(ctx, obj, x, heads, mask), ref, x, prenorm, heads, mask, tolerance)


def expect_wired(ctx, run, ref, x, prenorm, heads, mask=None, tolerance="float32"):
    """``expect_wiring`` for a run already made: (result, records)."""
    result, records = run
    out = first_output(ctx, result, OUTPUT)
    expected = expected_output(ctx, records, ref, x, prenorm, heads, mask, tolerance)
    ctx.tensor(out, OUTPUT, shape=x.shape)
    if not ctx.same(out, expected, tolerance):
        diff = (out.double() - expected.double()).abs().nan_to_num(float("inf")).max().item()
        text = "h + ffn(ln2(h))" if prenorm else "ln2(h + ffn(h))"
        fail(bilingual(f"Keluaran blok bukan {text} dari hasil sub-layernya sendiri (selisih maksimum "
                       f"{diff:.3g}).",
                       f"The block's output is not {text} of what its own sub-layers returned (largest "
                       f"difference {diff:.3g})."))
    return out, expected


@check("enc.present", assignment="encoder", target=ENC, category="api", points=1,
       title=bilingual("Kelas EncoderBlock(nn.Module) tersedia", "Class EncoderBlock(nn.Module) exists"),
       hint=bilingual("`class EncoderBlock(nn.Module)` dengan `__init__(self, d_model, num_heads, d_ff, "
                      "prenorm=False)` dan `forward(self, x, mask=None)`.",
                      "`class EncoderBlock(nn.Module)` with `__init__(self, d_model, num_heads, d_ff, "
                      "prenorm=False)` and `forward(self, x, mask=None)`."))
def enc_present(ctx):
    expect_present(ctx, ENC)


@check("enc.construct", assignment="encoder", target=ENC, category="api", points=1, needs=("enc.present",),
       title=bilingual("Dapat dibuat; punya attn, ffn, ln1, ln2", "Can be built; has attn, ffn, ln1, ln2"),
       hint=bilingual("Buat self.attn = MultiHeadAttention(...), self.ffn = FeedForward(...), "
                      "self.ln1 dan self.ln2 = nn.LayerNorm(d_model) — dua LayerNorm terpisah.",
                      "Create self.attn = MultiHeadAttention(...), self.ffn = FeedForward(...), "
                      "self.ln1 and self.ln2 = nn.LayerNorm(d_model) — two separate LayerNorms."))
def enc_construct(ctx):
    for prenorm in (False, True):
        obj = ctx.new(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        expect_submodules(obj)


@check("enc.sensitivity", assignment="encoder", target=ENC, category="sensitivity", points=0,
       needs=("enc.construct",),
       title=bilingual("Keluaran bergantung pada x, tetapi tidak sama dengan x",
                       "The output depends on x and is not x itself"), hint=HINT_GATE_BLOCK)
def enc_sensitivity(ctx):
    c = ctx.chapter
    x, x2 = ctx.randn(2, 5, c.d_model), ctx.randn(2, 5, c.d_model)
    places, changed = zip(*one_token_changed(x, x2))
    offered = standins(ctx, x, c.num_heads)  # the same stand-ins for every input

    def run():
        for prenorm in (False, True):
            obj, ref = ctx.gate_module(ENC, *enc_args(c), prenorm=prenorm)
            runs = ctx.record_many([block_run(ctx, obj, inputs, c.num_heads, offered=offered)
                                    for inputs in (x, x2, *changed)])
            outs = [tensors(result, 1) for result, _ in runs]
            if None in outs:
                continue  # another form: enc.shape names it
            (out,), (out2,), *outs_changed = outs
            with torch.no_grad():
                reference = ctx.reference_result(ref, x), ctx.reference_result(ref, x2)
                reference_changed = [ctx.reference_result(ref, y) for y in changed]
            expect_finite_somewhere(out, OUTPUT)
            expect_depends(out, out2, OUTPUT, X, reference)
            expect_not_identity(out, x, out2, x2, reference)
            expect_mixes_tokens(out, [o for o, in outs_changed], reference[0], reference_changed, places,
                                [call for _, records in runs[2:] for call in records.of("attn")])
    computes(ctx, run)


@check("enc.param_count", assignment="encoder", target=ENC, category="param_count", points=2,
       reads_hidden=True, needs=("enc.construct",),
       title=bilingual("Jumlah parameter (2224 untuk 16/4/32)",
                       "Parameter count (2224 for 16/4/32)"),
       hint=bilingual("1088 (attention) + 1072 (FFN) + 64 (dua LayerNorm) = 2224.",
                      "1088 (attention) + 1072 (FFN) + 64 (two LayerNorms) = 2224."))
def enc_param_count(ctx):
    for sizes in (ctx.chapter, ctx.hidden):
        obj = ctx.new(ENC, *enc_args(sizes))
        expect_param_count(ctx, obj, encoder_parameters(*enc_args(sizes)), "EncoderBlock({}, {}, {})".format(*enc_args(sizes)))


@check("enc.shape", assignment="encoder", target=ENC, category="shape", points=1,
       needs=("enc.construct",),
       title=bilingual("Bentuk (B, T, D); dua blok bertumpuk juga", "Shape (B, T, D); two stacked blocks too"),
       hint=bilingual("forward mengembalikan satu tensor (B, T, D), sehingga blok bisa ditumpuk dengan "
                      "nn.Sequential.",
                      "forward returns a single (B, T, D) tensor, so blocks can be stacked with "
                      "nn.Sequential."))
def enc_shape(ctx):
    c = ctx.chapter
    x = ctx.randn(2, 5, c.d_model)
    blocks = [ctx.new(ENC, *enc_args(c), prenorm=prenorm) for prenorm in (False, True)]
    stacked = ctx.new(ENC, *enc_args(c), repeat=2)
    offered = {**standins(ctx, x, c.num_heads, "0."), **standins(ctx, x, c.num_heads, "1.")}
    runs = [block_run(ctx, obj, x, c.num_heads) for obj in blocks]
    runs.append({"target": stacked, "args": [x], "modules": ("0.attn", "0.ffn", "1.attn", "1.ffn"),
                 "standins": offered})
    (single, _), (pre, _), (two, _) = ctx.record_many(runs)
    for result in (single, pre):
        ctx.tensor(result, OUTPUT, shape=(2, 5, c.d_model))
    ctx.tensor(two, bilingual("Keluaran dua blok bertumpuk", "The output of two stacked blocks"),
               shape=(2, 5, c.d_model))


def _expect_wiring(ctx, prenorm):
    c = ctx.chapter
    obj, ref = ctx.block(ENC, *enc_args(c), sublayers=SUBLAYERS, prenorm=prenorm)
    expect_wiring(ctx, obj, ref, ctx.randn(2, 5, c.d_model), prenorm, c.num_heads)


@check("enc.postln_wiring", assignment="encoder", target=ENC, category="numeric_vs_reference", points=3,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Susunan post-LN (prenorm=False) benar",
                       "Post-LN wiring (prenorm=False) is correct"), hint=HINT_POST)
def enc_postln_wiring(ctx):
    _expect_wiring(ctx, prenorm=False)


@check("enc.preln_wiring", assignment="encoder", target=ENC, category="numeric_vs_reference", points=3,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Susunan pre-LN (prenorm=True) benar",
                       "Pre-LN wiring (prenorm=True) is correct"), hint=HINT_PRE)
def enc_preln_wiring(ctx):
    _expect_wiring(ctx, prenorm=True)


@check("enc.integration", assignment="encoder", target=ENC, category="numeric_vs_reference", points=2,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Blok utuh dengan sub-layer Anda sendiri",
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
            expected = ctx.reference_result(ref, x)
        ctx.expect_close(block_output(ctx, obj, x), expected, OUTPUT)


@check("enc.layernorm_stats", assignment="encoder", target=ENC, category="layernorm_stats", points=1,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Post-LN: tiap token memiliki rerata ≈ 0 dan simpangan baku ≈ 1",
                       "Post-LN: every token has mean ≈ 0 and std ≈ 1"), hint=HINT_POST)
def enc_layernorm_stats(ctx):
    c = ctx.chapter
    obj = ctx.new(ENC, *enc_args(c))  # default: post-LN; LayerNorms as built (weight 1, bias 0)
    x = ctx.randn(2, 5, c.d_model, scale=3.0)
    out = ctx.tensor(first_output(ctx, run_block(ctx, obj, x, c.num_heads)[0], OUTPUT), OUTPUT, shape=x.shape)
    mean, std = out.double().mean(-1), out.double().std(-1, unbiased=False)
    if not (torch.allclose(mean, torch.zeros_like(mean), atol=1e-4)
            and torch.allclose(std, torch.ones_like(std), atol=1e-3)):
        fail(bilingual(f"Keluaran post-LN (prenorm bawaan) harus ternormalisasi per token; ditemukan "
                       f"rerata hingga {mean.abs().max():.3g} dan simpangan baku {std.min():.3g}–"
                       f"{std.max():.3g}. LayerNorm terakhir harus diterapkan pada h + ffn(h), dan "
                       "prenorm harus bawaannya False.",
                       f"The post-LN output (default prenorm) must be normalised per token; found means "
                       f"up to {mean.abs().max():.3g} and std {std.min():.3g}–{std.max():.3g}. The last "
                       "LayerNorm must be applied to h + ffn(h), and prenorm must default to False."))


@check("enc.masking", assignment="encoder", target=ENC, category="masking", points=2,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Mask diteruskan ke attention", "The mask is passed on to attention"),
       hint=bilingual("Teruskan `mask` dari forward(x, mask) ke self.attn(..., mask).",
                      "Pass `mask` from forward(x, mask) on to self.attn(..., mask)."))
def enc_masking(ctx):
    c = ctx.chapter
    d = c.d_model
    mask = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
    mask[0, ..., 3:] = True
    mask[1, ..., 4:] = True
    x = ctx.randn(2, 5, d)
    changed = x.clone()
    changed[0, 3:] = ctx.randn(2, d, scale=3.0)
    changed[1, 4:] = ctx.randn(1, d, scale=3.0)
    for prenorm in (False, True):
        obj, _ = ctx.block(ENC, *enc_args(c), sublayers=SUBLAYERS, prenorm=prenorm)
        offered = standins(ctx, x, c.num_heads)
        (result, records), (result2, _) = ctx.record_many(
            [block_run(ctx, obj, inputs, c.num_heads, mask, offered) for inputs in (x, changed)])
        first = ctx.tensor(first_output(ctx, result, OUTPUT), OUTPUT, shape=x.shape)
        expect_mask_passed(only_call(records, "attn"), mask, x, c.num_heads)
        again = ctx.tensor(first_output(ctx, result2, OUTPUT), OUTPUT, shape=x.shape)
        kept = ~mask[:, 0, 0, :]  # (B, T): tokens that are not padding
        tol = ctx.tolerance("property")
        if not torch.allclose(first[kept], again[kept], rtol=tol.rtol, atol=tol.atol):
            fail(bilingual("Token yang tidak di-padding berubah ketika token padding diubah: mask tidak "
                           "sampai ke attention.",
                           "Tokens that are not padding change when padding tokens change: the mask "
                           "does not reach the attention."))


@check("enc.permutation_equivariance", assignment="encoder", target=ENC, category="permutation_equivariance",
       points=2, needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Tanpa positional encoding, blok ekuivarian terhadap permutasi",
                       "Without positional encoding the block is permutation-equivariant"),
       hint=bilingual("Blok encoder tidak boleh memakai posisi token (tanpa mask kausal, tanpa positional "
                      "encoding di dalam blok): block(x[:, p]) harus sama dengan block(x)[:, p].",
                      "The encoder block must not use token positions (no causal mask, no positional "
                      "encoding inside the block): block(x[:, p]) must equal block(x)[:, p]."))
def enc_permutation_equivariance(ctx):
    c = ctx.chapter
    x = ctx.randn(2, 5, c.d_model)
    tol = ctx.tolerance("property")
    for prenorm in (False, True):
        obj, _ = ctx.block(ENC, *enc_args(c), sublayers=SUBLAYERS, prenorm=prenorm)
        out, out_permuted = _with_permuted_tokens(ctx, obj, x)
        if not torch.allclose(out_permuted, _permute(out), rtol=tol.rtol, atol=tol.atol):
            fail(bilingual(f"prenorm={prenorm}: mengacak urutan token mengubah hasil lebih dari sekadar "
                           "urutannya.",
                           f"prenorm={prenorm}: shuffling the tokens changes the result beyond "
                           "its order."))


def _with_permuted_tokens(ctx, obj, x, added=0):
    """The block's outputs on x + added and on permute(x) + added, in one request, with the
    same stand-ins, permuted alike."""
    heads = ctx.chapter.num_heads
    offered = standins(ctx, x, heads)
    runs = ctx.record_many([block_run(ctx, obj, x + added, heads, offered=offered),
                            block_run(ctx, obj, _permute(x) + added, heads,
                                      offered=permute_standins(offered))])
    return [ctx.tensor(first_output(ctx, result, OUTPUT), OUTPUT, shape=x.shape) for result, _ in runs]


@check("enc.pe_breaks_equivariance", assignment="encoder", target=ENC, category="permutation_equivariance",
       points=1, needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Dengan positional encoding, urutan token berpengaruh",
                       "With positional encoding the order of tokens matters"),
       hint=bilingual("Keluaran blok harus bergantung pada masukannya; setelah x + PE, mengacak token "
                      "harus mengubah hasil.",
                      "The block's output must depend on its input; after x + PE, shuffling the tokens "
                      "must change the result."))
def enc_pe_breaks_equivariance(ctx):
    c = ctx.chapter
    x = ctx.randn(2, 5, c.d_model)
    pe = ctx.reference.positional_encoding(5, c.d_model)
    obj, _ = ctx.block(ENC, *enc_args(c), sublayers=SUBLAYERS)
    out, out_permuted = _with_permuted_tokens(ctx, obj, x, added=pe)
    if torch.allclose(out_permuted, _permute(out), atol=1e-4):
        fail(bilingual("Setelah positional encoding ditambahkan, mengacak token seharusnya tidak lagi "
                       "hanya mengacak keluaran; blok Anda tampaknya mengabaikan isi masukannya.",
                       "After adding positional encoding, shuffling the tokens should no longer just "
                       "shuffle the output; your block seems to ignore what its input holds."))


@check("enc.float64", assignment="encoder", target=ENC, category="dtype", points=1,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Bekerja setelah .double()", "Works after .double()"),
       hint=bilingual("Jangan menetapkan dtype di dalam blok.", "Do not hard-code a dtype inside the block."))
def enc_float64(ctx):
    c = ctx.chapter
    x = ctx.randn(2, 5, c.d_model, dtype=torch.float64)
    for prenorm in (False, True):
        obj64, ref64 = ctx.block(ENC, *enc_args(c), sublayers=SUBLAYERS, prenorm=prenorm, dtype="float64")
        obj32, ref32 = ctx.block(ENC, *enc_args(c), sublayers=SUBLAYERS, prenorm=prenorm)
        run32, run64 = ctx.record_many([block_run(ctx, obj32, x.float(), c.num_heads),
                                        block_run(ctx, obj64, x, c.num_heads)])
        out32 = ctx.tensor(first_output(ctx, run32[0], OUTPUT), OUTPUT, shape=x.shape)
        try:  # whether the float32 wiring holds (graded by the wiring checks, not here)
            holds32 = ctx.same(out32, expected_output(ctx, run32[1], ref32, x.float(), prenorm, c.num_heads))
        except CheckFailed:
            holds32 = False
        ctx.expect_float64_block(
            out32, holds32,
            lambda: expect_wired(ctx, run64, ref64, x, prenorm, c.num_heads, tolerance="float64")[0],
            lambda: first_output(ctx, run64[0], OUTPUT), OUTPUT)


@check("enc.hidden_config", assignment="encoder", target=ENC, category="hidden_config", points=2,
       reads_hidden=True, needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Benar pada ukuran lain (tersembunyi)",
                       "Correct on other (hidden) sizes"),
       hint=bilingual("Jangan menulis ukuran secara tetap; satu blok harus bisa dipakai untuk panjang "
                      "urutan berbeda.",
                      "Do not hard-code sizes; one block must work for different sequence lengths."))
def enc_hidden_config(ctx):
    sizes = ctx.hidden
    for prenorm in (False, True):
        obj, ref = ctx.block(ENC, *enc_args(sizes), sublayers=SUBLAYERS, prenorm=prenorm)
        inputs = [ctx.randn(sizes.batch, length, sizes.d_model)  # one block, several lengths
                  for length in (sizes.length, sizes.decoder_length)]
        runs = ctx.record_many([block_run(ctx, obj, x, sizes.num_heads) for x in inputs])
        for x, run in zip(inputs, runs):
            expect_wired(ctx, run, ref, x, prenorm, sizes.num_heads)


@check("enc.gradient_flow", assignment="encoder", target=ENC, category="gradient_flow", points=1,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Gradien mengalir melalui blok", "Gradients flow through the block"),
       hint=bilingual("Jangan memutus graf komputasi (`.detach()`, `.data`, `torch.no_grad()`) di "
                      "forward blok.",
                      "Do not cut the computation graph (`.detach()`, `.data`, `torch.no_grad()`) in the "
                      "block's forward."))
def enc_gradient_flow(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        obj, _ = ctx.block(ENC, *enc_args(ctx.chapter), sublayers=SUBLAYERS, prenorm=prenorm)
        expect_gradients_consistent(ctx, obj, (x,), ctx.randn(*x.shape), sublayers=SUBLAYERS)


@check("enc.batch_independence", assignment="encoder", target=ENC, category="batch_independence", points=1,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Item batch saling bebas", "Batch items are independent"),
       hint=bilingual("Normalisasi dan penjumlahan harus per token, bukan lintas batch.",
                      "Normalisation and sums must be per token, not across the batch."))
def enc_batch_independence(ctx):
    c = ctx.chapter
    for prenorm in (False, True):
        obj, _ = ctx.block(ENC, *enc_args(c), sublayers=SUBLAYERS, prenorm=prenorm)
        x = ctx.randn(3, 5, c.d_model)
        offered = standins(ctx, x, c.num_heads)

        def call_many(target, inputs, kwargs):
            runs = [block_run(ctx, target, args[0], c.num_heads, offered=offered) for args in inputs]
            return [result for result, _ in ctx.record_many(runs)]
        expect_batch_independent(ctx, obj, (x,), call_many=call_many)


@check("enc.no_inplace", assignment="encoder", target=ENC, category="inputs_untouched", points=1,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Masukan tidak diubah", "The input is not modified"),
       hint=bilingual("Jangan menulis `x += ...` pada masukan; buat tensor baru (`h = x + ...`).",
                      "Do not write `x += ...` on the input; make a new tensor (`h = x + ...`)."))
def enc_no_inplace(ctx):
    c = ctx.chapter
    x = ctx.randn(2, 5, c.d_model)
    for prenorm in (False, True):
        obj, _ = ctx.block(ENC, *enc_args(c), sublayers=SUBLAYERS, prenorm=prenorm)

        def call(target, x, **kwargs):
            result, records = run_block(ctx, target, x, c.num_heads, return_inputs=True)
            return result, records.inputs_after
        expect_inputs_untouched(ctx, obj, (x,), call=call)


@check("enc.device_agnostic", assignment="encoder", target=ENC, category="device_agnostic", points=1,
       needs=("enc.construct", "enc.sensitivity"),
       title=bilingual("Tidak terikat pada satu perangkat (device)", "Not tied to one device"),
       hint=bilingual("Tensor baru di forward harus dibuat di perangkat (device) yang sama dengan masukan.",
                      "New tensors in forward must be created on the input's device."))
def enc_device_agnostic(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        expect_runs_on_meta(ctx, ENC, (*enc_args(ctx.chapter), prenorm), (x,))
