# correct: PE from exp(-log(10000) * 2i / d) in float64 interleaved with torch.stack(...).flatten, GELU as an nn.GELU module, one residual helper for both pre-LN and post-LN
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
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    angle = pos * freq  # (length, d_model/2)
    # [sin, cos] per frekuensi lalu diratakan: kolom 2i = sin, kolom 2i+1 = cos
    pe = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(start_dim=1)
    return pe.to(torch.float32)


# ---------- Bagian 2: feed-forward ----------
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.act = nn.GELU()  # bentuk erf (approximate='none')
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(self.act(self.l1(x)))


# ---------- Bagian 3: encoder block ----------
class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = bool(prenorm)

    def _residual(self, x, sublayer, norm):
        if self.prenorm:
            return x + sublayer(norm(x))
        return norm(x + sublayer(x))

    def forward(self, x, mask=None):
        x = self._residual(x, lambda t: self.attn(t, t, t, mask)[0], self.ln1)
        return self._residual(x, self.ffn, self.ln2)
