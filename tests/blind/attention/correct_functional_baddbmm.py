# correct: functional style, F.linear with the modules' own weights, baddbmm over a flattened batch axis, masked_fill(-inf) then nan_to_num, permute/reshape head merge, arange-comparison causal mask
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    tq, d_k = q.shape[-2:]
    tk, d_v = k.shape[-2], v.shape[-1]
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q3 = q.expand(*lead, tq, d_k).reshape(-1, tq, d_k)
    k3 = k.expand(*lead, tk, d_k).reshape(-1, tk, d_k)
    # skor = 0 * input + (1/sqrt(d_k)) * q k^T
    scores = torch.baddbmm(q3.new_zeros(1, 1, 1), q3, k3.transpose(1, 2),
                           beta=0.0, alpha=1.0 / math.sqrt(d_k))
    scores = scores.reshape(*lead, tq, tk)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    # baris yang seluruhnya diblokir menjadi NaN; ubah menjadi 0
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    idx = torch.arange(t)
    return idx.unsqueeze(0) > idx.unsqueeze(1)  # [i, j] = j > i


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if num_heads < 1 or d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} tidak habis dibagi num_heads={num_heads}")
        self.heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _project(self, x, layer):
        b, t, _ = x.shape
        y = F.linear(x, layer.weight, layer.bias)
        return y.reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)  # (B, H, T, d_k)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        ctx, weights = scaled_dot_product_attention(
            self._project(q, self.wq), self._project(k, self.wk), self._project(v, self.wv), mask
        )
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, tq, d)
        return F.linear(ctx, self.wo.weight, self.wo.bias), weights
