"""Scaled dot-product attention, the causal mask and multi-head attention.

Mask convention of the course: a boolean mask where ``True`` means BLOCKED.
"""

import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d_k)) v.

    q: (..., Tq, d_k), k: (..., Tk, d_k), v: (..., Tk, d_v);
    mask: bool, broadcastable to (..., Tq, Tk), True = blocked.
    Returns out (..., Tq, d_v) and weights (..., Tq, Tk).
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # tiap baris: distribusi atas kunci (key)
    return weights @ v, weights


def causal_mask(t):
    """(t, t) bool mask, True strictly above the diagonal: query i may not see keys j > i."""
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key and value inputs.

    Splits d_model into num_heads heads of size d_k = d_model // num_heads.
    """

    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model ({d_model}) harus habis dibagi num_heads ({num_heads})"
            )
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _split_heads(self, x):
        """(B, T, D) -> (B, H, T, d_k)"""
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        """q: (B, Tq, D), k and v: (B, Tk, D); mask broadcastable to (B, H, Tq, Tk).

        Returns out (B, Tq, D) and weights (B, H, Tq, Tk).
        """
        b, tq, d = q.shape
        q = self._split_heads(self.wq(q))
        k = self._split_heads(self.wk(k))
        v = self._split_heads(self.wv(v))
        z, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, Tq, d_k)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)  # head-head dijajarkan kembali
        return self.wo(z), weights
