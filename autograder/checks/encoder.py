"""Checks of the encoder assignment: positional encoding, the feed-forward network and
the encoder block (post-LN and pre-LN)."""

import torch
import torch.nn.functional as F

from autograder.checks.common import (
    expect_batch_independent, expect_float64, expect_gradient_flow, expect_gradients_consistent,
    expect_inputs_untouched,
    expect_param_count, expect_present, expect_runs_on_meta, first_output,
)
from autograder.checks.context import SUBLAYERS
from autograder.checks.registry import OUTPUT, check, fail, text

E = "encoder"
PE, FFN, ENC = "positional_encoding", "FeedForward", "EncoderBlock"

# -- positional_encoding ---------------------------------------------------------------------
HINT_PE = text(
    "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) dan PE[pos, 2i+1] = cos(sudut yang sama): "
    "kolom genap sinus, kolom ganjil kosinus, dan pasangan kolom (2i, 2i+1) memakai sudut yang "
    "sama. Kembalikan tensor float32 berbentuk (length, d_model).",
    "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) and PE[pos, 2i+1] = cos(the same angle): even "
    "columns are sines, odd columns cosines, and the column pair (2i, 2i+1) shares one angle. "
    "Return a float32 tensor of shape (length, d_model).")


@check("pe.present", assignment=E, target=PE, category="api", points=1,
       title=text("Fungsi positional_encoding(length, d_model) ada",
                  "Function positional_encoding(length, d_model) exists"), hint=HINT_PE)
def pe_present(ctx):
    expect_present(ctx, PE, "function", 2, signature="positional_encoding(length, d_model)")


@check("pe.shape", assignment=E, target=PE, category="shape", points=1, needs=("pe.present",),
       title=text("Bentuk (length, d_model)", "Shape (length, d_model)"), hint=HINT_PE)
def pe_shape(ctx):
    for length, d_model in ((ctx.chapter.length, ctx.chapter.d_model), (11, ctx.hidden.d_model)):
        pe = ctx.tensor(ctx.call(PE, length, d_model), f"positional_encoding({length}, {d_model})",
                        shape=(length, d_model))
        ctx.expect_nontrivial(pe)


@check("pe.dtype", assignment=E, target=PE, category="dtype", points=1, needs=("pe.present",),
       title=text("Bertipe float32", "Has dtype float32"), hint=HINT_PE)
def pe_dtype(ctx):
    ctx.tensor(ctx.call(PE, 6, ctx.chapter.d_model), "positional_encoding(6, 16)", dtype=torch.float32)


def _pe_variants(length, d_model):
    """Typical wrong encodings, to name the bug."""
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    index = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / 10000 ** (index / d_model)
    swapped = torch.zeros(length, d_model, dtype=torch.float64)
    swapped[:, 0::2], swapped[:, 1::2] = torch.cos(angle), torch.sin(angle)
    halves = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)
    return [
        (swapped, text("sin dan cos tertukar (kolom genap harus sinus)",
                       "sin and cos are swapped (even columns must be sines)")),
        (halves, text("sinus dan kosinus ditaruh sebagai dua blok, bukan berselang-seling",
                      "sines and cosines are laid out as two blocks instead of interleaved")),
    ]


def _expect_pe_values(ctx, length, d_model):
    pe = ctx.tensor(ctx.call(PE, length, d_model), f"positional_encoding({length}, {d_model})",
                    shape=(length, d_model))
    expected = ctx.reference.positional_encoding(length, d_model)
    if not ctx.close(pe.double(), expected.double(), "positional_encoding"):
        for variant, label in _pe_variants(length, d_model):
            if torch.allclose(pe.double(), variant, atol=1e-4):
                fail(text(f"Nilai positional encoding: {label['id']}.",
                          f"Positional encoding values: {label['en']}."))
        ctx.expect_close(pe.double(), expected.double(), text("Nilai positional encoding",
                         "The positional encoding values"), "positional_encoding")


@check("pe.values", assignment=E, target=PE, category="numeric_vs_reference", points=3,
       needs=("pe.shape",), title=text("Nilai sinus-kosinus benar", "Correct sine/cosine values"),
       hint=HINT_PE)
def pe_values(ctx):
    _expect_pe_values(ctx, 50, ctx.chapter.d_model)


@check("pe.hidden_config", assignment=E, target=PE, category="hidden_config", points=1,
       needs=("pe.shape",), title=text("Benar pada ukuran lain (tersembunyi)", "Correct on other (hidden) sizes"),
       hint=text("Jangan menulis panjang atau d_model secara tetap.", "Do not hard-code the length or d_model."))
def pe_hidden_config(ctx):
    _expect_pe_values(ctx, ctx.hidden.length * 3, ctx.hidden.d_model)


# -- FeedForward --------------------------------------------------------------------------------
HINT_FFN = text(
    "FeedForward: l1 = nn.Linear(d_model, d_ff), lalu GELU eksak (F.gelu atau nn.GELU() tanpa "
    "approximate='tanh'), lalu l2 = nn.Linear(d_ff, d_model); diterapkan pada tiap token.",
    "FeedForward: l1 = nn.Linear(d_model, d_ff), then the exact GELU (F.gelu or nn.GELU() without "
    "approximate='tanh'), then l2 = nn.Linear(d_ff, d_model); applied to every token.")


def _ffn_variants(ref, x):
    hidden = ref.l1(x)
    return [
        (ref.l2(torch.relu(hidden)), text("ReLU, bukan GELU", "ReLU instead of GELU")),
        (ref.l2(F.gelu(hidden, approximate="tanh")),
         text("GELU pendekatan tanh, bukan GELU eksak (erf)",
              "the tanh-approximated GELU instead of the exact (erf) GELU")),
        (ref.l2(hidden), text("tanpa fungsi aktivasi", "no activation function")),
    ]


@check("ffn.present", assignment=E, target=FFN, category="api", points=1,
       title=text("Class FeedForward(nn.Module) ada", "Class FeedForward(nn.Module) exists"), hint=HINT_FFN)
def ffn_present(ctx):
    expect_present(ctx, FFN, "module", 2, 1, signature="FeedForward(d_model, d_ff); forward(x)")


@check("ffn.construct", assignment=E, target=FFN, category="api", points=1, needs=("ffn.present",),
       title=text("Dapat dibuat; punya l1 dan l2", "Can be built; has l1 and l2"), hint=HINT_FFN)
def ffn_construct(ctx):
    obj = ctx.new(FFN, ctx.chapter.d_model, ctx.chapter.d_ff)
    missing = [n for n in ("l1", "l2") if obj.modules.get(n) != "Linear"]
    if missing:
        fail(text(f"Sub-modul nn.Linear berikut tidak ditemukan: {', '.join(missing)}.",
                  f"These nn.Linear sub-modules are missing: {', '.join(missing)}."))


def ffn_shapes(d_model, d_ff, prefix=""):
    return {f"{prefix}l1.weight": (d_ff, d_model), f"{prefix}l1.bias": (d_ff,),
            f"{prefix}l2.weight": (d_model, d_ff), f"{prefix}l2.bias": (d_model,)}


@check("ffn.param_count", assignment=E, target=FFN, category="param_count", points=1,
       needs=("ffn.construct",), title=text("Jumlah parameter (1072 untuk 16/32)",
                                            "Parameter count (1072 for 16/32)"),
       hint=text("(16·32 + 32) + (32·16 + 16) = 1072.", "(16·32 + 32) + (32·16 + 16) = 1072."))
def ffn_param_count(ctx):
    for sizes in (ctx.chapter, ctx.hidden):
        obj = ctx.new(FFN, sizes.d_model, sizes.d_ff)
        expect_param_count(ctx, obj, ffn_shapes(sizes.d_model, sizes.d_ff),
                           f"FeedForward({sizes.d_model}, {sizes.d_ff})")


def _ffn_pieces(ctx, sizes, dtype=None, batch=None, length=None):
    obj, ref = ctx.own(FFN, sizes.d_model, sizes.d_ff, dtype=dtype)
    x = ctx.randn(batch or sizes.batch, length or sizes.length, sizes.d_model, scale=2.0,
                  dtype=torch.float64 if dtype == "float64" else torch.float32)
    return obj, ref, x


@check("ffn.shape", assignment=E, target=FFN, category="shape", points=1, needs=("ffn.construct",),
       title=text("Bentuk keluaran (B, T, D)", "Output shape (B, T, D)"), hint=HINT_FFN)
def ffn_shape(ctx):
    obj = ctx.new(FFN, ctx.chapter.d_model, ctx.chapter.d_ff)
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    out = ctx.tensor(ctx.call(obj, x), OUTPUT, shape=(2, 5, ctx.chapter.d_model))
    ctx.expect_nontrivial(out, x)


def _expect_ffn_close(ctx, out, ref, x, tolerance="float32"):
    expected = ref(x)
    ctx.tensor(out, OUTPUT, shape=expected.shape)
    if not ctx.close(out, expected, tolerance):
        for variant, label in _ffn_variants(ref, x):
            if torch.allclose(out.double(), variant.double(), atol=1e-6, rtol=1e-5):
                fail(text(f"Keluaran Anda cocok dengan FeedForward yang memakai {label['id']}.",
                          f"Your output matches a FeedForward that uses {label['en']}."))
    ctx.expect_close(out, expected, OUTPUT, tolerance)


@check("ffn.numeric", assignment=E, target=FFN, category="numeric_vs_reference", points=3,
       needs=("ffn.shape",), title=text("Nilai sama dengan solusi acuan", "Values match the reference"),
       hint=HINT_FFN)
def ffn_numeric(ctx):
    obj, ref, x = _ffn_pieces(ctx, ctx.chapter)
    _expect_ffn_close(ctx, ctx.call(obj, x), ref, x)


@check("ffn.float64", assignment=E, target=FFN, category="dtype", points=1, needs=("ffn.shape",),
       title=text("Bekerja setelah .double()", "Works after .double()"),
       hint=text("Jangan menetapkan dtype di dalam modul.", "Do not hard-code a dtype inside the module."))
def ffn_float64(ctx):
    obj64, ref64, x = _ffn_pieces(ctx, ctx.chapter, dtype="float64")
    obj32, ref32, _ = _ffn_pieces(ctx, ctx.chapter)
    with torch.no_grad():
        expect_float64(ctx, ctx.call(obj64, x), ctx.call(obj32, x.float()), ref64(x),
                       ref32(x.float()), OUTPUT)


@check("ffn.hidden_config", assignment=E, target=FFN, category="hidden_config", points=1,
       needs=("ffn.shape",), title=text("Benar pada ukuran lain (tersembunyi)", "Correct on other (hidden) sizes"),
       hint=text("Pakai d_model dan d_ff dari argumen, jangan angka tetap.",
                 "Use d_model and d_ff from the arguments, not fixed numbers."))
def ffn_hidden_config(ctx):
    obj, ref, x = _ffn_pieces(ctx, ctx.hidden)
    for inputs in (x, x[:1, :3]):
        _expect_ffn_close(ctx, ctx.call(obj, inputs), ref, inputs)


@check("ffn.gradient_flow", assignment=E, target=FFN, category="gradient_flow", points=1,
       needs=("ffn.shape",), title=text("Gradien sampai ke semua parameter", "Gradients reach every parameter"),
       hint=text("Jangan memutus graf komputasi di forward.", "Do not cut the computation graph in forward."))
def ffn_gradient_flow(ctx):
    obj, _, x = _ffn_pieces(ctx, ctx.chapter)
    expect_gradient_flow(ctx, obj, (x,), ctx.randn(*x.shape), inputs=(0,))


@check("ffn.batch_independence", assignment=E, target=FFN, category="batch_independence", points=1,
       needs=("ffn.shape",), title=text("Item batch saling bebas", "Batch items are independent"),
       hint=HINT_FFN)
def ffn_batch_independence(ctx):
    obj, _, x = _ffn_pieces(ctx, ctx.chapter, batch=3)
    expect_batch_independent(ctx, obj, (x,))


@check("ffn.no_inplace", assignment=E, target=FFN, category="api", points=1, needs=("ffn.shape",),
       title=text("Masukan tidak diubah", "The input is not modified"),
       hint=text("Jangan mengubah x di tempat.", "Do not modify x in place."))
def ffn_no_inplace(ctx):
    obj, _, x = _ffn_pieces(ctx, ctx.chapter)
    expect_inputs_untouched(ctx, obj, (x,))


@check("ffn.device_agnostic", assignment=E, target=FFN, category="device_agnostic", points=1,
       needs=("ffn.shape",), title=text("Tidak terikat pada satu device", "Not tied to one device"),
       hint=text("Tensor baru di forward harus dibuat di device masukan.",
                 "New tensors in forward must be created on the input's device."))
def ffn_device_agnostic(ctx):
    d, f = ctx.chapter.d_model, ctx.chapter.d_ff
    expect_runs_on_meta(ctx, FFN, (d, f), (ctx.randn(2, 5, d),))


# -- EncoderBlock -----------------------------------------------------------------------------
HINT_POST = text(
    "Post-LN (prenorm=False): h = ln1(x + attn(x, x, x, mask)[0]); keluaran = ln2(h + ffn(h)).",
    "Post-LN (prenorm=False): h = ln1(x + attn(x, x, x, mask)[0]); output = ln2(h + ffn(h)).")
HINT_PRE = text(
    "Pre-LN (prenorm=True): n = ln1(x); h = x + attn(n, n, n, mask)[0]; keluaran = h + ffn(ln2(h)).",
    "Pre-LN (prenorm=True): n = ln1(x); h = x + attn(n, n, n, mask)[0]; output = h + ffn(ln2(h)).")
HINT_BLOCK = text(HINT_POST["id"] + " " + HINT_PRE["id"], HINT_POST["en"] + " " + HINT_PRE["en"])
PERMUTATION = [3, 0, 4, 1, 2]


def enc_args(sizes):
    return sizes.d_model, sizes.num_heads, sizes.d_ff


def block_output(ctx, obj, *args, **kwargs):
    return first_output(ctx, ctx.call(obj, *args, **kwargs), OUTPUT)


@check("enc.present", assignment=E, target=ENC, category="api", points=1,
       title=text("Class EncoderBlock(nn.Module) ada", "Class EncoderBlock(nn.Module) exists"),
       hint=text("`class EncoderBlock(nn.Module)` dengan `__init__(self, d_model, num_heads, d_ff, "
                 "prenorm=False)` dan `forward(self, x, mask=None)`.",
                 "`class EncoderBlock(nn.Module)` with `__init__(self, d_model, num_heads, d_ff, "
                 "prenorm=False)` and `forward(self, x, mask=None)`."))
def enc_present(ctx):
    expect_present(ctx, ENC, "module", 3, 1, keywords=("prenorm",), forward_keywords=("mask",),
                   defaults=("prenorm", "mask"),
                   signature="EncoderBlock(d_model, num_heads, d_ff, prenorm=False); forward(x, mask=None)")


@check("enc.construct", assignment=E, target=ENC, category="api", points=1, needs=("enc.present",),
       title=text("Dapat dibuat; punya attn, ffn, ln1, ln2", "Can be built; has attn, ffn, ln1, ln2"),
       hint=text("Buat self.attn = MultiHeadAttention(...), self.ffn = FeedForward(...), "
                 "self.ln1 dan self.ln2 = nn.LayerNorm(d_model) — dua LayerNorm terpisah.",
                 "Create self.attn = MultiHeadAttention(...), self.ffn = FeedForward(...), "
                 "self.ln1 and self.ln2 = nn.LayerNorm(d_model) — two separate LayerNorms."))
def enc_construct(ctx):
    for prenorm in (False, True):
        obj = ctx.new(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        missing = [n for n in ("attn", "ffn") if n not in obj.modules]
        missing += [n for n in ("ln1", "ln2") if obj.modules.get(n) != "LayerNorm"]
        if missing:
            fail(text(f"Sub-modul berikut tidak ditemukan: {', '.join(missing)}.",
                      f"These sub-modules are missing: {', '.join(missing)}."))


def _mha_shapes(d, prefix):
    return {f"{prefix}{n}.{p}": ((d, d) if p == "weight" else (d,))
            for n in ("wq", "wk", "wv", "wo") for p in ("weight", "bias")}


def layernorm_shapes(d, *names):
    return {f"{n}.{p}": (d,) for n in names for p in ("weight", "bias")}


@check("enc.param_count", assignment=E, target=ENC, category="param_count", points=2,
       needs=("enc.construct",), title=text("Jumlah parameter (2224 untuk 16/4/32)",
                                            "Parameter count (2224 for 16/4/32)"),
       hint=text("1088 (attention) + 1072 (FFN) + 64 (dua LayerNorm) = 2224.",
                 "1088 (attention) + 1072 (FFN) + 64 (two LayerNorms) = 2224."))
def enc_param_count(ctx):
    for sizes in (ctx.chapter, ctx.hidden):
        obj = ctx.new(ENC, *enc_args(sizes))
        shapes = {**_mha_shapes(sizes.d_model, "attn."), **ffn_shapes(sizes.d_model, sizes.d_ff, "ffn."),
                  **layernorm_shapes(sizes.d_model, "ln1", "ln2")}
        expect_param_count(ctx, obj, shapes, "EncoderBlock({}, {}, {})".format(*enc_args(sizes)))


@check("enc.shape", assignment=E, target=ENC, category="shape", points=1, needs=("enc.construct",),
       title=text("Bentuk (B, T, D); dua blok bertumpuk juga", "Shape (B, T, D); two stacked blocks too"),
       hint=text("forward mengembalikan satu tensor (B, T, D), sehingga blok bisa ditumpuk dengan "
                 "nn.Sequential.",
                 "forward returns a single (B, T, D) tensor, so blocks can be stacked with nn.Sequential."))
def enc_shape(ctx):
    d = ctx.chapter.d_model
    x = ctx.randn(2, 5, d)
    for prenorm in (False, True):
        obj, _ = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        out = ctx.tensor(ctx.call(obj, x), OUTPUT, shape=(2, 5, d))
        ctx.expect_nontrivial(out, x)
    stacked = ctx.new(ENC, *enc_args(ctx.chapter), repeat=2, proxies=SUBLAYERS)
    ctx.tensor(ctx.call(stacked, x), text("Keluaran dua blok bertumpuk", "The output of two stacked blocks"),
               shape=(2, 5, d))


def _diagnose_block(ctx, out, x, prenorm, ref):
    """Name a swapped LN variant when the output matches the other one."""
    other = ctx.reference_instance(ENC, *enc_args(ctx.chapter), prenorm=not prenorm)
    other.load_state_dict(ref.state_dict())
    with torch.no_grad():
        expected_other = other(x)
    if out.shape == expected_other.shape and torch.allclose(out, expected_other, atol=1e-5):
        wanted = "pre-LN" if prenorm else "post-LN"
        got = "post-LN" if prenorm else "pre-LN"
        fail(text(f"Dengan prenorm={prenorm} blok Anda menghitung {got}, padahal seharusnya {wanted}.",
                  f"With prenorm={prenorm} your block computes {got}, but it should be {wanted}."))


def _expect_wiring(ctx, prenorm):
    obj, ref = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    out = block_output(ctx, obj, x)
    with torch.no_grad():
        expected = ref(x)
    ctx.tensor(out, OUTPUT, shape=expected.shape)
    if not ctx.close(out, expected):
        _diagnose_block(ctx, out, x, prenorm, ref)
    ctx.expect_close(out, expected, OUTPUT)


@check("enc.postln_wiring", assignment=E, target=ENC, category="numeric_vs_reference", points=3,
       needs=("enc.construct",), title=text("Susunan post-LN (prenorm=False) benar",
                                            "Post-LN wiring (prenorm=False) is correct"), hint=HINT_POST)
def enc_postln_wiring(ctx):
    _expect_wiring(ctx, prenorm=False)


@check("enc.preln_wiring", assignment=E, target=ENC, category="numeric_vs_reference", points=3,
       needs=("enc.construct",), title=text("Susunan pre-LN (prenorm=True) benar",
                                            "Pre-LN wiring (prenorm=True) is correct"), hint=HINT_PRE)
def enc_preln_wiring(ctx):
    _expect_wiring(ctx, prenorm=True)


@check("enc.integration", assignment=E, target=ENC, category="numeric_vs_reference", points=2,
       needs=("enc.construct",), title=text("Blok utuh dengan sub-layer Anda sendiri",
                                            "The whole block with your own sub-layers"),
       hint=text("Blok lengkap (MultiHeadAttention dan FeedForward Anda sendiri) harus sama dengan "
                 "solusi acuan. Jika pemeriksaan susunan lulus tetapi ini tidak, kesalahannya ada di "
                 "sub-layer — lihat pemeriksaan sub-layer tersebut.",
                 "The complete block (with your own MultiHeadAttention and FeedForward) must match "
                 "the reference. If the wiring checks pass but this one fails, the bug is in a "
                 "sub-layer — see that sub-layer's checks."))
def enc_integration(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        obj, ref = ctx.own(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        with torch.no_grad():
            expected = ref(x)
        ctx.expect_close(block_output(ctx, obj, x), expected, OUTPUT)


@check("enc.layernorm_stats", assignment=E, target=ENC, category="layernorm_stats", points=1,
       needs=("enc.construct",), title=text("Post-LN: tiap token rata-rata 0, simpangan baku 1",
                                            "Post-LN: every token has mean 0, std 1"), hint=HINT_POST)
def enc_layernorm_stats(ctx):
    obj, _ = ctx.wired(ENC, *enc_args(ctx.chapter), randomize_layernorm=False)  # default: post-LN
    x = ctx.randn(2, 5, ctx.chapter.d_model, scale=3.0)
    out = ctx.tensor(block_output(ctx, obj, x), OUTPUT, shape=x.shape)
    ctx.expect_nontrivial(out, x)
    mean, std = out.double().mean(-1), out.double().std(-1, unbiased=False)
    if not (torch.allclose(mean, torch.zeros_like(mean), atol=1e-4)
            and torch.allclose(std, torch.ones_like(std), atol=1e-3)):
        fail(text(f"Keluaran post-LN (prenorm bawaan) harus ternormalisasi per token; ditemukan "
                  f"rata-rata hingga {mean.abs().max():.3g} dan simpangan baku {std.min():.3g}–"
                  f"{std.max():.3g}. LayerNorm terakhir harus diterapkan pada h + ffn(h), dan "
                  "prenorm harus bawaannya False.",
                  f"The post-LN output (default prenorm) must be normalised per token; found means "
                  f"up to {mean.abs().max():.3g} and std {std.min():.3g}–{std.max():.3g}. The last "
                  "LayerNorm must be applied to h + ffn(h), and prenorm must default to False."))


@check("enc.masking", assignment=E, target=ENC, category="masking", points=2, needs=("enc.construct",),
       title=text("Mask diteruskan ke attention", "The mask is passed on to attention"),
       hint=text("Teruskan `mask` dari forward(x, mask) ke self.attn(..., mask).",
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
        obj, ref = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        out = ctx.tensor(block_output(ctx, obj, x, mask=mask), OUTPUT, shape=x.shape)
        ctx.expect_nontrivial(out, x)
        out2 = ctx.tensor(block_output(ctx, obj, changed, mask=mask), OUTPUT, shape=x.shape)
        kept = ~mask[:, 0, 0, :]  # (B, T): tokens that are not padding
        tol = ctx.tolerance("property")
        if not torch.allclose(out[kept], out2[kept], rtol=tol.rtol, atol=tol.atol):
            fail(text("Token yang tidak di-padding berubah ketika token padding diubah: mask tidak "
                      "sampai ke attention.",
                      "Tokens that are not padding change when padding tokens change: the mask "
                      "does not reach the attention."))
        with torch.no_grad():
            expected = ref(x, mask=mask)
        ctx.expect_close(out, expected, text("Keluaran bermask", "The masked output"))


def _permute(x):
    return x[:, PERMUTATION]


@check("enc.permutation_equivariance", assignment=E, target=ENC, category="permutation_equivariance",
       points=2, needs=("enc.construct",),
       title=text("Tanpa positional encoding, blok setara-permutasi",
                  "Without positional encoding the block is permutation-equivariant"),
       hint=text("Blok encoder tidak boleh memakai posisi token (tanpa mask kausal, tanpa positional "
                 "encoding di dalam blok): block(x[:, p]) harus sama dengan block(x)[:, p].",
                 "The encoder block must not use token positions (no causal mask, no positional "
                 "encoding inside the block): block(x[:, p]) must equal block(x)[:, p]."))
def enc_permutation_equivariance(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    tol = ctx.tolerance("property")
    for prenorm in (False, True):
        obj, _ = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        out = ctx.tensor(block_output(ctx, obj, x), OUTPUT, shape=x.shape)
        ctx.expect_nontrivial(out, x)
        out_permuted = ctx.tensor(block_output(ctx, obj, _permute(x)), OUTPUT, shape=x.shape)
        if not torch.allclose(out_permuted, _permute(out), rtol=tol.rtol, atol=tol.atol):
            fail(text(f"prenorm={prenorm}: mengacak urutan token mengubah hasil lebih dari sekadar "
                      "urutannya.",
                      f"prenorm={prenorm}: shuffling the tokens changes the result beyond "
                      "its order."))


@check("enc.pe_breaks_equivariance", assignment=E, target=ENC, category="permutation_equivariance",
       points=1, needs=("enc.construct",),
       title=text("Dengan positional encoding, urutan token berpengaruh",
                  "With positional encoding the order of tokens matters"),
       hint=text("Keluaran blok harus bergantung pada masukannya; setelah x + PE, mengacak token "
                 "harus mengubah hasil.",
                 "The block's output must depend on its input; after x + PE, shuffling the tokens "
                 "must change the result."))
def enc_pe_breaks_equivariance(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    pe = ctx.reference.positional_encoding(5, ctx.chapter.d_model)
    obj, _ = ctx.wired(ENC, *enc_args(ctx.chapter))
    out = ctx.tensor(block_output(ctx, obj, x + pe), OUTPUT, shape=x.shape)
    ctx.expect_nontrivial(out, x + pe)
    out_permuted = ctx.tensor(block_output(ctx, obj, _permute(x) + pe), OUTPUT, shape=x.shape)
    if torch.allclose(out_permuted, _permute(out), atol=1e-4):
        fail(text("Setelah positional encoding ditambahkan, mengacak token seharusnya tidak lagi "
                  "hanya mengacak keluaran; blok Anda tampaknya mengabaikan isi masukannya.",
                  "After adding positional encoding, shuffling the tokens should no longer just "
                  "shuffle the output; your block seems to ignore what its input holds."))


@check("enc.float64", assignment=E, target=ENC, category="dtype", points=1, needs=("enc.construct",),
       title=text("Bekerja setelah .double()", "Works after .double()"),
       hint=text("Jangan menetapkan dtype di dalam blok.", "Do not hard-code a dtype inside the block."))
def enc_float64(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model, dtype=torch.float64)
    for prenorm in (False, True):
        obj64, ref64 = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm, dtype="float64")
        obj32, ref32 = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        with torch.no_grad():
            expect_float64(ctx, block_output(ctx, obj64, x), block_output(ctx, obj32, x.float()),
                           ref64(x), ref32(x.float()), OUTPUT)


@check("enc.hidden_config", assignment=E, target=ENC, category="hidden_config", points=2,
       needs=("enc.construct",), title=text("Benar pada ukuran lain (tersembunyi)",
                                            "Correct on other (hidden) sizes"),
       hint=text("Jangan menulis ukuran secara tetap; satu blok harus bisa dipakai untuk panjang "
                 "urutan berbeda.",
                 "Do not hard-code sizes; one block must work for different sequence lengths."))
def enc_hidden_config(ctx):
    sizes = ctx.hidden
    for prenorm in (False, True):
        obj, ref = ctx.wired(ENC, *enc_args(sizes), prenorm=prenorm)
        for length in (sizes.length, sizes.decoder_length):
            x = ctx.randn(sizes.batch, length, sizes.d_model)
            with torch.no_grad():
                expected = ref(x)
            ctx.expect_close(block_output(ctx, obj, x), expected, OUTPUT)


@check("enc.gradient_flow", assignment=E, target=ENC, category="gradient_flow", points=1,
       needs=("enc.construct",), title=text("Gradien mengalir melalui blok", "Gradients flow through the block"),
       hint=text("Jangan memutus graf komputasi (`.detach()`, `.data`, `torch.no_grad()`) di forward blok.",
                 "Do not cut the computation graph (`.detach()`, `.data`, `torch.no_grad()`) in the "
                 "block's forward."))
def enc_gradient_flow(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        obj, _ = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        expect_gradients_consistent(ctx, obj, (x,), ctx.randn(*x.shape))


@check("enc.batch_independence", assignment=E, target=ENC, category="batch_independence", points=1,
       needs=("enc.construct",), title=text("Item batch saling bebas", "Batch items are independent"),
       hint=text("Normalisasi dan penjumlahan harus per token, bukan lintas batch.",
                 "Normalisation and sums must be per token, not across the batch."))
def enc_batch_independence(ctx):
    for prenorm in (False, True):
        obj, _ = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        expect_batch_independent(ctx, obj, (ctx.randn(3, 5, ctx.chapter.d_model),))


@check("enc.no_inplace", assignment=E, target=ENC, category="api", points=1, needs=("enc.construct",),
       title=text("Masukan tidak diubah", "The input is not modified"),
       hint=text("Jangan menulis `x += ...` pada masukan; buat tensor baru (`h = x + ...`).",
                 "Do not write `x += ...` on the input; make a new tensor (`h = x + ...`)."))
def enc_no_inplace(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        obj, _ = ctx.wired(ENC, *enc_args(ctx.chapter), prenorm=prenorm)
        expect_inputs_untouched(ctx, obj, (x,))


@check("enc.device_agnostic", assignment=E, target=ENC, category="device_agnostic", points=1,
       needs=("enc.construct",), title=text("Tidak terikat pada satu device", "Not tied to one device"),
       hint=text("Tensor baru di forward harus dibuat di device masukan.",
                 "New tensors in forward must be created on the input's device."))
def enc_device_agnostic(ctx):
    x = ctx.randn(2, 5, ctx.chapter.d_model)
    for prenorm in (False, True):
        expect_runs_on_meta(ctx, ENC, (*enc_args(ctx.chapter), prenorm), (x,))
