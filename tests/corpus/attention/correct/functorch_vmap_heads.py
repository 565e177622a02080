# corpus: correct — attention for one head written for 2-D tensors and mapped over batch and heads with torch.func.vmap; the mask is broadcast before mapping
import math

import torch
import torch.nn as nn
from torch.func import vmap


def _one_head(q, k, v, mask):
    """q: (Tq, d_k), k: (Tk, d_k), v: (Tk, d_v), mask: (Tq, Tk) bool (True = blocked)."""
    scores = q @ k.T / math.sqrt(q.shape[-1])
    scores = torch.where(mask, torch.full_like(scores, -math.inf), scores)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def scaled_dot_product_attention(q, k, v, mask=None):
    if mask is None:
        mask = torch.zeros(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device)
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], mask.shape[:-2])
    tq, tk = q.shape[-2], k.shape[-2]
    q = q.expand(*lead, tq, q.shape[-1]).reshape(-1, tq, q.shape[-1])
    k = k.expand(*lead, tk, k.shape[-1]).reshape(-1, tk, k.shape[-1])
    v = v.expand(*lead, tk, v.shape[-1]).reshape(-1, tk, v.shape[-1])
    mask = mask.expand(*lead, tq, tk).reshape(-1, tq, tk)
    out, weights = vmap(_one_head)(q, k, v, mask)
    return out.reshape(*lead, tq, v.shape[-1]), weights.reshape(*lead, tq, tk)


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]
        Q = self.wq(q).view(b, tq, self.h, self.d_k)
        K = self.wk(k).view(b, tk, self.h, self.d_k)
        V = self.wv(v).view(b, tk, self.h, self.d_k)
        if mask is None:
            mask = torch.zeros(tq, tk, dtype=torch.bool, device=q.device)
        mask = mask.expand(b, self.h, tq, tk)
        # map over the batch, then over the heads (dimension 2 of Q, K, V; 1 of the mask)
        per_head = vmap(scaled_dot_product_attention, in_dims=(1, 1, 1, 0), out_dims=(1, 0))
        per_batch = vmap(per_head, in_dims=(0, 0, 0, 0), out_dims=(0, 0))
        z, weights = per_batch(Q, K, V, mask)  # z: (B, Tq, H, d_k), weights: (B, H, Tq, Tk)
        return self.wo(z.reshape(b, tq, d)), weights
