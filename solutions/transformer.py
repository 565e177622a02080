"""The whole encoder-decoder Transformer, its training step, greedy decoding and the toy task.

The toy "translation": the source is a sequence of digits 0..9, the target is the same digits
reversed. Target tokens are 0..9 plus BOS = 10, which starts every decoder input.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions.decoder import DecoderBlock
from solutions.encoder import EncoderBlock, positional_encoding

SRC_VOCAB = 10  # digits 0..9
TGT_VOCAB = 11  # digits 0..9 and BOS
BOS = 10


class Transformer(nn.Module):
    """Embeddings (scaled by sqrt(d_model)) plus the sinusoidal encoding, num_layers encoder
    blocks, num_layers decoder blocks, a final LayerNorm on each side and a linear generator."""

    def __init__(self, src_vocab, tgt_vocab, d_model, num_heads, d_ff, num_layers, max_len,
                 prenorm=True):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.src_embed = nn.Embedding(src_vocab, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model)
        nn.init.normal_(self.src_embed.weight, std=d_model ** -0.5)  # as in the paper: after
        nn.init.normal_(self.tgt_embed.weight, std=d_model ** -0.5)  # * sqrt(d_model), std 1
        self.encoder = nn.ModuleList(
            [EncoderBlock(d_model, num_heads, d_ff, prenorm) for _ in range(num_layers)])
        self.decoder = nn.ModuleList(
            [DecoderBlock(d_model, num_heads, d_ff) for _ in range(num_layers)])
        self.enc_norm = nn.LayerNorm(d_model)
        self.dec_norm = nn.LayerNorm(d_model)
        self.generator = nn.Linear(d_model, tgt_vocab)
        # a fixed table, not a parameter; not saved in the state_dict
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)

    def _embed(self, embedding, tokens):
        """tokens: long (B, T) -> embedding * sqrt(d_model) + PE[:T], (B, T, D)."""
        t = tokens.size(1)
        if t > self.max_len:
            raise ValueError(f"panjang urutan {t} melebihi max_len = {self.max_len}")
        x = embedding(tokens) * math.sqrt(self.d_model)
        return x + self.pe[:t].to(x.dtype)

    def encode(self, src):
        """src: long (B, Ts) -> memory (B, Ts, D)."""
        h = self._embed(self.src_embed, src)
        for block in self.encoder:
            h = block(h)
        return self.enc_norm(h)

    def decode(self, tgt, memory):
        """tgt: long (B, Tt), memory: (B, Ts, D) -> logits (B, Tt, tgt_vocab), no softmax."""
        g = self._embed(self.tgt_embed, tgt)
        for block in self.decoder:
            g = block(g, memory)[0]  # each block builds its own causal mask
        return self.generator(self.dec_norm(g))

    def forward(self, src, tgt):
        """src: long (B, Ts), tgt: long (B, Tt) -> logits (B, Tt, tgt_vocab)."""
        return self.decode(tgt, self.encode(src))


def shift_right(y, bos):
    """y: long (B, T) -> [bos, y_0, ..., y_{T-2}], (B, T): the decoder input for teacher forcing."""
    start = torch.full_like(y[:, :1], bos)
    return torch.cat([start, y[:, :-1]], dim=1)


def train_step(model, optimizer, src, tgt_in, tgt_out):
    """One teacher-forced update on a batch; returns the loss before the update (a float).

    src: long (B, Ts); tgt_in = shift_right(tgt_out, bos) and tgt_out: long (B, Tt).
    """
    model.train()
    optimizer.zero_grad()
    logits = model(src, tgt_in)  # (B, Tt, V): every position at once
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def greedy_decode(model, src, bos, max_len):
    """src: long (B, Ts) -> long (B, max_len), the generated tokens without the BOS.

    Encodes once, then max_len times: decode the prefix, append the argmax of its last position.
    """
    model.eval()
    memory = model.encode(src)
    out = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)
    for _ in range(max_len):
        logits = model.decode(out, memory)  # (B, t, V)
        next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
        out = torch.cat([out, next_token], dim=1)
    return out[:, 1:]


def make_batch(n, length, generator=None):
    """n random digit sequences and their reversal: (src, tgt_in, tgt_out), each long (n, length).

    tgt_out is src reversed; tgt_in = shift_right(tgt_out, BOS).
    """
    src = torch.randint(0, SRC_VOCAB, (n, length), generator=generator)
    tgt_out = src.flip(1)
    return src, shift_right(tgt_out, BOS), tgt_out


def sequence_accuracy(model, src, tgt_out):
    """The share of sequences that greedy_decode gets entirely right (every token), a float.

    src: long (B, Ts), tgt_out: long (B, Tt), decoded to Tt tokens after a BOS.
    """
    decoded = greedy_decode(model, src, BOS, tgt_out.size(1))
    return (decoded == tgt_out).all(dim=1).float().mean().item()
