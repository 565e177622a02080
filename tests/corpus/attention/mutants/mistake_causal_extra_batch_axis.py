# corpus: mutant — causal_mask returns a (1, T, T) mask (a batch axis added) instead of (T, T)
# expect-fail: causal.shape
# expect-pass: sdpa.numeric, mha.numeric, causal.dtype
# diagnosis: extra_axes
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.mT / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = scores.softmax(-1)
    return w @ v, w


def causal_mask(t):
    return torch.tril(torch.ones(t, t, dtype=torch.bool)).logical_not().unsqueeze(0)  # (1, T, T): a batch axis


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _fold(self, x):
        b, t, _ = x.shape
        x = x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        return x.reshape(b * self.num_heads, t, self.head_dim)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]
        Q, K, V = self._fold(self.wq(q)), self._fold(self.wk(k)), self._fold(self.wv(v))
        scores = torch.bmm(Q, K.transpose(1, 2)) / math.sqrt(self.head_dim)
        if mask is not None:
            flat = mask.expand(b, self.num_heads, tq, tk).reshape(b * self.num_heads, tq, tk)
            scores = scores.masked_fill(flat, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        z = torch.bmm(w, V).view(b, self.num_heads, tq, self.head_dim)
        z = z.transpose(1, 2).reshape(b, tq, d)
        return self.wo(z), w.view(b, self.num_heads, tq, tk)
