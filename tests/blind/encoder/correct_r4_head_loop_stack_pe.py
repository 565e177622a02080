# correct: heads computed in a Python loop over column slices of the projections (scores stacked to (B,H,Tq,Tk) before masking); mask applied as an additive bias via torch.where; PE interleaved with torch.stack(...).flatten
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.shape[-1] ** -0.5
    scores = torch.einsum("...qd,...kd->...qk", q, k) * scale
    if mask is not None:
        neg = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
        scores = scores + torch.where(mask, neg, torch.zeros((), dtype=scores.dtype, device=scores.device))
    w = F.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", w, v), w


def causal_mask(t):
    idx = torch.arange(t)
    return idx[None, :] > idx[:, None]


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float64)
    freqs = 1.0 / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    ang = torch.outer(pos, freqs)
    pe = torch.stack([ang.sin(), ang.cos()], dim=-1).flatten(-2)
    return pe.float()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads={num_heads} does not divide d_model={d_model}")
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        scores = []
        for h in range(self.num_heads):
            sl = slice(h * self.d_head, (h + 1) * self.d_head)
            scores.append(Q[..., sl] @ K[..., sl].transpose(-2, -1))
        scores = torch.stack(scores, dim=1) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        heads = []
        for h in range(self.num_heads):
            sl = slice(h * self.d_head, (h + 1) * self.d_head)
            heads.append(weights[:, h] @ V[..., sl])
        return self.wo(torch.cat(heads, dim=-1)), weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.act = nn.GELU()

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

    def forward(self, x, mask=None):
        if not self.prenorm:
            x = self.ln1(x + self.attn(x, x, x, mask)[0])
            x = self.ln2(x + self.ffn(x))
            return x
        y = self.ln1(x)
        x = x + self.attn(y, y, y, mask)[0]
        y = self.ln2(x)
        x = x + self.ffn(y)
        return x
