# corpus: correct — optional einops behind try/except ImportError with a view/transpose fallback (einops is not installed when grading)
import math

import torch
import torch.nn as nn

try:
    from einops import rearrange
except ImportError:  # einops tidak ada: pakai view/transpose
    rearrange = None


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    weights = scores.softmax(-1)
    return weights @ v, weights


def causal_mask(t):
    return ~torch.tril(torch.ones(t, t, dtype=torch.bool))


def split_heads(x, h):
    if rearrange is not None:
        return rearrange(x, "b t (h d) -> b h t d", h=h)
    b, t, d = x.shape
    return x.view(b, t, h, d // h).transpose(1, 2)


def merge_heads(x):
    if rearrange is not None:
        return rearrange(x, "b h t d -> b t (h d)")
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.num_heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        h = self.num_heads
        z, weights = scaled_dot_product_attention(
            split_heads(self.wq(q), h), split_heads(self.wk(k), h), split_heads(self.wv(v), h), mask)
        return self.wo(merge_heads(z)), weights
