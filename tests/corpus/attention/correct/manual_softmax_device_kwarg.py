# corpus: correct — hand-written stable softmax, causal_mask(t, device=None) built with torch.ones(..., device=...), mask dims added for a 2-D mask
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)).div(math.sqrt(q.size(-1)))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    scores = scores - scores.amax(dim=-1, keepdim=True)  # numerically stable
    e = torch.exp(scores)
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights.matmul(v), weights


def causal_mask(t, device=None):
    return torch.ones(t, t, dtype=torch.bool, device=device).triu(diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} tidak habis dibagi num_heads={num_heads}")
        self.H = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.size(1)
        dk = D // self.H
        Q = self.wq(q).reshape(B, Tq, self.H, dk).transpose(1, 2)
        K = self.wk(k).reshape(B, Tk, self.H, dk).transpose(1, 2)
        V = self.wv(v).reshape(B, Tk, self.H, dk).transpose(1, 2)
        if mask is not None and mask.dim() == 2:
            mask = mask.unsqueeze(0).unsqueeze(0)  # (1, 1, Tq, Tk)
        Z, W = scaled_dot_product_attention(Q, K, V, mask)
        Z = Z.transpose(1, 2).reshape(B, Tq, D)
        return self.wo(Z), W
