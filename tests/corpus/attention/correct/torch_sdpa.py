# corpus: correct — F.scaled_dot_product_attention for the output (its bool attn_mask means ALLOWED, so the mask is inverted), weights computed separately
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    allowed = None if mask is None else ~mask  # PyTorch: True = may attend
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    # PyTorch does not give the weights back, so compute them as well
    scores = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return out, scores.softmax(dim=-1)


def causal_mask(t):
    return torch.triu(torch.ones((t, t), dtype=torch.bool), 1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} is not divisible by {num_heads}")
        self.n_heads = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def split(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        b, t, d = q.shape
        out, weights = scaled_dot_product_attention(
            self.split(self.wq(q)), self.split(self.wk(k)), self.split(self.wv(v)), mask)
        out = out.transpose(1, 2).reshape(b, t, d)
        return self.wo(out), weights
