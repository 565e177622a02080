# correct: attention math done internally in float64 then cast back to the input dtype; blocked scores filled with finfo.min; pre-LN and post-LN written as two separate forward methods picked in forward()
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    dtype = q.dtype
    q64, k64, v64 = q.double(), k.double(), v.double()
    scores = q64 @ k64.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, torch.finfo(torch.float64).min)
    weights = scores.softmax(dim=-1)
    out = weights @ v64
    return out.to(dtype), weights.to(dtype)


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


def positional_encoding(length, d_model):
    pe = torch.empty(length, d_model, dtype=torch.float64)
    pos = torch.arange(length, dtype=torch.float64)
    for j in range(0, d_model, 2):
        angle = pos / (10000.0 ** (j / d_model))
        pe[:, j] = torch.sin(angle)
        pe[:, j + 1] = torch.cos(angle)
    return pe.to(torch.float32)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be a multiple of num_heads")
        self.h = num_heads
        self.dk = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.shape[1]
        Q = self.wq(q).reshape(B, Tq, self.h, self.dk).permute(0, 2, 1, 3)
        K = self.wk(k).reshape(B, Tk, self.h, self.dk).permute(0, 2, 1, 3)
        V = self.wv(v).reshape(B, Tk, self.h, self.dk).permute(0, 2, 1, 3)
        ctx, w = scaled_dot_product_attention(Q, K, V, mask)
        ctx = ctx.permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.wo(ctx), w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x), approximate="none"))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def _forward_post(self, x, mask):
        attn_out, _ = self.attn(x, x, x, mask)
        h = self.ln1(x + attn_out)
        return self.ln2(h + self.ffn(h))

    def _forward_pre(self, x, mask):
        normed = self.ln1(x)
        attn_out, _ = self.attn(normed, normed, normed, mask)
        h = x + attn_out
        return h + self.ffn(self.ln2(h))

    def forward(self, x, mask=None):
        if self.prenorm:
            return self._forward_pre(x, mask)
        return self._forward_post(x, mask)
