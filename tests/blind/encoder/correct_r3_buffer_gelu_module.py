# correct: PE built in float64 with exp/log and stack+flatten interleave, cast to float32; GELU as an nn.GELU() module; sub-layer helper with a lambda
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = scores.softmax(-1)
    return w @ v, w


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)            # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)                # (D/2,)
    inv_freq = torch.exp(-math.log(10000.0) * two_i / d_model)              # 1/10000^(2i/D)
    angle = pos * inv_freq                                                  # (L, D/2)
    pe = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(-2)        # sin,cos,sin,cos...
    return pe.to(torch.float32)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) % num_heads ({num_heads}) != 0")
        self.h, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        def heads(t):
            return t.unflatten(-1, (self.h, self.d_k)).transpose(1, 2)

        z, a = scaled_dot_product_attention(heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).flatten(2)), a


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.act = nn.GELU(approximate="none")
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(self.act(self.l1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = bool(prenorm)

    @staticmethod
    def _sublayer(x, norm, fn, pre):
        return x + fn(norm(x)) if pre else norm(x + fn(x))

    def forward(self, x, mask=None):
        h = self._sublayer(x, self.ln1, lambda t: self.attn(t, t, t, mask)[0], self.prenorm)
        return self._sublayer(h, self.ln2, self.ffn, self.prenorm)
