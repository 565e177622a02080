# corpus: correct — scaled_dot_product_attention dispatches on the mask's dtype (none, bool True = blocked, float additive) to small helpers and ends with `raise NotImplementedError` for any other dtype; causal mask from torch.tril of ones, negated
import math

import torch
import torch.nn as nn


def _attend(scores, v):
    w = torch.softmax(scores, dim=-1)
    return w @ v, w


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = _scores(q, k)
    if mask is None:
        return _attend(scores, v)
    if mask.dtype == torch.bool:
        return _attend(scores.masked_fill(mask, float("-inf")), v)
    if torch.is_floating_point(mask):
        return _attend(scores + mask, v)
    raise NotImplementedError(f"mask of dtype {mask.dtype} is not supported (use bool)")


def causal_mask(t):
    allowed = torch.tril(torch.ones(t, t, dtype=torch.bool))
    return allowed.logical_not()


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
        B, Tq, D = q.shape
        Tk = k.shape[1]
        qh = self.wq(q).view(B, Tq, self.num_heads, self.d_k).transpose(1, 2)
        kh = self.wk(k).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        vh = self.wv(v).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        out, w = scaled_dot_product_attention(qh, kh, vh, mask)
        out = out.transpose(1, 2).contiguous().view(B, Tq, D)
        return self.wo(out), w
