"""What the checks of assignment 4 (the whole Transformer) share: token inputs, the given
models the student's functions are called on, and the contract's wiring recomputed from the
recorded calls of the student's own blocks.

The assembly is graded around the student's blocks the way a block is graded around its
sub-layers (``context.Context.record``): the encoder and decoder blocks are recorded, and what
the model does between them (embeddings, √d_model, the positional encoding, the chain of blocks,
the memory, the final norms, the generator) is recomputed here from what the blocks themselves
returned. A bug inside a block costs only ``tf.integration``.

``train_step`` and ``greedy_decode`` are graded on models the grader gives (``GIVEN``: the
reference Transformer and its blocks, and two scripted models), built in the worker from the
grader's own source (``Session.define``), so a bug in the student's Transformer costs nothing
there.
"""

import math
import zlib
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F

import solutions
from autograder.checks.recorded import layer_norm
from autograder.checks.registry import fail
from autograder.checks.targets import LAYERS, TRANSFORMER, transformer_arguments
from autograder.texts import bilingual

LOGITS = bilingual("Logit", "The logits")
MEMORY = bilingual("Memori (keluaran encode)", "The memory (encode's output)")
DECODED = bilingual("Hasil greedy_decode", "greedy_decode's result")
BOS = 10

# Scripted models for greedy_decode: the next token is known in closed form. ``ScriptedPrefix``
# is causal (position t reads the target tokens up to t); ``ScriptedWhole`` is not (every
# position reads the whole target): only there does taking the argmax of every position instead
# of the last one, after decoding the whole prefix, give another sequence.
SCRIPTED = '''
class ScriptedPrefix(nn.Module):
    causal = True

    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab
        self.unused = nn.Parameter(torch.zeros(1))

    def encode(self, src):
        return src.to(torch.float32).unsqueeze(-1)

    def _mix(self, tgt):
        return tgt.cumsum(1) if self.causal else tgt.sum(1, keepdim=True).expand_as(tgt)

    def decode(self, tgt, memory):
        positions = torch.arange(tgt.size(1), device=tgt.device)
        read = memory[:, positions % memory.size(1), 0].long()
        token = (read + 3 * self._mix(tgt) + positions) % self.vocab
        ramp = torch.linspace(0.0, 0.1, self.vocab, device=tgt.device)
        return F.one_hot(token, self.vocab).to(memory.dtype) * 4.0 + ramp

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src))


class ScriptedWhole(ScriptedPrefix):
    causal = False
'''


@lru_cache(maxsize=1)
def given_source():
    """The reference blocks and Transformer as one plain module, and the scripted models."""
    folder = Path(solutions.__file__).parent
    parts = []
    for name in ("attention", "encoder", "decoder", "transformer"):
        text = (folder / f"{name}.py").read_text(encoding="utf-8")
        parts.append("\n".join(line for line in text.splitlines()
                               if not line.startswith(("from solutions", "import solutions"))))
    return "\n\n".join(parts) + "\n" + SCRIPTED


@lru_cache(maxsize=1)
def scripted_classes():
    """The scripted models, here in the trusted process (the same source the worker runs)."""
    namespace = {"torch": torch, "nn": torch.nn, "F": F}
    exec(compile(SCRIPTED, "<scripted>", "exec"), namespace)
    return namespace["ScriptedPrefix"], namespace["ScriptedWhole"]


def tokens(ctx, batch, length, vocab):
    """Random token ids (long), seeded by the check."""
    return ctx.randint(vocab, (batch, length))


def reference_model(ctx, args, prenorm=True, dtype=None):
    """The shared reference Transformer (its embeddings drawn as the contract initialises them;
    LayerNorms and biases random) and its weights; read only."""
    kwargs = {} if prenorm else {"prenorm": False}
    return ctx._shared_entry("Transformer", tuple(args), kwargs, dtype)


def embed(ref, table, tokens_):
    """The contract's first step: table[tokens] * sqrt(d_model) + PE[:T]."""
    weight = table.weight
    d_model = weight.shape[1]
    pe = solutions.positional_encoding(tokens_.shape[1], d_model).to(weight.dtype)
    return weight[tokens_] * math.sqrt(d_model) + pe


def layer_calls(records, side, layers):
    """The calls of the student's encoder (or decoder) blocks, in order: one per layer (a block
    object used for several layers is called once per layer, as it is)."""
    names = {f"{side}.{i}" for i in range(layers)}
    calls = [c for c in records.calls if names & set(c.names)]
    if len(calls) != layers:
        fail(bilingual(f"Blok-blok `self.{side}` dipanggil {len(calls)} kali dalam satu forward; "
                       f"seharusnya {layers} kali, sekali per lapisan, berurutan.",
                       f"The blocks of `self.{side}` are called {len(calls)} times in one forward; "
                       f"they should be called {layers} times, once per layer, in order."))
    return calls


def block_input(call, slots=("x",)):
    values = call.arguments(slots + (("memory",) if "memory" not in slots else ()))
    return values.get(slots[0])


def decoder_memory(call):
    values = call.arguments(("x", "memory"))
    return values.get("memory")


def block_output(ctx, call, what):
    out = call.main if isinstance(call.output, (tuple, list)) else call.output
    return ctx.tensor(out, what)


def expect_embedding(ctx, got, ref, table, tokens_, side, tolerance="float32", pe_tolerance=None):
    """The first block's input is the contract's embedding; names the usual mistakes."""
    d_model = table.weight.shape[1]
    expected = embed(ref, table, tokens_)
    if isinstance(got, torch.Tensor) and got.shape == expected.shape:
        if ctx.same(got, expected, pe_tolerance or tolerance):
            return
        weight = table.weight
        pe = solutions.positional_encoding(tokens_.shape[1], d_model).to(weight.dtype)
        looked_up = weight[tokens_]
        names = {
            "scale": (looked_up + pe, bilingual(
                "embedding tidak dikalikan √d_model", "the embedding is not multiplied by √d_model")),
            "pe": (looked_up * math.sqrt(d_model), bilingual(
                "positional encoding tidak ditambahkan", "the positional encoding is not added")),
            "order": ((looked_up + pe) * math.sqrt(d_model), bilingual(
                "√d_model dikalikan setelah positional encoding ditambahkan (skala dulu, baru tambah PE)",
                "√d_model multiplies the sum with the positional encoding (scale first, then add PE)")),
        }
        mine, other = ("src_embed", "tgt_embed") if table is ref.src_embed else ("tgt_embed", "src_embed")
        other_table = getattr(ref, other).weight
        if int(tokens_.max()) < other_table.shape[0]:  # a copy-paste of the other side's line
            names["table"] = (other_table[tokens_] * math.sqrt(d_model) + pe, bilingual(
                f"token dicari di `{other}`, bukan di `{mine}`", f"the tokens are looked up in `{other}`, "
                f"not in `{mine}`"))
        for value, said in names.values():
            if ctx.same(got, value, pe_tolerance or tolerance):
                fail(bilingual(f"Masukan blok {side} pertama: {said.id}.",
                               f"The input of the first {side} block: {said.en}."))
    fail(bilingual(f"Masukan blok {side} pertama bukan embedding(token) · √d_model + PE[:T].",
                   f"The input of the first {side} block is not embedding(tokens) · √d_model + PE[:T]."))


def expect_chain(ctx, calls, side, tolerance="float32", verify=True):
    """Each block gets what the block before it returned (with ``verify``); returns the last
    block's output."""
    previous = None
    for index, call in enumerate(calls):
        if verify and previous is not None and not ctx.same(block_input(call), previous, tolerance):
            fail(bilingual(f"Blok {side} ke-{index} tidak menerima keluaran blok ke-{index - 1}: "
                           "setiap blok harus memproses hasil blok sebelumnya (h = blok(h)).",
                           f"{side.capitalize()} block {index} does not receive the output of block "
                           f"{index - 1}: each block must process the previous block's result (h = block(h))."))
        previous = block_output(ctx, call, bilingual(f"Keluaran blok {side} ke-{index}",
                                                     f"The output of {side} block {index}"))
    return previous


# -- the model, graded from its recorded blocks -----------------------------------------------------
def paths(layers):
    return tuple(f"{side}.{i}" for side in ("encoder", "decoder") for i in range(layers))


def model_inputs(ctx, sizes, batch=None, t_src=None, t_tgt=None, vocab=(10, 11)):
    batch = batch or sizes.batch
    return (tokens(ctx, batch, t_src or sizes.length, vocab[0]),
            tokens(ctx, batch, t_tgt or sizes.decoder_length, vocab[1]))


def model_run(obj, src, tgt, layers=LAYERS):
    return {"target": obj, "args": [src, tgt], "modules": paths(layers)}


def expect_assembled(ctx, run, ref, src, tgt, layers, parts=("embedding", "wiring", "norms"),
                     tolerance="float32", pe_tolerance=None):
    """The logits the contract's wiring gives from the model's own blocks' results (records),
    checking ``parts``; fails naming the first step that differs. Returns the logits."""
    result, records = run
    logits = ctx.tensor(result, LOGITS)
    enc, dec = layer_calls(records, "encoder", layers), layer_calls(records, "decoder", layers)
    if "embedding" in parts:
        expect_embedding(ctx, block_input(enc[0]), ref, ref.src_embed, src, "encoder",
                                  tolerance, pe_tolerance)
        expect_embedding(ctx, block_input(dec[0]), ref, ref.tgt_embed, tgt, "decoder",
                                  tolerance, pe_tolerance)
        if parts == ("embedding",):
            return logits
    chained = "wiring" in parts  # the chain is tf.wiring's to grade
    h = expect_chain(ctx, enc, "encoder", tolerance, verify=chained)
    g = expect_chain(ctx, dec, "decoder", tolerance, verify=chained)
    memory = layer_norm(h, ref.enc_norm)
    for index, call in enumerate(dec):
        given = decoder_memory(call)
        if ctx.same(given, memory, tolerance):
            continue
        if ctx.same(given, h, tolerance):
            if "norms" in parts:
                fail(bilingual("Memori yang diterima decoder tidak dinormalkan dengan enc_norm: "
                               "memory = enc_norm(h) setelah blok encoder terakhir.",
                               "The memory the decoder gets is not normalised by enc_norm: memory = "
                               "enc_norm(h) after the last encoder block."))
            continue
        if "wiring" in parts:
            fail(bilingual(f"Blok decoder ke-{index} tidak menerima memori dari encoder (keluaran blok "
                           "encoder terakhir, setelah enc_norm); setiap blok decoder mendapat memori yang sama.",
                           f"Decoder block {index} does not receive the encoder's memory (the last encoder "
                           "block's output after enc_norm); every decoder block gets the same memory."))
    gen = ref.generator
    expected = torch.nn.functional.linear(layer_norm(g, ref.dec_norm), gen.weight.to(g.dtype),
                                          gen.bias.to(g.dtype))
    if logits.shape == expected.shape and ctx.same(logits, expected, tolerance):
        return logits
    unnormed = torch.nn.functional.linear(g, gen.weight.to(g.dtype), gen.bias.to(g.dtype))
    if logits.shape == expected.shape and ctx.same(logits, unnormed, tolerance):
        if "norms" in parts:
            fail(bilingual("dec_norm tidak dipakai: logit = generator(dec_norm(g)).",
                           "dec_norm is not applied: logits = generator(dec_norm(g))."))
        return logits
    if "wiring" in parts:
        if logits.shape == expected.shape and ctx.same(logits, expected.softmax(-1), tolerance):
            fail(bilingual("Model mengembalikan probabilitas (softmax); kontrak meminta logit mentah.",
                           "The model returns probabilities (softmax); the contract asks for raw logits."))
        fail(bilingual("Logit bukan generator(dec_norm(g)) dari keluaran blok decoder terakhir.",
                       "The logits are not generator(dec_norm(g)) of the last decoder block's output."))
    return logits


def graded_run(ctx, sizes, layers=LAYERS, parts=("embedding", "wiring", "norms"), dtype=None,
               vocab=(10, 11), batch=None, t_src=None, t_tgt=None, max_len=32, tolerance="float32",
               pe_tolerance=None):
    args = transformer_arguments(sizes, vocab[0], vocab[1], layers, max_len)
    obj, ref = ctx.block(TRANSFORMER, *args, sublayers=paths(layers), dtype=dtype)
    src, tgt = model_inputs(ctx, sizes, batch, t_src, t_tgt, vocab)
    run = ctx.record_many([model_run(obj, src, tgt, layers)])[0]
    return expect_assembled(ctx, run, ref, src, tgt, layers, parts, tolerance, pe_tolerance)


def seed_of(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())
