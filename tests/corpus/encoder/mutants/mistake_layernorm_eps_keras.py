# corpus: mutant — both LayerNorms built with eps=1e-3 (Keras' default) instead of PyTorch's 1e-5
# expect-fail: enc.postln_wiring, enc.preln_wiring, enc.integration
# expect-pass: enc.layernorm_stats, ffn.numeric, pe.values
# diagnosis: layernorm_eps
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
            raise ValueError(f"{num_heads} heads do not divide d_model = {d_model}")
        self.heads, self.head_dim = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, t):
        return t.unflatten(-1, (self.heads, self.head_dim)).transpose(1, 2)

    def forward(self, query, key, value, attn_mask=None):
        z, weights = scaled_dot_product_attention(
            self._heads(self.wq(query)), self._heads(self.wk(key)), self._heads(self.wv(value)), attn_mask)
        return self.wo(z.transpose(1, 2).flatten(-2)), weights


def positional_encoding(length, d_model):
    position = torch.arange(length, dtype=torch.float32)[:, None]
    frequency = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    pe = torch.empty(length, d_model)
    pe[:, 0::2] = torch.sin(position * frequency)
    pe[:, 1::2] = torch.cos(position * frequency)
    return pe


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, inputs):
        return self.l2(F.gelu(self.l1(inputs)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model, eps=1e-3)
        self.ln2 = nn.LayerNorm(d_model, eps=1e-3)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        if self.prenorm:
            normed = self.ln1(x)
            h = x + self.attn(query=normed, key=normed, value=normed, attn_mask=mask)[0]
            return h + self.ffn(inputs=self.ln2(h))
        h = self.ln1(x + self.attn(query=x, key=x, value=x, attn_mask=mask)[0])
        return self.ln2(h + self.ffn(inputs=h))
