"""Checks of the attention assignment: multi-head attention.

When the student's MultiHeadAttention calls the module's own ``scaled_dot_product_attention``,
the checks that compare numbers with the reference (``mha.numeric``, ``mha.float64``,
``mha.hidden_config``) record that call and grade what MultiHeadAttention itself does around it:
the queries, keys and values it passes must be wq(q), wk(k), wv(v) split into heads, the mask
must reach it unchanged, and the output must be wo(merged heads of what it returned), with the
weights it returned. A bug inside scaled_dot_product_attention then costs its own checks and
``mha.integration`` (MultiHeadAttention with the student's own attention against the reference),
not these. A MultiHeadAttention that computes attention itself (inline, or with
``F.scaled_dot_product_attention``) is compared with the reference as a whole. The property
checks (rows sum to one, masking, batch independence, gradients, ...) run the module as written.
"""

import torch

from autograder.checks.attention_calls import around_sdpa, expect_attention_computes, sdpa_standin
from autograder.checks.verdicts import (
    computes, expect_batch_independent, expect_blocked_values_ignored, expect_float64,
    expect_float64_precision, expect_gradient_flow, expect_inputs_untouched, expect_masked,
    expect_param_count, expect_present, expect_rows_sum_to_one, expect_runs_on_meta,
    expect_submodules, HINT_GATE, HINT_MASK, padding_mask,
)
from autograder.checks.registry import OUTPUT, WEIGHTS, CheckFailed, check, fail, only_here
from autograder.checks.targets import MHA, SDPA, mha_parameters
from autograder.texts import bilingual

OUTPUT_64 = bilingual("Keluaran (float64)", "The output (float64)")
WEIGHTS_64 = bilingual("Bobot (float64)", "The weights (float64)")

# -- MultiHeadAttention -----------------------------------------------------------------------
HINT_MHA = bilingual(
    "Proyeksikan q, k, v dengan wq, wk, wv; pecah D menjadi H head berukuran d_k = D / H "
    "(view(B, T, H, d_k) lalu transpose(1, 2)); hitung attention per head; gabungkan kembali "
    "(transpose(1, 2).contiguous().view(B, Tq, D)) dan proyeksikan dengan wo.",
    "Project q, k, v with wq, wk, wv; split D into H heads of size d_k = D / H "
    "(view(B, T, H, d_k) then transpose(1, 2)); attend per head; merge the heads back "
    "(transpose(1, 2).contiguous().view(B, Tq, D)) and project with wo.")


def mha_inputs(ctx, d_model, num_heads, batch=2, tq=5, tk=7, dtype=None):
    """A student MHA (its own weights) and q, k, v: enough for property checks."""
    obj = ctx.new(MHA, d_model, num_heads, dtype=dtype)
    tensor_dtype = torch.float64 if dtype == "float64" else torch.float32
    q = ctx.randn(batch, tq, d_model, dtype=tensor_dtype)
    k = ctx.randn(batch, tk, d_model, dtype=tensor_dtype)
    v = ctx.randn(batch, tk, d_model, dtype=tensor_dtype)
    return obj, q, k, v


def mha_pieces(ctx, d_model, num_heads, batch=2, tq=5, tk=7, dtype=None):
    """A student MHA with the reference weights copied in (one request), the reference, and
    q, k, v."""
    obj, ref = ctx.with_own_sublayers(MHA, d_model, num_heads, dtype=dtype)
    tensor_dtype = torch.float64 if dtype == "float64" else torch.float32
    q = ctx.randn(batch, tq, d_model, dtype=tensor_dtype)
    k = ctx.randn(batch, tk, d_model, dtype=tensor_dtype)
    v = ctx.randn(batch, tk, d_model, dtype=tensor_dtype)
    return obj, ref, q, k, v


def _outputs(ctx, result):
    """(out, weights) of what MultiHeadAttention.forward returned, each a tensor."""
    out, weights = ctx.pair(result, "MultiHeadAttention.forward")
    return ctx.tensor(out, OUTPUT), ctx.tensor(weights, WEIGHTS)


def mha_forward(ctx, obj, *args, **kwargs):
    return _outputs(ctx, ctx.call(obj, *args, **kwargs))


def mha_own_forward(ctx, obj, heads, q, k, v, **kwargs):
    """``mha_forward`` with its calls of scaled_dot_product_attention recorded and the stand-in
    of ``sdpa_standin`` on offer: (out, weights, ``Records``)."""
    result, records = ctx.record(obj, q, k, v, functions=(SDPA,),
                                 standins=sdpa_standin(ctx, heads, q, k), **kwargs)
    return (*_outputs(ctx, result), records)


def mha_expected(ctx, obj, ref, q, k, v, mask=None, tolerance="float32"):
    """Run the student's MHA with its calls of scaled_dot_product_attention recorded (and the
    stand-in of ``sdpa_standin`` on offer); returns (out, weights, expected out, expected
    weights). The expectation is the reference's projections, head split and merge and output
    layer applied to what the student's own scaled_dot_product_attention returned (or the
    stand-in), when MHA calls it in a layout read here; otherwise the reference MHA's output."""
    kwargs = {} if mask is None else {"mask": mask}
    out, weights, records = mha_own_forward(ctx, obj, ref.num_heads, q, k, v, **kwargs)
    expected = around_sdpa(ctx, ref, q, k, v, mask, records.of(SDPA), tolerance)
    if expected is None:
        with torch.no_grad():
            expected = ctx.reference_result(ref, q, k, v, mask)
    return out, weights, expected[0], expected[1]


@check("mha.present", assignment="attention", target=MHA, category="api", points=1,
       title=bilingual("Kelas MultiHeadAttention(nn.Module) tersedia",
                       "Class MultiHeadAttention(nn.Module) exists"),
       hint=bilingual("Definisikan `class MultiHeadAttention(nn.Module)` dengan `__init__(self, d_model, "
                      "num_heads)` dan `forward(self, q, k, v, mask=None)`.",
                      "Define `class MultiHeadAttention(nn.Module)` with `__init__(self, d_model, "
                      "num_heads)` and `forward(self, q, k, v, mask=None)`."))
def mha_present(ctx):
    expect_present(ctx, MHA)


@check("mha.construct", assignment="attention", target=MHA, category="api", points=1,
       needs=("mha.present",),
       title=bilingual("Dapat dibuat dengan ukuran bab", "Can be built with the chapter's sizes"),
       hint=bilingual("`MultiHeadAttention(16, 4)` harus berhasil dan membuat wq, wk, wv, wo sebagai "
                      "nn.Linear.",
                      "`MultiHeadAttention(16, 4)` must succeed and create wq, wk, wv, wo as nn.Linear."))
def mha_construct(ctx):
    obj = ctx.new(MHA, ctx.chapter.d_model, ctx.chapter.num_heads)
    expect_submodules(obj)


@check("mha.sensitivity", assignment="attention", target=MHA, category="sensitivity", points=0,
       needs=("mha.construct",),
       title=bilingual("Bobot bergantung pada q dan k, keluaran pada v",
                       "The weights depend on q and k, the output on v"), hint=HINT_GATE)
def mha_sensitivity(ctx):
    d, h = ctx.chapter.d_model, ctx.chapter.num_heads
    obj, ref = ctx.gate_module(MHA, d, h)
    (q, q2), (k, k2), (v, v2) = ((ctx.randn(2, t, d), ctx.randn(2, t, d)) for t in (5, 7, 7))
    inputs = ((q, k, v), (q2, k, v), (q, k2, v), (q, k, v2))
    runs = [{"target": obj, "args": list(a)} for a in inputs]
    with torch.no_grad():
        reference = [ctx.reference_result(ref, *a) for a in inputs]
    computes(ctx, lambda: expect_attention_computes(ctx, [r for r, _ in ctx.record_many(runs)], reference))


@check("mha.divisibility_error", assignment="attention", target=MHA, category="api", points=1,
       needs=("mha.construct", "mha.sensitivity"),
       title=bilingual("Pesan error yang jelas bila d_model tidak habis dibagi num_heads",
                       "A clear error when d_model is not divisible by num_heads"),
       hint=bilingual("Tambahkan pemeriksaan di `__init__`, mis. `if d_model % num_heads != 0: raise "
                      "ValueError(...)`.",
                      "Add a check in `__init__`, e.g. `if d_model % num_heads != 0: raise ValueError(...)`."))
def mha_divisibility_error(ctx):
    try:
        ctx.new(MHA, 10, 4)
    except ctx.StudentError:
        return
    fail(bilingual("`MultiHeadAttention(10, 4)` berhasil dibuat tanpa error, padahal 10 tidak habis dibagi 4.",
                   "`MultiHeadAttention(10, 4)` was built without an error although 10 is not divisible by 4."))


@check("mha.param_count", assignment="attention", target=MHA, category="param_count", points=2,
       reads_hidden=True, needs=("mha.construct",),
       title=bilingual("Jumlah parameter (1088 untuk d_model=16)",
                       "Parameter count (1088 for d_model=16)"),
       hint=bilingual("Empat nn.Linear(d_model, d_model) dengan bias: 4 × (16·16 + 16) = 1088.",
                      "Four nn.Linear(d_model, d_model) with bias: 4 × (16·16 + 16) = 1088."))
def mha_param_count(ctx):
    for sizes in (ctx.chapter, ctx.hidden):
        obj = ctx.new(MHA, sizes.d_model, sizes.num_heads)
        expect_param_count(ctx, obj, mha_parameters(sizes.d_model),
                           f"MultiHeadAttention({sizes.d_model}, {sizes.num_heads})")


@check("mha.shape", assignment="attention", target=MHA, category="shape", points=2,
       needs=("mha.construct", "mha.sensitivity"),
       title=bilingual("Bentuk keluaran (B, Tq, D) dan bobot (B, H, Tq, Tk)",
                       "Output (B, Tq, D) and weights (B, H, Tq, Tk) shapes"), hint=HINT_MHA)
def mha_shape(ctx):
    d, h = ctx.chapter.d_model, ctx.chapter.num_heads
    obj = ctx.new(MHA, d, h)
    q, kv = ctx.randn(2, 5, d), ctx.randn(2, 7, d)
    try:
        out, weights, _ = mha_own_forward(ctx, obj, h, q, kv, kv)
    except ctx.StudentError as error:
        if _works_when_square(ctx, obj, h, q):
            raise only_here(error)  # raises only when Tq != Tk: the other checks still run
        raise
    ctx.tensor(out, OUTPUT, shape=(2, 5, d))
    ctx.tensor(weights, WEIGHTS, shape=(2, h, 5, 7))


def _works_when_square(ctx, obj, h, q):
    """With Tq == Tk the module runs and returns the contract's shapes."""
    try:
        out, weights, _ = mha_own_forward(ctx, obj, h, q, q, q)
    except (ctx.StudentError, CheckFailed):
        return False
    b, t, d = q.shape
    return (isinstance(out, torch.Tensor) and tuple(out.shape) == (b, t, d)
            and isinstance(weights, torch.Tensor) and tuple(weights.shape) == (b, h, t, t))


@check("mha.numeric", assignment="attention", target=MHA, category="numeric_vs_reference", points=2,
       needs=("mha.shape",), title=bilingual("Nilai sama dengan solusi acuan", "Values match the reference"),
       hint=HINT_MHA)
def mha_numeric(ctx):
    obj, ref, q, k, v = mha_pieces(ctx, ctx.chapter.d_model, ctx.chapter.num_heads)
    out, weights, ref_out, ref_weights = mha_expected(ctx, obj, ref, q, k, v)
    ctx.expect_close(weights, ref_weights, WEIGHTS)
    ctx.expect_close(out, ref_out, OUTPUT)


@check("mha.integration", assignment="attention", target=MHA, category="numeric_vs_reference", points=1,
       needs=("mha.shape",),
       title=bilingual("Modul utuh, dengan scaled_dot_product_attention Anda sendiri",
                       "As a whole, with your own scaled_dot_product_attention"),
       hint=bilingual("MultiHeadAttention lengkap (dengan scaled_dot_product_attention Anda sendiri), dengan "
                      "dan tanpa mask, harus sama dengan solusi acuan. Jika mha.numeric lulus tetapi ini "
                      "tidak, kesalahannya ada di scaled_dot_product_attention — lihat pemeriksaan sdpa.",
                      "The complete MultiHeadAttention (with your own scaled_dot_product_attention), with "
                      "and without a mask, must match the reference. If mha.numeric passes but this one "
                      "does not, the bug is in scaled_dot_product_attention — see the sdpa checks."))
def mha_integration(ctx):
    d, h = ctx.chapter.d_model, ctx.chapter.num_heads
    for tq, tk, mask in ((5, 7, None), (6, 6, ctx.reference.causal_mask(6)),
                         (5, 7, padding_mask(2, 7, (2, 4)))):
        obj, ref, q, k, v = mha_pieces(ctx, d, h, tq=tq, tk=tk)
        kwargs = {} if mask is None else {"mask": mask}
        out, weights = mha_forward(ctx, obj, q, k, v, **kwargs)
        with torch.no_grad():
            ref_out, ref_weights = ctx.reference_result(ref, q, k, v, mask)
        ctx.expect_close(weights, ref_weights, WEIGHTS)
        ctx.expect_close(out, ref_out, OUTPUT)


@check("mha.float64", assignment="attention", target=MHA, category="dtype", points=1, needs=("mha.shape",),
       title=bilingual("Bekerja setelah .double()", "Works after .double()"),
       hint=bilingual("Jangan menetapkan dtype float32 di dalam modul.",
                      "Do not hard-code float32 inside the module."))
def mha_float64(ctx):
    """Where the float32 module is wired as the contract says, its float64 run must match the
    reference in float64; where it is not (a wrong key or mask passed on: mha.numeric names
    that), the float64 run must compute what the float32 one does, in float64."""
    d, h = ctx.chapter.d_model, ctx.chapter.num_heads
    obj64, ref64, q, k, v = mha_pieces(ctx, d, h, dtype="float64")
    obj32, ref32, *_ = mha_pieces(ctx, d, h)
    q32, k32, v32 = q.float(), k.float(), v.float()
    try:
        out32, weights32, expected32, expected_weights32 = mha_expected(ctx, obj32, ref32, q32, k32, v32)
    except CheckFailed:
        for got64, got32, what in zip(mha_forward(ctx, obj64, q, k, v),
                                      mha_forward(ctx, obj32, q32, k32, v32), (OUTPUT_64, WEIGHTS_64)):
            ctx.tensor(got64, what, dtype=torch.float64)
            ctx.tensor(got32, what, shape=got64.shape)
            expect_float64_precision(ctx, got64, got32)
        return
    out64, weights64, expected64, expected_weights64 = mha_expected(ctx, obj64, ref64, q, k, v,
                                                                     tolerance="float64")
    expect_float64(ctx, weights64, weights32, expected_weights64, expected_weights32, WEIGHTS_64)
    expect_float64(ctx, out64, out32, expected64, expected32, OUTPUT_64)


@check("mha.rows_sum_to_one", assignment="attention", target=MHA, category="rows_sum_to_one", points=1,
       needs=("mha.shape",), title=bilingual("Tiap baris bobot berjumlah 1", "Each row of weights sums to 1"),
       hint=bilingual("Bobot yang dikembalikan adalah hasil softmax pada sumbu kunci (key), yaitu dim=-1.",
                      "The weights returned are the softmax over the keys (dim=-1)."))
def mha_rows(ctx):
    obj, q, k, v = mha_inputs(ctx, ctx.chapter.d_model, ctx.chapter.num_heads)
    _, weights = mha_forward(ctx, obj, q, k, v)
    expect_rows_sum_to_one(ctx, weights)


@check("mha.masking", assignment="attention", target=MHA, category="masking", points=2, needs=("mha.shape",),
       title=bilingual("Mask kausal dan mask padding lewat `mask=`", "Causal and padding masks via `mask=`"),
       hint=HINT_MASK)
def mha_masking(ctx):
    d, h = ctx.chapter.d_model, ctx.chapter.num_heads
    for tq, tk, mask in ((6, 6, ctx.reference.causal_mask(6)), (5, 7, padding_mask(2, 7, (2, 4)))):
        obj, q, k, v = mha_inputs(ctx, d, h, tq=tq, tk=tk)
        _, weights = mha_forward(ctx, obj, q, k, v, mask=mask)
        ctx.tensor(weights, WEIGHTS, shape=(2, h, tq, tk))
        expect_masked(ctx, weights, mask)
        expect_rows_sum_to_one(ctx, weights)
        expect_blocked_values_ignored(
            ctx, lambda a: mha_forward(ctx, obj, *a, mask=mask)[0], 2, (q, k, v), mask)


@check("mha.mask_convention", assignment="attention", target=MHA, category="mask_convention", points=1,
       needs=("mha.shape",),
       title=bilingual("Konvensi mask: True = diblokir", "Mask convention: True = blocked"),
       hint=HINT_MASK)
def mha_mask_convention(ctx):
    obj, q, k, v = mha_inputs(ctx, ctx.chapter.d_model, ctx.chapter.num_heads, tq=6, tk=6)
    mask = ctx.reference.causal_mask(6)
    _, weights = mha_forward(ctx, obj, q, k, v, mask=mask)
    ctx.tensor(weights, WEIGHTS, shape=(2, ctx.chapter.num_heads, 6, 6))
    expect_masked(ctx, weights, mask)


@check("mha.hidden_config", assignment="attention", target=MHA, category="hidden_config", points=2,
       reads_hidden=True, needs=("mha.shape",),
       title=bilingual("Benar pada ukuran lain (tersembunyi)", "Correct on other (hidden) sizes"),
       hint=bilingual("Jangan menulis ukuran secara tetap (16, 4, 5, ...): ambil dari argumen dan dari "
                      "bentuk masukan. Satu objek harus bisa dipakai untuk panjang urutan berbeda.",
                      "Do not hard-code sizes (16, 4, 5, ...): take them from the arguments and the "
                      "input's shape. One object must work for different sequence lengths."))
def mha_hidden_config(ctx):
    sizes = ctx.hidden
    obj, ref, q, k, v = mha_pieces(ctx, sizes.d_model, sizes.num_heads, batch=sizes.batch,
                                   tq=sizes.decoder_length, tk=sizes.length)
    for args in ((q, k, v), (k, k, k), (q, q, q)):  # one instance, several lengths
        out, weights, ref_out, ref_weights = mha_expected(ctx, obj, ref, *args)
        ctx.tensor(out, OUTPUT, shape=ref_out.shape)
        ctx.tensor(weights, WEIGHTS, shape=ref_weights.shape)
        ctx.expect_close(weights, ref_weights, WEIGHTS)
        ctx.expect_close(out, ref_out, OUTPUT)


@check("mha.gradient_flow", assignment="attention", target=MHA, category="gradient_flow", points=1,
       needs=("mha.shape",),
       title=bilingual("Gradien sampai ke semua parameter", "Gradients reach every parameter"),
       hint=bilingual("Jangan memutus graf komputasi (`.detach()`, `.data`, `torch.no_grad()`) di forward.",
                      "Do not cut the computation graph (`.detach()`, `.data`, `torch.no_grad()`) in forward."))
def mha_gradient_flow(ctx):
    obj, q, k, v = mha_inputs(ctx, ctx.chapter.d_model, ctx.chapter.num_heads)
    expect_gradient_flow(ctx, obj, (q, k, v), ctx.randn(2, 5, ctx.chapter.d_model), inputs=(0, 1, 2))


@check("mha.batch_independence", assignment="attention", target=MHA, category="batch_independence", points=1,
       needs=("mha.shape",), title=bilingual("Item batch saling bebas", "Batch items are independent"),
       hint=bilingual("Pemecahan head harus mempertahankan sumbu batch: view(B, T, H, d_k), bukan "
                      "view(-1, ...) yang mencampur item.",
                      "Splitting heads must keep the batch axis: view(B, T, H, d_k), not a view(-1, ...) "
                      "that mixes items."))
def mha_batch_independence(ctx):
    obj, q, k, v = mha_inputs(ctx, ctx.chapter.d_model, ctx.chapter.num_heads, batch=3)
    expect_batch_independent(ctx, obj, (q, k, v), vary=(0, 1, 2))


@check("mha.no_inplace", assignment="attention", target=MHA, category="inputs_untouched", points=1, needs=("mha.shape",),
       title=bilingual("Masukan tidak diubah", "Inputs are not modified"),
       hint=bilingual("Jangan mengubah q, k, v atau mask secara in-place (di tempat).",
                      "Do not modify q, k, v or mask in place."))
def mha_no_inplace(ctx):
    obj, q, k, v = mha_inputs(ctx, ctx.chapter.d_model, ctx.chapter.num_heads, tq=6, tk=6)
    expect_inputs_untouched(ctx, obj, (q, k, v), {"mask": ctx.reference.causal_mask(6)})


@check("mha.device_agnostic", assignment="attention", target=MHA, category="device_agnostic", points=1,
       needs=("mha.shape",), title=bilingual("Tidak terikat pada satu perangkat (device)", "Not tied to one device"),
       hint=bilingual("Tensor yang dibuat di forward harus berada di perangkat (device) yang sama dengan "
                      "masukan (`device=q.device`).",
                      "Tensors created in forward must be on the input's device (`device=q.device`)."))
def mha_device_agnostic(ctx):
    d, h = ctx.chapter.d_model, ctx.chapter.num_heads
    q = ctx.randn(2, 6, d)
    expect_runs_on_meta(ctx, MHA, (d, h), (q, q, q), {"mask": ctx.reference.causal_mask(6)})
