# correct: everything rewritten: -inf fill then nan_to_num, heads via unflatten/movedim, mask from ones(...).triu_(1) on the input's device, residual sub-layers folded with a for loop over closures
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)).div(math.sqrt(k.size(-1)))
    if mask is not None:
        scores = scores.masked_fill(mask, -math.inf)
    weights = F.softmax(scores, dim=-1).nan_to_num(nan=0.0)
    return weights.matmul(v), weights


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu_(1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("num_heads harus membagi d_model")
        self.h = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, x):
        return x.unflatten(-1, (self.h, -1)).movedim(-2, 1)  # (B, T, D) -> (B, H, T, d_k)

    def forward(self, q, k, v, mask=None):
        ctx, weights = scaled_dot_product_attention(
            self._heads(self.wq(q)), self._heads(self.wk(k)), self._heads(self.wv(v)), mask
        )
        return self.wo(ctx.movedim(1, -2).flatten(-2)), weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x), approximate="none"))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)

    def forward(self, x, memory):
        t = x.size(1)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu_(1)
        m = self.ln2(memory)
        saved = {}

        def cross(n):
            z, saved["w"] = self.cross_attn(n, m, m)
            return z

        sublayers = [
            (self.ln1, lambda n: self.self_attn(n, n, n, mask)[0]),
            (self.ln2, cross),
            (self.ln3, self.ffn),
        ]
        h = x
        for norm, fn in sublayers:
            h = h + fn(norm(h))
        return h, saved["w"]
