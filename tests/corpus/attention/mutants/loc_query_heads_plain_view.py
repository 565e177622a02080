# corpus: mutant — the queries are split into heads by a plain view to (B, H, Tq, d_k), no transpose (keys and values are split right); einsum style
# expect-fail: mha.numeric, mha.integration
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    logits = torch.einsum("...qd,...kd->...qk", q, k) / q.size(-1) ** 0.5
    if mask is not None:
        logits = logits.masked_fill(mask, -math.inf)
    probs = logits.softmax(-1)
    return torch.einsum("...qk,...kd->...qd", probs, v), probs


def causal_mask(t):
    return torch.ones(t, t).triu(1).bool()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.size(1)
        H, dk = self.num_heads, self.d_k
        Qh = self.wq(q).view(B, H, Tq, dk)
        Kh = self.wk(k).view(B, Tk, H, dk).permute(0, 2, 1, 3)
        Vh = self.wv(v).view(B, Tk, H, dk).permute(0, 2, 1, 3)
        out, probs = scaled_dot_product_attention(Qh, Kh, Vh, mask)
        merged = out.permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.wo(merged), probs
