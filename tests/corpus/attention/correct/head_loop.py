# corpus: correct — Python loop over heads, each head slices its columns of the projections; assert for divisibility; ones().triu(1).bool()
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1.0 / math.sqrt(k.size(-1))
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        scores = scores.masked_fill(mask, -math.inf)
    weights = F.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    return torch.ones(t, t).triu(1).bool()


def _mask_for_head(mask, i):
    """A mask broadcastable to (B, H, Tq, Tk) -> one broadcastable to (B, Tq, Tk) for head i."""
    if mask is None or mask.dim() < 4:
        return mask
    return mask[:, i] if mask.size(1) > 1 else mask[:, 0]


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        outputs, all_weights = [], []
        for i in range(self.num_heads):
            cols = slice(i * self.d_k, (i + 1) * self.d_k)
            z, w = scaled_dot_product_attention(Q[:, :, cols], K[:, :, cols], V[:, :, cols],
                                                _mask_for_head(mask, i))
            outputs.append(z)
            all_weights.append(w)
        concat = torch.cat(outputs, dim=-1)
        return self.wo(concat), torch.stack(all_weights, dim=1)
