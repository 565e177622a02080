# corpus: correct — PE interleaved with torch.stack(...).flatten; GELU written with erf; dropout in the residual paths (inactive in eval) with extra kwarg dropout=0.1; mask passed as keyword
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, float("-inf")), scores)
    attn = torch.softmax(scores, dim=-1)
    return torch.einsum("...ij,...jd->...id", attn, v), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.h = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        split = lambda t: t.reshape(B, t.shape[1], self.h, D // self.h).permute(0, 2, 1, 3)
        out, attn = scaled_dot_product_attention(split(self.wq(q)), split(self.wk(k)), split(self.wv(v)), mask)
        out = self.drop(out).permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.wo(out), attn


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = 1.0 / (10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model))
    angles = pos * freq[None, :]
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(start_dim=1)


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.l2(self.dropout(gelu(self.l1(x))))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False, dropout=0.1):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.drop1 = nn.Dropout(dropout)
        self.drop2 = nn.Dropout(dropout)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        if self.prenorm:
            normed = self.ln1(x)
            x = x + self.drop1(self.attn(normed, normed, normed, mask=mask)[0])
            return x + self.drop2(self.ffn(self.ln2(x)))
        x = self.ln1(x + self.drop1(self.attn(x, x, x, mask=mask)[0]))
        return self.ln2(x + self.drop2(self.ffn(x)))
