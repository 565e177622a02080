# corpus: mutant — the frequencies' base is 1000 instead of 10000 (torch.pow(1000.0, 2i / d_model))
# expect-fail: pe.values
# expect-pass: pe.shape, pe.dtype, ffn.numeric, enc.postln_wiring, enc.preln_wiring
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        q = self.wq(q).view(b, tq, self.num_heads, self.d_k).transpose(1, 2)
        k = self.wk(k).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        v = self.wv(v).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        z, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    div_term = torch.pow(1000.0, two_i / d_model)
    angle = pos / div_term
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        hidden = self.l1(x)
        return self.l2(F.gelu(hidden))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, mask)[0]
            return h + self.ffn(self.ln2(h))
        a = self.attn(x, x, x, mask)[0]
        h = self.ln1(x + a)
        return self.ln2(h + self.ffn(h))
