# correct: python loop over heads slicing the projections, hand-written stable softmax (exp of score minus row max), -1e9 fill via torch.where, causal mask from a nested list
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BLOCKED = -1e9


def softmax_last(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        scores = torch.where(mask, torch.tensor(BLOCKED, dtype=scores.dtype), scores)
    weights = softmax_last(scores)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    rows = [[j > i for j in range(t)] for i in range(t)]
    return torch.tensor(rows, dtype=torch.bool).reshape(t, t)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model harus kelipatan num_heads")
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        outs, all_w = [], []
        for i in range(self.n_heads):
            s = slice(i * self.head_dim, (i + 1) * self.head_dim)
            m = mask
            if mask is not None and mask.dim() >= 3:
                # sumbu head dari mask: dim -3 (panjangnya 1 atau H)
                h = i if mask.shape[-3] > 1 else 0
                m = mask.select(-3, h)
            o, w = scaled_dot_product_attention(Q[..., s], K[..., s], V[..., s], m)
            outs.append(o)
            all_w.append(w)
        return self.wo(torch.cat(outs, dim=-1)), torch.stack(all_w, dim=1)
