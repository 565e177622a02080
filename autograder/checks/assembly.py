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
from autograder.checks.registry import fail
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


def seed_of(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())
