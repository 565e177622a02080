"""Checks of assignment 4's model: ``shift_right`` and the whole ``Transformer``.

The model always runs with its own blocks. What each check uses (see ``assembly``):

- from the recorded calls of its encoder and decoder blocks, the model's own part recomputed
  here with the weights copied in: ``tf.embedding`` (embedding · √d_model + PE), ``tf.wiring``
  (the chain of blocks, one memory for every decoder block, raw logits), ``tf.final_norms``
  (enc_norm, dec_norm), and all of it at once at other sizes (``tf.hidden_config``,
  ``tf.configs``, ``tf.float64``). A bug inside a block costs only ``tf.integration``;
- the whole model against the reference: ``tf.integration`` only;
- the model as written: ``tf.shape``, ``tf.causality``, ``tf.memory_path``,
  ``tf.encoder_ignores_target``; its structure: ``tf.distinct_blocks``, ``tf.param_count``;
- ``tf.sensitivity``, the gate: the logits respond to the source and to the target.
"""

import torch

from autograder.checks import assembly, targets
from autograder.checks.assembly import (LOGITS, MEMORY, expect_assembled, graded_run, layer_calls, model_inputs,
                                       model_run, paths)
from autograder.checks.registry import OUTPUT, CheckFailed, check, fail
from autograder.checks.targets import SHIFT, TRANSFORMER, transformer_arguments, transformer_parameters
from autograder.checks.verdicts import (
    HINT_GATE, computes, expect_depends, expect_finite_somewhere, expect_param_count, expect_present,
    expect_submodules, fair_share, movement, tensors,
)
from autograder.texts import bilingual

HINT_SHIFT = bilingual("Masukan decoder untuk teacher forcing: `[bos, y_0, ..., y_{T-2}]`, bentuk sama "
                       "dengan y, mis. `torch.cat([torch.full_like(y[:, :1], bos), y[:, :-1]], dim=1)`.",
                       "The decoder input for teacher forcing: `[bos, y_0, ..., y_{T-2}]`, the shape of y, "
                       "e.g. `torch.cat([torch.full_like(y[:, :1], bos), y[:, :-1]], dim=1)`.")
HINT_TF = bilingual(
    "h = src_embed(src) · √d_model + PE[:Ts]; h = blok(h) untuk tiap blok encoder; memory = enc_norm(h); "
    "g = tgt_embed(tgt) · √d_model + PE[:Tt]; g = blok(g, memory)[0] untuk tiap blok decoder; "
    "logit = generator(dec_norm(g)), tanpa softmax.",
    "h = src_embed(src) · √d_model + PE[:Ts]; h = block(h) for each encoder block; memory = enc_norm(h); "
    "g = tgt_embed(tgt) · √d_model + PE[:Tt]; g = block(g, memory)[0] for each decoder block; "
    "logits = generator(dec_norm(g)), no softmax.")
LAYERS = targets.LAYERS


# -- shift_right ----------------------------------------------------------------------------------
@check("shift.present", assignment="transformer", target=SHIFT, category="api", points=0.5,
       title=bilingual("Fungsi shift_right(y, bos) tersedia", "Function shift_right(y, bos) exists"),
       hint=HINT_SHIFT)
def shift_present(ctx):
    expect_present(ctx, SHIFT)


@check("shift.sensitivity", assignment="transformer", target=SHIFT, category="sensitivity", points=0,
       needs=("shift.present",), title=bilingual("Keluaran bergantung pada y", "The output depends on y"),
       hint=HINT_GATE)
def shift_sensitivity(ctx):
    y, y2 = ctx.randint(10, (3, 6)), ctx.randint(10, (3, 6))

    def run():
        found = [tensors(ctx.call(SHIFT, value, 10), 1) for value in (y, y2)]
        if None not in found:
            reference = [ctx.reference.shift_right(value, 10).double() for value in (y, y2)]
            expect_depends(found[0][0].double(), found[1][0].double(), OUTPUT,
                           ("y", bilingual("y diabaikan", "y is ignored")), reference)
    computes(ctx, run)


@check("shift.shape", assignment="transformer", target=SHIFT, category="shape", points=0.5,
       needs=("shift.sensitivity",), title=bilingual("Bentuk (B, T) dan dtype long", "Shape (B, T), dtype long"),
       hint=HINT_SHIFT)
def shift_shape(ctx):
    for b, t in ((2, 5), (1, 1), (3, 12)):
        y = ctx.randint(10, (b, t))
        ctx.tensor(ctx.call(SHIFT, y, 10), OUTPUT, shape=(b, t), dtype=torch.long)


@check("shift.values", assignment="transformer", target=SHIFT, category="numeric_vs_reference", points=2,
       needs=("shift.sensitivity",), title=bilingual("[bos, y_0, ..., y_{T-2}]", "[bos, y_0, ..., y_{T-2}]"),
       hint=HINT_SHIFT)
def shift_values(ctx):
    fixed = torch.tensor([[6, 2, 9, 5, 1, 4, 1, 3]])
    cases = [(fixed, 10), (ctx.randint(10, (3, 7)), 10), (ctx.randint(7, (2, 4)), 8), (ctx.randint(10, (1, 1)), 10)]
    for y, bos in cases:
        out = ctx.tensor(ctx.call(SHIFT, y, bos), OUTPUT, shape=y.shape)
        expected = ctx.reference.shift_right(y, bos)
        if torch.equal(out.long(), expected):
            continue
        example = f"y = {y[0].tolist()}, bos = {bos}: {out[0].tolist()}"
        if torch.equal(out.long(), y):
            said = bilingual("tidak digeser sama sekali", "not shifted at all")
        elif y.shape[1] > 1 and torch.equal(out[:, 1:].long(), y[:, 1:]):
            said = bilingual("token y_0 hilang: pergeseran salah satu posisi", "y_0 is lost: the shift is off by one")
        elif not bool((out[:, 0] == bos).all()):
            said = bilingual("posisi pertama bukan bos", "the first position is not bos")
        else:
            said = bilingual("isinya bukan [bos, y_0, ..., y_{T-2}]", "it is not [bos, y_0, ..., y_{T-2}]")
        fail(bilingual(f"shift_right salah ({said.id}); contoh {example}, seharusnya {expected[0].tolist()}.",
                       f"shift_right is wrong ({said.en}); for {example}, expected {expected[0].tolist()}."))


# -- Transformer ------------------------------------------------------------------------------------
@check("tf.present", assignment="transformer", target=TRANSFORMER, category="api", points=1,
       title=bilingual("Kelas Transformer(nn.Module) tersedia", "Class Transformer(nn.Module) exists"),
       hint=bilingual("`class Transformer(nn.Module)` dengan `__init__(self, src_vocab, tgt_vocab, d_model, "
                      "num_heads, d_ff, num_layers, max_len, prenorm=True)`, `encode`, `decode`, `forward`.",
                      "`class Transformer(nn.Module)` with `__init__(self, src_vocab, tgt_vocab, d_model, "
                      "num_heads, d_ff, num_layers, max_len, prenorm=True)`, `encode`, `decode`, `forward`."))
def tf_present(ctx):
    expect_present(ctx, TRANSFORMER)


@check("tf.construct", assignment="transformer", target=TRANSFORMER, category="api", points=1,
       needs=("tf.present",), title=bilingual("Dapat dibuat; punya sub-modul kontrak",
                                              "Can be built; has the contract's sub-modules"),
       hint=bilingual("src_embed, tgt_embed (nn.Embedding), encoder, decoder (nn.ModuleList), enc_norm, "
                      "dec_norm (nn.LayerNorm), generator (nn.Linear).",
                      "src_embed, tgt_embed (nn.Embedding), encoder, decoder (nn.ModuleList), enc_norm, "
                      "dec_norm (nn.LayerNorm), generator (nn.Linear)."))
def tf_construct(ctx):
    expect_submodules(ctx.new(TRANSFORMER, *transformer_arguments(ctx.chapter)))


@check("tf.sensitivity", assignment="transformer", target=TRANSFORMER, category="sensitivity", points=0,
       needs=("tf.construct",), title=bilingual("Logit bergantung pada sumber dan target",
                                                "The logits depend on the source and the target"),
       hint=HINT_GATE)
def tf_sensitivity(ctx):
    """Degenerate: logits that ignore the source and the target alike, or NaN everywhere."""
    c = ctx.chapter
    (src, tgt), (src2, tgt2) = model_inputs(ctx, c), model_inputs(ctx, c)

    def run():
        obj, ref = ctx.gate_module(TRANSFORMER, *transformer_arguments(c))
        inputs = ((src, tgt), (src2, tgt), (src, tgt2))
        outs = [tensors(result, 1) for result, _ in ctx.record_many([{"target": obj, "args": [s, t]}
                                                                     for s, t in inputs])]
        if None in outs:
            return
        (out,), (out_s,), (out_t,) = outs
        ref_out, ref_s, ref_t = (ctx.reference_result(ref, s, t) for s, t in inputs)
        if _probabilities(out):  # a softmax too many is tf.wiring's bug: measure in log space
            out, out_s, out_t = (o.clamp_min(1e-30).log() for o in (out, out_s, out_t))
            ref_out, ref_s, ref_t = (r.log_softmax(-1) for r in (ref_out, ref_s, ref_t))
        expect_finite_somewhere(out, LOGITS)
        # ignoring only the source (tf.memory_path) or only the target (tf.causality) is one bug
        if not fair_share(movement(out, out_s), movement(ref_out, ref_s)):
            expect_depends(out, out_t, LOGITS, (bilingual("sumber atau target", "the source or the target"),
                                                bilingual("keduanya diabaikan", "both are ignored")),
                           (ref_out, ref_t))
    computes(ctx, run)


def _probabilities(out):
    return (out.is_floating_point() and out.numel() > 0 and bool((out >= 0).all())
            and bool(torch.allclose(out.double().sum(-1), torch.ones(out.shape[:-1], dtype=torch.float64),
                                    atol=1e-4)))


TF_NEEDS = ("tf.construct", "tf.sensitivity")


@check("tf.shape", assignment="transformer", target=TRANSFORMER, category="shape", points=1, needs=TF_NEEDS,
       title=bilingual("Bentuk logit (B, Tt, V) dan memori (B, Ts, D)",
                       "Shapes of the logits (B, Tt, V) and the memory (B, Ts, D)"), hint=HINT_TF)
def tf_shape(ctx):
    c = ctx.chapter
    obj = ctx.new(TRANSFORMER, *transformer_arguments(c))
    for b, ts, tt in ((c.batch, c.length, c.decoder_length), (1, 1, 1), (1, 9, 2), (4, 2, 8)):
        src, tgt = model_inputs(ctx, c, b, ts, tt)
        ctx.tensor(ctx.call(obj, src, tgt), LOGITS, shape=(b, tt, 11))
        ctx.tensor(ctx.call(obj.method("encode"), src), MEMORY, shape=(b, ts, c.d_model))


LONGEST = 6  # the max_len tf.length_error builds with: short, so that one token more is cheap


@check("tf.length_error", assignment="transformer", target=TRANSFORMER, category="api", points=1,
       needs=TF_NEEDS, title=bilingual("ValueError yang jelas bila urutan lebih panjang dari max_len",
                                       "A clear ValueError when a sequence is longer than max_len"),
       hint=bilingual("Periksa panjangnya sebelum menambahkan PE, di encode dan di decode, mis. `if t > "
                      "self.max_len: raise ValueError(...)`; panjang tepat max_len tetap boleh.",
                      "Check the length before adding the PE, in encode and in decode, e.g. `if t > "
                      "self.max_len: raise ValueError(...)`; a length of exactly max_len is still fine."))
def tf_length_error(ctx):
    """The contract: a length over max_len is a clear ValueError (a subclass counts), in encode
    and in decode alike; exactly max_len works."""
    c = ctx.chapter
    obj = ctx.new(TRANSFORMER, *transformer_arguments(c, max_len=LONGEST))
    src, tgt = model_inputs(ctx, c, 2, LONGEST, LONGEST)
    too_long_src, too_long_tgt = model_inputs(ctx, c, 2, LONGEST + 1, LONGEST + 1)
    try:
        memory = ctx.call(obj.method("encode"), src)
        ctx.call(obj.method("decode"), tgt, memory)
    except ctx.StudentError as error:
        fail(bilingual(f"Dengan max_len = {LONGEST}, urutan sepanjang tepat {LONGEST} ditolak ({error.type}: "
                       f"{error.message[:200]}); hanya panjang di atas max_len yang harus ditolak.",
                       f"With max_len = {LONGEST}, a sequence of exactly {LONGEST} tokens is refused "
                       f"({error.type}: {error.message[:200]}); only a length over max_len must be."))
    ctx.tensor(memory, MEMORY, shape=(2, LONGEST, c.d_model))
    for name, args in (("encode", (too_long_src,)), ("decode", (too_long_tgt, memory))):
        call = f"{name}(...) dengan {LONGEST + 1} token", f"{name}(...) with {LONGEST + 1} tokens"
        try:
            ctx.call(obj.method(name), *args)
        except ctx.StudentError as error:
            if "ValueError" in (error.type, error.builtin):
                continue
            fail(bilingual(f"Dengan max_len = {LONGEST}, {call[0]} memunculkan {error.type}: {error.message[:200]}, "
                           "bukan ValueError yang menjelaskan bahwa urutannya terlalu panjang.",
                           f"With max_len = {LONGEST}, {call[1]} raised {error.type}: {error.message[:200]}, "
                           "not a ValueError saying that the sequence is too long."))
        fail(bilingual(f"Dengan max_len = {LONGEST}, {call[0]} berjalan tanpa error; urutan yang lebih panjang "
                       "dari max_len harus memunculkan ValueError.",
                       f"With max_len = {LONGEST}, {call[1]} ran without an error; a sequence longer than "
                       "max_len must raise a ValueError."))


@check("tf.distinct_blocks", assignment="transformer", target=TRANSFORMER, category="param_count", points=1,
       needs=TF_NEEDS, title=bilingual("Setiap lapisan punya bloknya sendiri", "Every layer has its own block"),
       hint=bilingual("Buat blok baru untuk tiap lapisan: `nn.ModuleList([EncoderBlock(...) for _ in "
                      "range(num_layers)])`, bukan `[blok] * num_layers`.",
                      "Build a new block for each layer: `nn.ModuleList([EncoderBlock(...) for _ in "
                      "range(num_layers)])`, not `[block] * num_layers`."))
def tf_distinct_blocks(ctx):
    obj = ctx.new(TRANSFORMER, *transformer_arguments(ctx.chapter, num_layers=3))
    owned = set(obj.params)
    for side in ("encoder", "decoder"):
        for i in range(3):
            prefix = f"{side}.{i}."
            if f"{side}.{i}" not in obj.modules:
                fail(bilingual(f"`{side}` tidak berisi {3} blok untuk num_layers = 3.",
                               f"`{side}` does not hold 3 blocks for num_layers = 3."))
            if any(p.startswith(prefix) for p in obj.aliases) and not any(p.startswith(prefix) for p in owned):
                fail(bilingual(f"`{side}.{i}` adalah objek blok yang sama dengan lapisan sebelumnya: semua "
                               "lapisan berbagi bobot.",
                               f"`{side}.{i}` is the same block object as an earlier layer: every layer "
                               "shares its weights."))


@check("tf.param_count", assignment="transformer", target=TRANSFORMER, category="param_count", points=1,
       reads_hidden=True, needs=TF_NEEDS + ("tf.distinct_blocks",),
       title=bilingual("Jumlah parameter (43.915 pada ukuran notebook)",
                       "Parameter count (43,915 at the notebook's sizes)"),
       hint=bilingual("(Vs + Vt)·D + N·(12D² + 4DF + 24D + 2F) + 4D + (D + 1)·Vt; tabel positional encoding "
                      "bukan parameter (register_buffer atau dihitung).",
                      "(Vs + Vt)·D + N·(12D² + 4DF + 24D + 2F) + 4D + (D + 1)·Vt; the positional table is not "
                      "a parameter (register_buffer, or computed)."))
def tf_param_count(ctx):
    for sizes, vocab, layers in ((ctx.chapter, (10, 11), 2), (ctx.hidden, (7, 9), 3)):
        args = transformer_arguments(sizes, *vocab, layers, 16)
        expect_param_count(ctx, ctx.new(TRANSFORMER, *args), transformer_parameters(*args),
                           "Transformer{}".format(args))


@check("tf.embedding", assignment="transformer", target=TRANSFORMER, category="numeric_vs_reference",
       points=2, needs=TF_NEEDS, title=bilingual("Embedding · √d_model + positional encoding",
                                                 "Embedding · √d_model + positional encoding"),
       hint=bilingual("Masukan blok pertama: `embed(token) * math.sqrt(d_model) + PE[:T]` (skala dulu, lalu "
                      "tambahkan PE), untuk sumber dan target.",
                      "The first block's input: `embed(tokens) * math.sqrt(d_model) + PE[:T]` (scale first, "
                      "then add PE), for the source and the target."))
def tf_embedding(ctx):
    graded_run(ctx, ctx.chapter, parts=("embedding",))


@check("tf.wiring", assignment="transformer", target=TRANSFORMER, category="numeric_vs_reference", points=2,
       needs=TF_NEEDS, title=bilingual("Rangkaian blok encoder dan decoder benar",
                                       "The encoder and decoder blocks are chained right"), hint=HINT_TF)
def tf_wiring(ctx):
    graded_run(ctx, ctx.chapter, parts=("wiring",))


@check("tf.final_norms", assignment="transformer", target=TRANSFORMER, category="numeric_vs_reference",
       points=1, needs=TF_NEEDS, title=bilingual("LayerNorm akhir enc_norm dan dec_norm dipakai",
                                                 "The final norms enc_norm and dec_norm are applied"),
       hint=bilingual("memory = enc_norm(h) setelah blok encoder terakhir; logit = generator(dec_norm(g)). "
                      "Keduanya ada, apa pun nilai prenorm.",
                      "memory = enc_norm(h) after the last encoder block; logits = generator(dec_norm(g)). "
                      "Both exist whatever prenorm is."))
def tf_final_norms(ctx):
    graded_run(ctx, ctx.chapter, parts=("norms",))


@check("tf.integration", assignment="transformer", target=TRANSFORMER, category="numeric_vs_reference",
       points=2, needs=TF_NEEDS, title=bilingual("Model utuh dengan blok Anda sendiri",
                                                 "The whole model with your own blocks"),
       hint=bilingual("Model lengkap (dengan blok Anda) harus sama dengan solusi acuan. Jika tf.wiring dan "
                      "tf.embedding lulus tetapi ini tidak, kesalahannya ada di dalam blok.",
                      "The complete model (with your blocks) must match the reference. If tf.wiring and "
                      "tf.embedding pass but this one fails, the bug is inside a block."))
def tf_integration(ctx):
    c = ctx.chapter
    for prenorm in (True, False):
        kwargs = {} if prenorm else {"prenorm": False}
        obj, ref = ctx.with_own_sublayers(TRANSFORMER, *transformer_arguments(c), **kwargs)
        src, tgt = model_inputs(ctx, c)
        ref_logits, ref_memory = ctx.reference_result(ref, src, tgt), ctx.reference_result(ref.encode, src)
        ctx.expect_close(ctx.call(obj, src, tgt), ref_logits, LOGITS)
        ctx.expect_close(ctx.call(obj.method("encode"), src), ref_memory, MEMORY)


@check("tf.encoder_ignores_target", assignment="transformer", target=TRANSFORMER, category="memory_path",
       points=1, needs=TF_NEEDS, title=bilingual("Encoder tidak membaca target", "The encoder does not read the target"),
       hint=bilingual("encode(src) hanya memakai sumber; decode memakai memori itu dan target.",
                      "encode(src) uses only the source; decode uses that memory and the target."))
def tf_encoder_ignores_target(ctx):
    c = ctx.chapter
    obj, _ = ctx.block(TRANSFORMER, *transformer_arguments(c), sublayers=paths(LAYERS))
    src, tgt = model_inputs(ctx, c)
    tgt2 = (tgt + 1 + ctx.randint(9, tgt.shape)) % 11
    runs = ctx.record_many([model_run(obj, src, t) for t in (tgt, tgt2)])
    memories = [assembly.decoder_memory(layer_calls(records, "decoder", LAYERS)[0]) for _, records in runs]
    alone = ctx.tensor(ctx.call(obj.method("encode"), src), MEMORY)
    if not ctx.same(memories[0], memories[1], "property"):
        fail(bilingual("Memori yang diterima decoder berubah ketika hanya target yang diganti: encoder "
                       "membaca target.",
                       "The memory the decoder gets changes when only the target changes: the encoder "
                       "reads the target."))
    if not ctx.same(memories[0], alone, "property"):
        fail(bilingual("forward memberi decoder memori yang lain dari encode(src).",
                       "forward gives the decoder another memory than encode(src)."))


@check("tf.causality", assignment="transformer", target=TRANSFORMER, category="causality", points=2,
       needs=TF_NEEDS, title=bilingual("Kausal: logit posisi t tidak melihat target ≥ t",
                                       "Causal: the logits at t do not see target tokens ≥ t"),
       hint=bilingual("Setiap DecoderBlock membuat mask kausalnya sendiri; jangan mencampur token target di "
                      "luar blok (mis. rata-rata atas posisi).",
                      "Each DecoderBlock builds its own causal mask; do not mix target tokens outside the "
                      "blocks (e.g. a mean over positions)."))
def tf_causality(ctx):
    c = ctx.chapter
    obj, _ = ctx.block(TRANSFORMER, *transformer_arguments(c), sublayers=paths(LAYERS))
    src, tgt = model_inputs(ctx, c)
    inputs = [tgt]
    for cut in range(tgt.shape[1]):
        changed = tgt.clone()
        changed[:, cut:] = (changed[:, cut:] + 1 + ctx.randint(9, changed[:, cut:].shape)) % 11
        inputs.append(changed)
    outs = [ctx.tensor(result, LOGITS) for result, _ in ctx.record_many([{"target": obj, "args": [src, t]}
                                                                        for t in inputs])]
    tol = ctx.tolerance("property")
    for cut, out2 in enumerate(outs[1:]):
        if out2.shape != outs[0].shape:
            fail(bilingual("Bentuk logit berubah-ubah.", "The logits' shape is not stable."))
        if not torch.allclose(out2[:, :cut], outs[0][:, :cut], rtol=tol.rtol, atol=tol.atol):
            fail(bilingual(f"Mengubah token target posisi ≥ {cut} mengubah logit posisi < {cut}: decoder "
                           "melihat masa depan.",
                           f"Changing target tokens at positions ≥ {cut} changes the logits at positions "
                           f"< {cut}: the decoder sees the future."))
        if (out2[:, cut:] - outs[0][:, cut:]).abs().max() < 1e-4:
            fail(bilingual(f"Mengubah token target posisi ≥ {cut} tidak mengubah logit di posisi itu.",
                           f"Changing target tokens at positions ≥ {cut} does not change the logits there."))


@check("tf.memory_path", assignment="transformer", target=TRANSFORMER, category="memory_path", points=1,
       needs=TF_NEEDS, title=bilingual("Sumber memengaruhi logit", "The source affects the logits"),
       hint=bilingual("decode harus meneruskan memori ke setiap blok decoder: `blok(g, memory)`.",
                      "decode must pass the memory to every decoder block: `block(g, memory)`."))
def tf_memory_path(ctx):
    c = ctx.chapter
    obj, _ = ctx.block(TRANSFORMER, *transformer_arguments(c), sublayers=paths(LAYERS))
    src, tgt = model_inputs(ctx, c)
    inputs = [src]
    for position in range(src.shape[1]):
        changed = src.clone()
        changed[:, position] = (changed[:, position] + 1 + ctx.randint(9, (src.shape[0],))) % 10
        inputs.append(changed)
    outs = [ctx.tensor(result, LOGITS) for result, _ in ctx.record_many([{"target": obj, "args": [s, tgt]}
                                                                        for s in inputs])]
    for position, out2 in enumerate(outs[1:]):
        if out2.shape != outs[0].shape or (out2 - outs[0]).abs().max() < 1e-4:
            fail(bilingual(f"Mengubah token sumber posisi {position} tidak mengubah logit.",
                           f"Changing source token {position} does not change the logits."))


@check("tf.float64", assignment="transformer", target=TRANSFORMER, category="dtype", points=1,
       needs=TF_NEEDS, title=bilingual("Bekerja setelah .double()", "Works after .double()"),
       hint=bilingual("Jangan menetapkan dtype; tabel PE mengikuti dtype embedding (`.to(x.dtype)`).",
                      "Do not hard-code a dtype; the PE table follows the embedding's dtype (`.to(x.dtype)`)."))
def tf_float64(ctx):
    """Graded from the float32 run, as the blocks' float64 checks are: where the float32 wiring
    holds, the float64 one must hold at float64 tolerance (the PE within the PE tolerance: the
    reference's table is computed in float32); where it does not (other checks name that), the
    float64 model must compute what the float32 one does, in float64."""
    c = ctx.chapter
    args = transformer_arguments(c)
    obj64, ref64 = ctx.block(TRANSFORMER, *args, sublayers=paths(LAYERS), dtype="float64")
    obj32, ref32 = ctx.block(TRANSFORMER, *args, sublayers=paths(LAYERS))
    src, tgt = model_inputs(ctx, c)
    run32, run64 = ctx.record_many([model_run(obj32, src, tgt), model_run(obj64, src, tgt)])
    out32 = ctx.tensor(run32[0], LOGITS)
    try:
        expect_assembled(ctx, run32, ref32, src, tgt, LAYERS)
        holds32 = True
    except CheckFailed:
        holds32 = False
    ctx.expect_float64_block(
        out32, holds32,
        lambda: expect_assembled(ctx, run64, ref64, src, tgt, LAYERS, tolerance="float64",
                                 pe_tolerance="positional_encoding"),
        lambda: run64[0], LOGITS)


@check("tf.hidden_config", assignment="transformer", target=TRANSFORMER, category="hidden_config", points=2,
       reads_hidden=True, needs=TF_NEEDS, title=bilingual("Benar pada ukuran lain (tersembunyi)",
                                                          "Correct on other (hidden) sizes"),
       hint=bilingual("Ambil ukuran, kosakata dan jumlah lapisan dari argumen; panjang dari `.shape`.",
                      "Take sizes, vocabularies and the number of layers from the arguments; lengths from "
                      "`.shape`."))
def tf_hidden_config(ctx):
    h = ctx.hidden
    graded_run(ctx, h, layers=3, vocab=(7, 9), max_len=16)


@check("tf.configs", assignment="transformer", target=TRANSFORMER, category="hidden_config", points=1,
       needs=TF_NEEDS, title=bilingual("Benar pada konfigurasi lain (B = 1, T = 1, Ts ≠ Tt, satu lapisan)",
                                       "Correct on other configurations (B = 1, T = 1, Ts ≠ Tt, one layer)"),
       hint=bilingual("Jangan menulis ukuran secara tetap; Ts dan Tt tidak bergantung satu sama lain.",
                      "Do not hard-code sizes; Ts and Tt are independent."))
def tf_configs(ctx):
    from autograder.config import Sizes
    for d_model, heads, d_ff, layers, vocab, b, ts, tt in ((8, 2, 12, 1, (5, 6), 1, 1, 1),
                                                          (12, 1, 20, 3, (13, 4), 2, 9, 5),
                                                          (10, 5, 6, 2, (3, 17), 4, 2, 11)):
        sizes = Sizes(d_model=d_model, num_heads=heads, d_ff=d_ff, batch=b, length=ts, decoder_length=tt)
        graded_run(ctx, sizes, layers=layers, vocab=vocab, max_len=16)
