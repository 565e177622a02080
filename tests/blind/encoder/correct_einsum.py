# correct: einsum everywhere, -1e9 fill, heads via unflatten/flatten, mask via torch.where
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

NEG = -1e9


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...id,...jd->...ij", q, k) * (q.shape[-1] ** -0.5)
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, NEG), scores)
    weights = scores.softmax(dim=-1)
    return torch.einsum("...ij,...jd->...id", weights, v), weights


def causal_mask(t):
    return torch.ones(t, t).triu(1).bool()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if num_heads <= 0 or d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, q, k, v, mask=None):
        Q = self.wq(q).unflatten(-1, (self.h, self.d_k))
        K = self.wk(k).unflatten(-1, (self.h, self.d_k))
        V = self.wv(v).unflatten(-1, (self.h, self.d_k))
        scores = torch.einsum("bqhd,bkhd->bhqk", Q, K) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask, NEG)
        weights = torch.softmax(scores, dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", weights, V).flatten(-2)
        return self.wo(ctx), weights


def positional_encoding(length, d_model):
    pos = torch.arange(length).float()[:, None]
    inv_freq = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    ang = pos * inv_freq[None, :]
    return torch.stack([ang.sin(), ang.cos()], dim=-1).reshape(length, d_model)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.act = nn.GELU()
        self.l2 = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.l2(self.drop(self.act(self.l1(x))))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = bool(prenorm)

    def _sa(self, y, mask):
        return self.attn(y, y, y, mask)[0]

    def forward(self, x, mask=None):
        if not self.prenorm:
            x = self.ln1(x + self._sa(x, mask))
            return self.ln2(x + self.ffn(x))
        x = x + self._sa(self.ln1(x), mask)
        x = x + self.ffn(self.ln2(x))
        return x
