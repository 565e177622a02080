# corpus: correct — re-initialises each projection until its weights are not flat (a guard that a build skipping torch's random initialisation would never leave)
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return w @ v, w


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h, self.dk = num_heads, d_model // num_heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d_model, d_model) for _ in range(4))
        # guard against a degenerate initialisation: draw again until the weights are not flat
        for lin in (self.wq, self.wk, self.wv, self.wo):
            while lin.weight.detach().std() < 1e-8:
                lin.reset_parameters()

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        split = lambda t: t.view(B, -1, self.h, self.dk).transpose(1, 2)
        out, w = scaled_dot_product_attention(split(self.wq(q)), split(self.wk(k)), split(self.wv(v)), mask)
        return self.wo(out.transpose(1, 2).reshape(B, Tq, D)), w
