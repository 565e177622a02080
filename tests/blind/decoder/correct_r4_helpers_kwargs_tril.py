# correct: DecoderBlock split into helper methods called with keyword arguments; causal mask built with torch.tril on x.device and then inverted (~); memory normalised once inside a helper
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)).div(math.sqrt(k.size(-1)))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights.matmul(v), weights


def causal_mask(t):
    allowed = torch.tril(torch.ones(t, t, dtype=torch.bool))
    return ~allowed


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(-1)
    i2 = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos * torch.exp(-i2 * math.log(10000.0) / d_model)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, ::2] = angle.sin()
    pe[:, 1::2] = angle.cos()
    return pe.float()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, t):
        return t.view(t.size(0), t.size(1), self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        ctx, w = scaled_dot_product_attention(
            q=self._heads(self.wq(q)),
            k=self._heads(self.wk(k)),
            v=self._heads(self.wv(v)),
            mask=mask,
        )
        ctx = ctx.transpose(1, 2).flatten(2)
        return self.wo(ctx), w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)

    def _causal(self, x):
        t = x.size(1)
        return ~torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))

    def _self_block(self, x):
        n = self.ln1(x)
        out, _ = self.self_attn(q=n, k=n, v=n, mask=self._causal(x))
        return x + out

    def _cross_block(self, h, memory):
        mem = self.ln2(memory)
        out, weights = self.cross_attn(q=self.ln2(h), k=mem, v=mem, mask=None)
        return h + out, weights

    def _ff_block(self, h):
        return h + self.ffn(self.ln3(h))

    def forward(self, x, memory):
        h = self._self_block(x=x)
        h, cross_weights = self._cross_block(h=h, memory=memory)
        return self._ff_block(h=h), cross_weights
