# corpus: mutant — greedy_decode fills a BOS + max_len buffer, then returns its first max_len columns (the BOS, not the last token)
# expect-fail: greedy.values
# expect-pass: greedy.shape, greedy.last_position, train.update, tf.integration
# expect-message: greedy.values: starts with the BOS

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# -- given (the notebook's read-only cell: the blocks of assignments 1-3) --
def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d_k)) v.

    q: (..., Tq, d_k), k: (..., Tk, d_k), v: (..., Tk, d_v);
    mask: bool, broadcastable to (..., Tq, Tk), True = blocked.
    Returns out (..., Tq, d_v) and weights (..., Tq, Tk).
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # tiap baris: distribusi atas kunci (key)
    return weights @ v, weights


def causal_mask(t):
    """(t, t) bool mask, True strictly above the diagonal: query i may not see keys j > i."""
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key and value inputs.

    Splits d_model into num_heads heads of size d_k = d_model // num_heads.
    """

    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model ({d_model}) harus habis dibagi num_heads ({num_heads})"
            )
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _split_heads(self, x):
        """(B, T, D) -> (B, H, T, d_k)"""
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        """q: (B, Tq, D), k and v: (B, Tk, D); mask broadcastable to (B, H, Tq, Tk).

        Returns out (B, Tq, D) and weights (B, H, Tq, Tk).
        """
        b, tq, d = q.shape
        q = self._split_heads(self.wq(q))
        k = self._split_heads(self.wk(k))
        v = self._split_heads(self.wv(v))
        z, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, Tq, d_k)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)  # head-head dijajarkan kembali
        return self.wo(z), weights


def positional_encoding(length, d_model):
    """Sinusoidal encoding, float32 (length, d_model).

    PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same angle).
    """
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)  # (length, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = pos / 10000 ** (two_i / d_model)  # (length, d_model/2)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class FeedForward(nn.Module):
    """Linear(d_model, d_ff) -> exact GELU -> Linear(d_ff, d_model), applied to every token."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        """x: (B, T, D) -> (B, T, D)"""
        return self.l2(F.gelu(self.l1(x)))


class EncoderBlock(nn.Module):
    """Self-attention and feed-forward, each wrapped in a residual and a LayerNorm.

    prenorm=False: post-LN of the 2017 paper, LN(x + sublayer(x)).
    prenorm=True:  pre-LN, x + sublayer(LN(x)).
    """

    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        """x: (B, T, D) -> (B, T, D)"""
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, mask)[0]
            return h + self.ffn(self.ln2(h))
        h = self.ln1(x + self.attn(x, x, x, mask)[0])
        return self.ln2(h + self.ffn(h))


class DecoderBlock(nn.Module):
    """Three pre-LN sub-layers, each with a residual connection."""

    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)

    def forward(self, x, memory):
        """x: (B, Tdec, D), memory: (B, Tsrc, D).

        Returns out (B, Tdec, D) and cross_weights (B, H, Tdec, Tsrc).
        """
        mask = causal_mask(x.size(1)).to(x.device)  # token tidak pernah melihat token sesudahnya
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, mask)[0]
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        return h + self.ffn(self.ln3(h)), cross_weights


# -- the student's code --
def shift_right(y, bos):
    start = torch.full_like(y[:, :1], bos)
    return torch.cat([start, y[:, :-1]], dim=1)


class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model, num_heads, d_ff, num_layers, max_len, prenorm=True):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.src_embed = nn.Embedding(src_vocab, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model)
        nn.init.normal_(self.src_embed.weight, std=d_model ** -0.5)
        nn.init.normal_(self.tgt_embed.weight, std=d_model ** -0.5)
        self.encoder = nn.ModuleList([EncoderBlock(d_model, num_heads, d_ff, prenorm) for _ in range(num_layers)])
        self.decoder = nn.ModuleList([DecoderBlock(d_model, num_heads, d_ff) for _ in range(num_layers)])
        self.enc_norm = nn.LayerNorm(d_model)
        self.dec_norm = nn.LayerNorm(d_model)
        self.generator = nn.Linear(d_model, tgt_vocab)
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)

    def embed(self, table, tokens):
        if tokens.size(1) > self.max_len:
            raise ValueError("sequence longer than max_len")
        x = table(tokens) * math.sqrt(self.d_model)
        return x + self.pe[: tokens.size(1)].to(x.dtype)

    def encode(self, src):
        h = self.embed(self.src_embed, src)
        for block in self.encoder:
            h = block(h)
        return self.enc_norm(h)

    def decode(self, tgt, memory):
        g = self.embed(self.tgt_embed, tgt)
        for block in self.decoder:
            g, _ = block(g, memory)
        return self.generator(self.dec_norm(g))

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src))


def train_step(model, optimizer, src, tgt_in, tgt_out):
    model.train()
    optimizer.zero_grad()
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def greedy_decode(model, src, bos, max_len):
    model.eval()
    with torch.no_grad():
        memory = model.encode(src)
        buffer = torch.full((src.size(0), max_len + 1), bos, dtype=torch.long, device=src.device)
        for step in range(max_len):
            logits = model.decode(buffer[:, :step + 1], memory)
            buffer[:, step + 1] = logits[:, -1].argmax(dim=-1)
    return buffer[:, :max_len]
