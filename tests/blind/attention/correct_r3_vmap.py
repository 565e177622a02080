# correct: torch.func.vmap over the head axis (mask expanded to (B,H,Tq,Tk) first), torch.where with finfo(dtype).min, unflatten/flatten
import math

import torch
import torch.nn as nn
from torch.func import vmap


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        very_negative = torch.finfo(scores.dtype).min
        scores = torch.where(mask, torch.full_like(scores, very_negative), scores)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}"
            )
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, _ = q.shape
        Tk = k.shape[1]
        H = self.num_heads
        # (B, T, H, d_k): heads stay on axis 2, vmap maps over it
        Q = self.wq(q).unflatten(-1, (H, self.d_k))
        K = self.wk(k).unflatten(-1, (H, self.d_k))
        V = self.wv(v).unflatten(-1, (H, self.d_k))
        if mask is None:
            per_head = vmap(
                lambda a, b, c: scaled_dot_product_attention(a, b, c),
                in_dims=(2, 2, 2),
                out_dims=(2, 1),
            )
            out, weights = per_head(Q, K, V)
        else:
            m = mask.to(device=q.device).expand(B, H, Tq, Tk)
            per_head = vmap(
                scaled_dot_product_attention, in_dims=(2, 2, 2, 1), out_dims=(2, 1)
            )
            out, weights = per_head(Q, K, V, m)
        # out: (B, Tq, H, d_k) -> (B, Tq, D)
        return self.wo(out.flatten(start_dim=2)), weights
