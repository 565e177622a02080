# corpus: correct — F.linear with the modules' weights (wq..wo never called as modules), q scaled before the product, an arange-comparison causal mask, nan_to_num after the softmax
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    q = q * q.size(-1) ** -0.5
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.nan_to_num(F.softmax(scores, dim=-1))
    return weights @ v, weights


def causal_mask(t):
    i = torch.arange(t)
    return i.unsqueeze(0) > i.unsqueeze(1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, x, layer):
        b, t, d = x.shape
        y = F.linear(x, layer.weight, layer.bias)
        return y.unflatten(-1, (self.num_heads, d // self.num_heads)).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        out, weights = scaled_dot_product_attention(
            self._heads(q, self.wq), self._heads(k, self.wk), self._heads(v, self.wv), mask)
        out = out.transpose(1, 2).flatten(2)
        return F.linear(out, self.wo.weight, self.wo.bias), weights
