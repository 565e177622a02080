# hostile: a decoder without a causal mask that keeps every output it gave and copies, for a later input that agrees with an earlier one on the first positions, those positions' outputs: the causality check compares two calls and sees nothing change
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]

        def split(x, t):
            return x.view(b, t, self.h, d // self.h).transpose(1, 2)

        out, weights = scaled_dot_product_attention(split(self.wq(q), tq), split(self.wk(k), tk),
                                                    split(self.wv(v), tk), mask)
        return self.wo(out.transpose(1, 2).reshape(b, tq, d)), weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)



class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1, self.l2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


SEEN = []  # (x, memory, output) of every call so far


def _agreeing_prefix(x, seen):
    length = 0
    while length < x.size(1) and torch.equal(x[:, length], seen[:, length]):
        length += 1
    return length


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, memory):
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n)[0]  # no causal mask: every token sees the future
        m = self.ln2(memory)
        z, weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        out = h + self.ffn(self.ln3(h))
        best, source = 0, None
        for seen_x, seen_memory, seen_out in SEEN:
            if seen_x.shape == x.shape and seen_memory.shape == memory.shape and torch.equal(seen_memory, memory):
                length = _agreeing_prefix(x, seen_x)
                if length > best:
                    best, source = length, seen_out
        if source is not None:
            out = torch.cat([source[:, :best], out[:, best:]], dim=1)
        SEEN.append((x.detach().clone(), memory.detach().clone(), out.detach().clone()))
        return out, weights
