# corpus: correct — PE built in float64 with pow and cast with .to(torch.float32); nn.GELU(approximate="none"); a generic residual helper used for both sub-layers
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.size(-1) ** -0.5
    scores = torch.matmul(q * scale, k.transpose(-2, -1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(-1)
    return torch.matmul(weights, v), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} not divisible by num_heads={num_heads}")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b = q.size(0)
        heads = [lin(t).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
                 for lin, t in ((self.wq, q), (self.wk, k), (self.wv, v))]
        z, w = scaled_dot_product_attention(*heads, mask=mask)
        z = z.transpose(1, 2).contiguous().view(b, -1, self.num_heads * self.d_k)
        return self.wo(z), w


def positional_encoding(length, d_model):
    pe = torch.empty(length, d_model, dtype=torch.float64)
    position = torch.arange(length, dtype=torch.float64).unsqueeze(-1)
    exponent = torch.arange(0, d_model, 2, dtype=torch.float64) / d_model
    angle = position / torch.pow(10000.0, exponent)
    pe[:, ::2] = angle.sin()
    pe[:, 1::2] = angle.cos()
    return pe.to(torch.float32)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.act = nn.GELU(approximate="none")
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(self.act(self.l1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm: bool = False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def _residual(self, x, norm, sublayer):
        if self.prenorm:
            return x + sublayer(norm(x))
        return norm(x + sublayer(x))

    def forward(self, x, mask=None):
        x = self._residual(x, self.ln1, lambda t: self.attn(t, t, t, mask)[0])
        return self._residual(x, self.ln2, self.ffn)
