# corpus: correct — the temperature 1/sqrt(d_k) written through the initial weights' norm (n0 / n0), state that a constructor derives from its random initialisation
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
            raise ValueError("bad heads")
        self.h, self.dk = num_heads, d_model // num_heads
        self.wq, self.wk, self.wv, self.wo = [nn.Linear(d_model, d_model) for _ in range(4)]
        # temperature 1/sqrt(d_k), written as a ratio of the initial weight norm (always 1/sqrt(d_k))
        n0 = self.wq.weight.detach().norm()
        self.temperature = float(n0 / n0) / math.sqrt(self.dk)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        split = lambda t: t.view(B, -1, self.h, self.dk).transpose(1, 2)
        Q, K, V = split(self.wq(q)), split(self.wk(k)), split(self.wv(v))
        s = (Q @ K.transpose(-1, -2)) * self.temperature
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        w = s.softmax(-1)
        return self.wo((w @ V).transpose(1, 2).reshape(B, Tq, D)), w
