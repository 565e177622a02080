# correct: explicit loop over heads (per-head weight slices), float64 internals in the attention function
import math

import torch
from torch import nn


def scaled_dot_product_attention(q, k, v, mask=None):
    dtype = q.dtype
    q64, k64, v64 = q.double(), k.double(), v.double()
    scores = q64 @ k64.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask.to(torch.bool), -math.inf)
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v64
    return out.to(dtype), weights.to(dtype)


def causal_mask(t):
    idx = torch.arange(t)
    return idx[:, None] < idx[None, :]


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads, got %d and %d" % (d_model, num_heads))
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, _ = q.shape
        Tk = k.shape[1]
        Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        if mask is not None:
            mask = mask.expand(B, self.num_heads, Tq, Tk)
        outs, ws = [], []
        for i in range(self.num_heads):
            sl = slice(i * self.head_dim, (i + 1) * self.head_dim)
            m = None if mask is None else mask[:, i]
            o, w = scaled_dot_product_attention(Q[..., sl], K[..., sl], V[..., sl], m)
            outs.append(o)
            ws.append(w)
        return self.wo(torch.cat(outs, dim=-1)), torch.stack(ws, dim=1)
