# correct: PE filled with python loops over math.sin/math.cos into a float32 tensor, GELU written out with torch.erf, the two sub-layers run from a list of (norm, function) pairs
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------- kode yang diberikan (Tugas 1) ----------
def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
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
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        q = self._split_heads(self.wq(q))
        k = self._split_heads(self.wk(k))
        v = self._split_heads(self.wv(v))
        z, weights = scaled_dot_product_attention(q, k, v, mask)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)
        return self.wo(z), weights


# ---------- Bagian 1: positional encoding ----------
def positional_encoding(length, d_model):
    table = []
    for pos in range(length):
        row = []
        for i in range(d_model // 2):
            angle = pos / (10000 ** (2 * i / d_model))
            row.append(math.sin(angle))
            row.append(math.cos(angle))
        table.append(row)
    return torch.tensor(table, dtype=torch.float32).reshape(length, d_model)


# ---------- Bagian 2: feed-forward ----------
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = self.l1(x)
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))  # GELU eksak
        return self.l2(h)


# ---------- Bagian 3: encoder block ----------
class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        steps = [
            (self.ln1, lambda t: self.attn(t, t, t, mask)[0]),
            (self.ln2, self.ffn),
        ]
        for norm, fn in steps:
            if self.prenorm:
                x = x + fn(norm(x))
            else:
                x = norm(x + fn(x))
        return x
