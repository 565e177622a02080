# corpus: mutant — scaled_dot_product_attention transposes fixed axes (k.transpose(1, 2) for 3-D, (2, 3) for 4-D): right for (B, T, d) and (B, H, T, d), wrong for any other number of leading axes
# expect-fail: sdpa.sizes
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.causal_masking, mha.numeric, mha.integration, mha.sizes
# expect-message: sdpa.sizes: any number of leading axes

import math
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    kt = k.transpose(1, 2) if k.dim() == 3 else k.transpose(2, 3)
    scores = q @ kt / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]
        qq = self.wq(q).view(b, tq, self.num_heads, self.d_k).transpose(1, 2)
        kk = self.wk(k).view(b, tk, self.num_heads, self.d_k).transpose(1, 2)
        vv = self.wv(v).view(b, tk, self.num_heads, self.d_k).transpose(1, 2)
        z, w = scaled_dot_product_attention(qq, kk, vv, mask)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)
        return self.wo(z), w
