# corpus: correct — softmax first, then zero the blocked weights and renormalise (equal to the masked softmax); finfo.min fill in MHA; in-place ops only on own tensors
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    scores /= math.sqrt(q.shape[-1])  # in place, but on a tensor this function created
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.full((t, t), True), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        q = self.wq(q).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)
        k = self.wk(k).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)
        v = self.wv(v).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)
        scores.mul_(1.0 / math.sqrt(self.d_k))
        if mask is not None:
            scores.masked_fill_(mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        z = (weights @ v).transpose(1, 2).flatten(2)
        return self.wo(z), weights
