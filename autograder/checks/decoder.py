"""Checks of the decoder assignment: the pre-LN decoder block with masked self-attention
and cross-attention.

The block always runs with its own sub-layers (self_attn, cross_attn, ffn, ln1..ln3 and the
causal_mask it calls). What each check uses:

- wiring (``dec.wiring``, ``dec.cross_weights``, ``dec.float64``, ``dec.hidden_config``):
  self_attn, cross_attn, ffn and the module's causal_mask are recorded and the contract's wiring
  is recomputed here from what they returned, with the reference LayerNorm math and the weights
  copied in: self_attn gets ln1(x) three times and the causal mask of size Tdec (the block's own
  causal_mask(Tdec) counts as that mask, whatever it holds: its bugs are its own checks'),
  cross_attn gets ln2(h) and ln2(memory) twice and no mask, ffn gets ln3(h), the output is
  h + ffn(ln3(h)) and the returned weights are cross_attn's. A bug inside a sub-layer costs
  only its own checks and ``dec.integration``;
- the whole block against the reference: ``dec.integration`` only;
- properties (``dec.shape``, ``dec.causality``, ``dec.memory_path``, ``dec.batch_independence``,
  ``dec.no_inplace``): the block as written;
- ``dec.gradient_flow``: the block as written, its sub-layers recorded to tell a cut in the
  block from one inside a sub-layer; ``dec.device_agnostic``: the block on the meta device;
- ``dec.sensitivity``, the gate every other check except ``dec.present``, ``dec.construct``,
  ``dec.param_count`` and ``dec.shape`` (which need no output that computes)
  stands behind (registry.py): the block as written, with stand-ins for broken sub-layers; its
  output must respond to x or the memory, differ from x plus something fixed, and not be NaN
  everywhere (ignoring only the memory is one bug, named by ``dec.memory_path``).

Wherever the block runs with recording, a sub-layer that raises or returns another form than
the contract's hands the block a check-made stand-in of the right shape instead.
"""

import torch

from autograder.checks.verdicts import (
    expect_mixes_tokens, one_token_changed,
    computes, fair_share, movement, expect_batch_independent, expect_depends, expect_finite_somewhere,
    expect_gradients_consistent, expect_inputs_untouched, expect_not_identity,
    expect_param_count, expect_present, expect_runs_on_meta, expect_submodules, 
    HINT_GATE_BLOCK, tensors,
)
from autograder.checks.recorded import (
    blocked, expect_heads, layer_norm, MISSING, only_call, tokenwise_result,
)
from autograder.checks import targets
from autograder.checks.registry import OUTPUT, CheckFailed, check, fail
from autograder.checks.targets import DEC, decoder_parameters
from autograder.texts import bilingual

CROSS = bilingual("Bobot cross-attention", "The cross-attention weights")

HINT_DEC = bilingual(
    "Susunan pre-LN: n = ln1(x); h = x + self_attn(n, n, n, causal_mask(Tdec))[0]; "
    "m = ln2(memory); z, bobot = cross_attn(ln2(h), m, m); h = h + z; keluaran = h + ffn(ln3(h)); "
    "kembalikan (keluaran, bobot cross-attention).",
    "Pre-LN wiring: n = ln1(x); h = x + self_attn(n, n, n, causal_mask(Tdec))[0]; "
    "m = ln2(memory); z, weights = cross_attn(ln2(h), m, m); h = h + z; output = h + ffn(ln3(h)); "
    "return (output, cross-attention weights).")


dec_args = targets.get(DEC).arguments  # the constructor's arguments at a configuration


def decoder_inputs(ctx, sizes, batch=None, t_dec=None, t_src=None, dtype=torch.float32):
    batch = batch or sizes.batch
    x = ctx.randn(batch, t_dec or sizes.decoder_length, sizes.d_model, dtype=dtype)
    memory = ctx.randn(batch, t_src or sizes.length, sizes.d_model, dtype=dtype)
    return x, memory


SUBLAYERS = targets.get(DEC).sublayers


def decoder_pair(ctx, result):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(bilingual("DecoderBlock.forward harus mengembalikan pasangan (keluaran, bobot cross-attention).",
                       "DecoderBlock.forward must return a pair (output, cross-attention weights)."))
    return ctx.tensor(result[0], OUTPUT), ctx.tensor(result[1], CROSS)


def decoder_forward(ctx, obj, x, memory):
    return decoder_pair(ctx, ctx.call(obj, x, memory))


def standins(ctx, x, memory, heads):
    """Check-made results for the sub-layers, used only where the block's own one is broken."""
    b, t_dec, d = x.shape
    return {"self_attn": [ctx.standin_attention(b, heads, t_dec, t_dec, d, x.dtype)],
            "cross_attn": [ctx.standin_attention(b, heads, t_dec, memory.shape[1], d, x.dtype)],
            "ffn": [ctx.standin_tokenwise(x.shape, x.dtype)]}


def block_run(ctx, obj, x, memory, heads, offered=None, return_inputs=False):
    """One run of the block on (x, memory), its sub-layers and causal_mask recorded (stand-ins
    where they are broken), for ``ctx.record_many``."""
    return {"target": obj, "args": [x, memory], "modules": SUBLAYERS, "functions": ("causal_mask",),
            "standins": offered or standins(ctx, x, memory, heads), "return_inputs": return_inputs}


def run_block(ctx, obj, x, memory, heads, offered=None, return_inputs=False):
    """The block's result on (x, memory) and the records of its sub-layers."""
    return ctx.record_many([block_run(ctx, obj, x, memory, heads, offered, return_inputs)])[0]


def recorded_forward(ctx, obj, x, memory, heads, offered=None):
    return decoder_pair(ctx, run_block(ctx, obj, x, memory, heads, offered)[0])


def recorded_forwards(ctx, obj, inputs, heads, offered):
    """(output, cross weights) for each (x, memory) in ``inputs``, in one request."""
    runs = ctx.record_many([block_run(ctx, obj, x, memory, heads, offered) for x, memory in inputs])
    return [decoder_pair(ctx, result) for result, _ in runs]


def _is_causal_mask_call(call, mask, t_dec, shape):
    """The mask is the result of the block's own causal_mask(Tdec) call."""
    size = call.arguments(("t",)).get("t", MISSING)
    if not isinstance(size, int) or isinstance(size, bool) or size != t_dec:
        return False
    made = call.main
    if (isinstance(made, torch.Tensor) and isinstance(mask, torch.Tensor) and made.dtype == mask.dtype
            and made.shape == mask.shape and torch.equal(made, mask)):
        return True  # its own causal_mask's result, whatever it holds: its bugs are causal_mask's
    made, passed = blocked(made, shape), blocked(mask, shape)
    return made is not None and passed is not None and torch.equal(made, passed)


def expected_output(ctx, records, ref, x, memory, heads, tolerance="float32"):
    """(output, cross weights) the contract's wiring gives with the block's own sub-layer results
    (from the records) and the reference LayerNorm math; fails naming the first step that
    differs."""
    b, t_dec, d = x.shape
    t_src = memory.shape[1]
    self_attn = only_call(records, "self_attn")
    expect_heads(self_attn, heads, "self_attn")
    n = layer_norm(x, ref.ln1)
    q, k, v, mask = self_attn.attention_arguments()
    for slot, value in zip("qkv", (q, k, v)):
        if not ctx.same(value, n, tolerance):
            if ctx.same(value, x, tolerance):
                fail(bilingual("Blok decoder tidak menormalkan x dengan ln1 sebelum self-attention.",
                               "The decoder block does not normalise x with ln1 before self-attention."))
            fail(bilingual(f"Argumen {slot} untuk self.self_attn bukan ln1(x).",
                           f"The {slot} argument of self.self_attn is not ln1(x)."))
    shape = (b, heads, t_dec, t_dec)
    passed = blocked(mask, shape)
    causal = torch.triu(torch.ones(t_dec, t_dec, dtype=torch.bool), diagonal=1).expand(shape)
    if not (passed is not None and torch.equal(passed, causal)) and not any(
            _is_causal_mask_call(call, mask, t_dec, shape) for call in records.of("causal_mask")):
        if passed is not None and not passed.any():
            fail(bilingual("Blok decoder tidak memakai mask kausal pada self-attention.",
                           "The decoder block uses no causal mask in self-attention."))
        fail(bilingual(f"Mask self-attention bukan mask kausal berukuran Tdec = {t_dec} (True di atas "
                       "diagonal), mis. causal_mask(x.size(1)).",
                       f"The self-attention mask is not the causal mask of size Tdec = {t_dec} (True "
                       "above the diagonal), e.g. causal_mask(x.size(1))."))
    a = ctx.tensor(self_attn.main, bilingual("Keluaran self.self_attn", "The output of self.self_attn"),
                   shape=x.shape)
    h = x + a
    cross = only_call(records, "cross_attn")
    expect_heads(cross, heads, "cross_attn")
    q, k, v, mask = cross.attention_arguments()
    if not ctx.same(q, layer_norm(h, ref.ln2), tolerance):
        if ctx.same(q, h, tolerance):
            fail(bilingual("Blok decoder tidak menormalkan h dengan ln2 sebelum cross-attention.",
                           "The decoder block does not normalise h with ln2 before cross-attention."))
        if ctx.same(q, layer_norm(n + a, ref.ln2), tolerance):
            fail(bilingual("Residual self-attention menambahkan ln1(x), bukan x: seharusnya "
                           "h = x + self_attn(ln1(x), ...)[0], dengan x yang belum dinormalkan.",
                           "The self-attention residual adds ln1(x) instead of x: it should be "
                           "h = x + self_attn(ln1(x), ...)[0], with x as it came in."))
        fail(bilingual("Kueri (query) self.cross_attn bukan ln2(h) dengan h = x + self_attn(...)[0].",
                       "The query of self.cross_attn is not ln2(h) with h = x + self_attn(...)[0]."))
    for value in (k, v):
        if not ctx.same(value, layer_norm(memory, ref.ln2), tolerance):
            if ctx.same(value, memory, tolerance):
                fail(bilingual("Blok decoder tidak menormalkan memori dengan ln2.",
                               "The decoder block does not normalise the memory with ln2."))
            if ctx.same(value, layer_norm(memory, ref.ln1), tolerance):
                fail(bilingual("Blok decoder menormalkan memori dengan ln1, bukan ln2.",
                               "The decoder block normalises the memory with ln1 instead of ln2."))
            fail(bilingual("Kunci (key) dan nilai (value) self.cross_attn bukan m = ln2(memory).",
                           "The keys and values of self.cross_attn are not m = ln2(memory)."))
    passed = blocked(mask, (b, heads, t_dec, t_src))
    if passed is None or passed.any():
        fail(bilingual("Cross-attention mendapat mask; setiap token decoder boleh melihat seluruh memori.",
                       "Cross-attention is given a mask; every decoder token may see the whole memory."))
    z = ctx.tensor(cross.main, bilingual("Keluaran self.cross_attn", "The output of self.cross_attn"),
                   shape=x.shape)
    h = h + z
    f = tokenwise_result(ctx, records, "ffn", layer_norm(h, ref.ln3), tolerance)
    if f is None:
        fail(bilingual("`self.ffn` tidak menerima `ln3(h)` dengan `h = h + cross_attn(...)[0]`.",
                       "`self.ffn` does not receive `ln3(h)` with `h = h + cross_attn(...)[0]`."))
    f = ctx.tensor(f, bilingual("Keluaran self.ffn", "The output of self.ffn"), shape=x.shape)
    return h + f, cross.second


def expect_wiring(ctx, obj, ref, x, memory, heads, tolerance="float32"):
    """Run the block with recording; its output must be the contract's wiring of what its own
    sub-layers returned. Returns (output, expected output, weights, records)."""
    return expect_wired(ctx, run_block(ctx, obj, x, memory, heads), ref, x, memory, heads, tolerance)


def expect_wired(ctx, run, ref, x, memory, heads, tolerance="float32"):
    """``expect_wiring`` for a run already made: (result, records)."""
    result, records = run
    out, weights = decoder_pair(ctx, result)
    expected, _ = expected_output(ctx, records, ref, x, memory, heads, tolerance)
    ctx.tensor(out, OUTPUT, shape=x.shape)
    if not ctx.same(out, expected, tolerance):
        diff = (out.double() - expected.double()).abs().nan_to_num(float("inf")).max().item()
        fail(bilingual("Keluaran blok bukan h + ffn(ln3(h)) dari hasil sub-layernya sendiri (selisih "
                       f"maksimum {diff:.3g}).",
                       "The block's output is not h + ffn(ln3(h)) of what its own sub-layers returned "
                       f"(largest difference {diff:.3g})."))
    return out, expected, weights, records


@check("dec.present", assignment="decoder", target=DEC, category="api", points=1,
       title=bilingual("Kelas DecoderBlock(nn.Module) tersedia", "Class DecoderBlock(nn.Module) exists"),
       hint=bilingual("`class DecoderBlock(nn.Module)` dengan `__init__(self, d_model, num_heads, d_ff)` "
                      "dan `forward(self, x, memory)`.",
                      "`class DecoderBlock(nn.Module)` with `__init__(self, d_model, num_heads, d_ff)` "
                      "and `forward(self, x, memory)`."))
def dec_present(ctx):
    expect_present(ctx, DEC)


@check("dec.construct", assignment="decoder", target=DEC, category="api", points=1, needs=("dec.present",),
       title=bilingual("Dapat dibuat; punya self_attn, cross_attn, ffn, ln1–ln3",
                       "Can be built; has self_attn, cross_attn, ffn, ln1–ln3"),
       hint=bilingual("Buat self_attn dan cross_attn (dua MultiHeadAttention terpisah), ffn, serta tiga "
                      "nn.LayerNorm(d_model): ln1, ln2, ln3.",
                      "Create self_attn and cross_attn (two separate MultiHeadAttention), ffn, and three "
                      "nn.LayerNorm(d_model): ln1, ln2, ln3."))
def dec_construct(ctx):
    obj = ctx.new(DEC, *dec_args(ctx.chapter))
    expect_submodules(obj)


@check("dec.sensitivity", assignment="decoder", target=DEC, category="sensitivity", points=0,
       needs=("dec.construct",),
       title=bilingual("Keluaran bergantung pada masukan, tetapi tidak sama dengan x",
                       "The output depends on the inputs and is not x itself"), hint=HINT_GATE_BLOCK)
def dec_sensitivity(ctx):
    """Degenerate: an output that ignores x and the memory alike, is x (plus something fixed),
    or is NaN everywhere. Ignoring only the memory is one bug, which dec.memory_path names."""
    c = ctx.chapter
    (x, memory), (x2, memory2) = decoder_inputs(ctx, c), decoder_inputs(ctx, c)
    places, changed = zip(*one_token_changed(x, x2))
    offered = standins(ctx, x, memory, c.num_heads)  # the same stand-ins for every input

    def run():
        obj, ref = ctx.gate_module(DEC, *dec_args(c))
        inputs = ((x, memory), (x2, memory), (x, memory2), *((y, memory) for y in changed))
        runs = ctx.record_many([block_run(ctx, obj, a, m, c.num_heads, offered) for a, m in inputs])
        outs = [tensors(result, 1) for result, _ in runs]
        if None in outs:
            return  # another form: dec.shape names it
        (out,), (out_x,), (out_m,), *outs_changed = outs
        with torch.no_grad():
            ref_out, ref_x, ref_m, *refs_changed = (ctx.reference_result(ref, a, m)[0] for a, m in inputs)
        expect_finite_somewhere(out, OUTPUT)
        by_memory = fair_share(movement(out, out_m), movement(ref_out, ref_m))
        if not by_memory:
            expect_depends(out, out_x, OUTPUT, (bilingual("x atau memori", "x or the memory"),
                                                 bilingual("keduanya diabaikan", "both are ignored")),
                           (ref_out, ref_x))
        expect_not_identity(out, x, out_x, x2, (ref_out, ref_x), moved_otherwise=by_memory)
        expect_mixes_tokens(out, [o for o, in outs_changed], ref_out, refs_changed, places,
                            [call for _, records in runs[3:] for call in records.of("self_attn")])
    computes(ctx, run)


@check("dec.param_count", assignment="decoder", target=DEC, category="param_count", points=2,
       reads_hidden=True, needs=("dec.construct",),
       title=bilingual("Jumlah parameter (3344 untuk 16/4/32)",
                       "Parameter count (3344 for 16/4/32)"),
       hint=bilingual("2 × 1088 (self dan cross attention) + 1072 (FFN) + 3 × 32 (LayerNorm) = 3344.",
                      "2 × 1088 (self and cross attention) + 1072 (FFN) + 3 × 32 (LayerNorms) = 3344."))
def dec_param_count(ctx):
    for sizes in (ctx.chapter, ctx.hidden):
        obj = ctx.new(DEC, *dec_args(sizes))
        expect_param_count(ctx, obj, decoder_parameters(*dec_args(sizes)),
                           "DecoderBlock({}, {}, {})".format(*dec_args(sizes)))


@check("dec.shape", assignment="decoder", target=DEC, category="shape", points=1,
       needs=("dec.construct",),
       title=bilingual("Bentuk keluaran (B, Tdec, D) dan bobot cross (B, H, Tdec, Tsrc)",
                       "Shapes of output (B, Tdec, D) and cross weights (B, H, Tdec, Tsrc)"), hint=HINT_DEC)
def dec_shape(ctx):
    c = ctx.chapter
    obj = ctx.new(DEC, *dec_args(c))
    x, memory = decoder_inputs(ctx, c)
    out, weights = recorded_forward(ctx, obj, x, memory, c.num_heads)
    ctx.tensor(out, OUTPUT, shape=x.shape)
    ctx.tensor(weights, CROSS, shape=(c.batch, c.num_heads, c.decoder_length, c.length))


@check("dec.wiring", assignment="decoder", target=DEC, category="numeric_vs_reference", points=3,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Susunan blok decoder benar", "The decoder block's wiring is correct"),
       hint=HINT_DEC)
def dec_wiring(ctx):
    c = ctx.chapter
    obj, ref = ctx.block(DEC, *dec_args(c), sublayers=SUBLAYERS)
    # The chapter's lengths, then a memory as long as x (the course keeps the two lengths
    # apart): a mask that reaches cross-attention only where a square one fits shows there.
    inputs = [decoder_inputs(ctx, c), decoder_inputs(ctx, c, t_src=c.decoder_length)]
    runs = ctx.record_many([block_run(ctx, obj, x, memory, c.num_heads) for x, memory in inputs])
    for (x, memory), run in zip(inputs, runs):
        expect_wired(ctx, run, ref, x, memory, c.num_heads)


@check("dec.integration", assignment="decoder", target=DEC, category="numeric_vs_reference", points=2,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Blok utuh dengan sub-layer Anda sendiri",
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
        ref_out, _ = ctx.reference_result(ref, x, memory)
    ctx.expect_close(out, ref_out, OUTPUT)


@check("dec.causality", assignment="decoder", target=DEC, category="causality", points=3,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Kausal: token tidak melihat masa depan",
                       "Causal: tokens do not see the future"),
       hint=bilingual("Self-attention decoder harus memakai mask kausal ukuran Tdec (True di atas "
                      "diagonal), dibuat di device masukan, mis. `causal_mask(T).to(x.device)`.",
                      "The decoder's self-attention must use a causal mask of size Tdec (True above the "
                      "diagonal) made on the input's device, e.g. `causal_mask(T).to(x.device)`."))
def dec_causality(ctx):
    c = ctx.chapter
    obj, _ = ctx.block(DEC, *dec_args(c), sublayers=SUBLAYERS)
    x, memory = decoder_inputs(ctx, c)
    offered = standins(ctx, x, memory, c.num_heads)
    inputs = [(x, memory)]
    for cut in range(c.decoder_length):
        changed = x.clone()
        changed[:, cut:] += ctx.randn(c.batch, c.decoder_length - cut, c.d_model)
        inputs.append((changed, memory))
    (out, _), *others = recorded_forwards(ctx, obj, inputs, c.num_heads, offered)
    tol = ctx.tolerance("property")
    for cut, (out2, _) in enumerate(others):
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
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Memori encoder memengaruhi keluaran",
                       "The encoder memory affects the output"),
       hint=bilingual("Cross-attention mengambil kunci (key) dan nilai (value) dari memori encoder: "
                      "cross_attn(ln2(h), m, m) dengan m = ln2(memory).",
                      "Cross-attention takes keys and values from the encoder memory: "
                      "cross_attn(ln2(h), m, m) with m = ln2(memory)."))
def dec_memory_path(ctx):
    c = ctx.chapter
    obj, _ = ctx.block(DEC, *dec_args(c), sublayers=SUBLAYERS)
    x, memory = decoder_inputs(ctx, c)
    offered = standins(ctx, x, memory, c.num_heads)
    inputs = [(x, memory)]
    for position in range(c.length):
        changed = memory.clone()
        changed[:, position] += ctx.randn(c.batch, c.d_model)
        inputs.append((x, changed))
    runs = ctx.record_many([block_run(ctx, obj, a, m, c.num_heads, offered) for a, m in inputs])
    (out, _), *others = [decoder_pair(ctx, result) for result, _ in runs]
    # a cross_attn that raised (e.g. only when Tdec != Tsrc) hands back a fixed stand-in: then the
    # memory's path is judged by what reaches cross_attn's keys and values, not by the output
    calls = [records.of("cross_attn") for _, records in runs]
    replaced = any(call.replaced for found in calls for call in found)
    for position, (out2, _) in enumerate(others):
        if replaced:
            if _reaches_cross_attention(calls[0], calls[position + 1]):
                continue
        elif out2.shape == out.shape and (out2 - out).abs().max() >= 1e-4:
            continue
        fail(bilingual(f"Mengubah token memori posisi {position} tidak mengubah keluaran decoder: "
                       "memori tidak sampai ke cross-attention.",
                       f"Changing memory token {position} does not change the decoder output: the "
                       "memory does not reach the cross-attention."))


def _reaches_cross_attention(before, after):
    """The keys or values cross_attn received changed with the memory."""
    if len(before) != 1 or len(after) != 1:
        return False
    for a, b in zip(before[0].attention_arguments()[1:3], after[0].attention_arguments()[1:3]):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and (
                a.shape != b.shape or (a.double() - b.double()).abs().max() >= 1e-4):
            return True
    return False


@check("dec.cross_weights", assignment="decoder", target=DEC, category="numeric_vs_reference", points=2,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Bobot cross-attention yang dikembalikan benar",
                       "The returned cross-attention weights are right"),
       hint=bilingual("Kembalikan bobot dari cross_attn (B, H, Tdec, Tsrc), bukan dari self_attn; "
                      "tiap baris berjumlah 1.",
                      "Return the weights of cross_attn (B, H, Tdec, Tsrc), not those of self_attn; "
                      "every row sums to 1."))
def dec_cross_weights(ctx):
    c = ctx.chapter
    obj, _ = ctx.block(DEC, *dec_args(c), sublayers=SUBLAYERS)
    x, memory = decoder_inputs(ctx, c)
    result, records = run_block(ctx, obj, x, memory, c.num_heads)
    _, weights = decoder_pair(ctx, result)
    ctx.tensor(weights, CROSS, shape=(c.batch, c.num_heads, c.decoder_length, c.length))
    cross = only_call(records, "cross_attn")
    if not ctx.same(weights, cross.second):
        own = records.of("self_attn")
        if own and ctx.same(weights, own[0].second):
            fail(bilingual("Bobot yang dikembalikan adalah bobot self-attention, bukan cross-attention.",
                           "The weights returned are the self-attention's, not the cross-attention's."))
        fail(bilingual("Bobot yang dikembalikan bukan bobot yang dikembalikan self.cross_attn.",
                       "The weights returned are not the weights self.cross_attn returned."))


@check("dec.float64", assignment="decoder", target=DEC, category="dtype", points=1,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Bekerja setelah .double()", "Works after .double()"),
       hint=bilingual("Jangan menetapkan dtype di dalam blok.", "Do not hard-code a dtype inside the block."))
def dec_float64(ctx):
    c = ctx.chapter
    obj64, ref64 = ctx.block(DEC, *dec_args(c), sublayers=SUBLAYERS, dtype="float64")
    obj32, ref32 = ctx.block(DEC, *dec_args(c), sublayers=SUBLAYERS)
    x, memory = decoder_inputs(ctx, c, dtype=torch.float64)
    run32, run64 = ctx.record_many([block_run(ctx, obj32, x.float(), memory.float(), c.num_heads),
                                    block_run(ctx, obj64, x, memory, c.num_heads)])
    out32, _ = decoder_pair(ctx, run32[0])
    ctx.tensor(out32, OUTPUT, shape=x.shape)
    try:  # whether the float32 wiring holds (graded by dec.wiring, not here)
        expected32, _ = expected_output(ctx, run32[1], ref32, x.float(), memory.float(), c.num_heads)
        holds32 = ctx.same(out32, expected32)
    except CheckFailed:
        holds32 = False
    ctx.expect_float64_block(
        out32, holds32,
        lambda: expect_wired(ctx, run64, ref64, x, memory, c.num_heads, tolerance="float64")[0],
        lambda: decoder_pair(ctx, run64[0])[0], OUTPUT)


@check("dec.hidden_config", assignment="decoder", target=DEC, category="hidden_config", points=2,
       reads_hidden=True, needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Benar pada ukuran lain (tersembunyi)",
                       "Correct on other (hidden) sizes"),
       hint=bilingual("Jangan menulis ukuran secara tetap; mask kausal harus berukuran Tdec dari masukan.",
                      "Do not hard-code sizes; the causal mask must have the input's Tdec."))
def dec_hidden_config(ctx):
    h = ctx.hidden
    obj, ref = ctx.block(DEC, *dec_args(h), sublayers=SUBLAYERS)
    inputs = [decoder_inputs(ctx, h, t_dec=t_dec, t_src=t_src)  # one block, several lengths
              for t_dec, t_src in ((h.decoder_length, h.length), (h.length, h.decoder_length))]
    runs = ctx.record_many([block_run(ctx, obj, x, memory, h.num_heads) for x, memory in inputs])
    for (x, memory), run in zip(inputs, runs):
        expect_wired(ctx, run, ref, x, memory, h.num_heads)


@check("dec.gradient_flow", assignment="decoder", target=DEC, category="gradient_flow", points=1,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Gradien mengalir ke x, memori dan LayerNorm",
                       "Gradients flow to x, the memory and the LayerNorms"),
       hint=bilingual("Jangan memutus graf komputasi (`.detach()`, `.data`, `torch.no_grad()`) di "
                      "forward blok.",
                      "Do not cut the computation graph (`.detach()`, `.data`, `torch.no_grad()`) in the "
                      "block's forward."))
def dec_gradient_flow(ctx):
    obj, _ = ctx.block(DEC, *dec_args(ctx.chapter), sublayers=SUBLAYERS)
    x, memory = decoder_inputs(ctx, ctx.chapter)
    expect_gradients_consistent(ctx, obj, (x, memory), ctx.randn(*x.shape), sublayers=SUBLAYERS)


@check("dec.batch_independence", assignment="decoder", target=DEC, category="batch_independence", points=1,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Item batch saling bebas", "Batch items are independent"),
       hint=bilingual("Tidak ada operasi yang mencampur item batch.", "No operation may mix batch items."))
def dec_batch_independence(ctx):
    c = ctx.chapter
    obj, _ = ctx.block(DEC, *dec_args(c), sublayers=SUBLAYERS)
    x, memory = decoder_inputs(ctx, c, batch=3)
    offered = standins(ctx, x, memory, c.num_heads)

    def call_many(target, inputs, kwargs):
        runs = [block_run(ctx, target, *args, c.num_heads, offered) for args in inputs]
        return [result for result, _ in ctx.record_many(runs)]
    expect_batch_independent(ctx, obj, (x, memory), vary=(0, 1), call_many=call_many)


@check("dec.no_inplace", assignment="decoder", target=DEC, category="inputs_untouched", points=1,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Masukan tidak diubah", "Inputs are not modified"),
       hint=bilingual("Jangan mengubah x atau memory secara in-place (di tempat), mis. `x += ...`.",
                      "Do not modify x or memory in place (`x += ...`)."))
def dec_no_inplace(ctx):
    c = ctx.chapter
    obj, _ = ctx.block(DEC, *dec_args(c), sublayers=SUBLAYERS)

    def call(target, x, memory):
        result, records = run_block(ctx, target, x, memory, c.num_heads, return_inputs=True)
        return result, records.inputs_after
    expect_inputs_untouched(ctx, obj, decoder_inputs(ctx, c), call=call)


@check("dec.device_agnostic", assignment="decoder", target=DEC, category="device_agnostic", points=1,
       needs=("dec.construct", "dec.sensitivity"),
       title=bilingual("Tidak terikat pada satu perangkat (device)", "Not tied to one device"),
       hint=bilingual("Mask kausal harus dibuat di perangkat (device) masukan: "
                      "`causal_mask(T).to(x.device)`.",
                      "The causal mask must be made on the input's device: `causal_mask(T).to(x.device)`."))
def dec_device_agnostic(ctx):
    expect_runs_on_meta(ctx, DEC, dec_args(ctx.chapter), decoder_inputs(ctx, ctx.chapter))
