# corpus: correct — causal mask precomputed once as a non-persistent buffer causal_mask(512) and sliced to T (moves with .to()/.double()), sub-layer methods, dropout
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        b = q.size(0)
        Q = self.wq(q).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        z = self.attn_drop(weights) @ V
        z = z.transpose(1, 2).contiguous().view(b, -1, self.num_heads * self.d_k)
        return self.wo(z), weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.act = nn.GELU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.l2(self.drop(self.act(self.l1(x))))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("future", causal_mask(512), persistent=False)

    def _self_block(self, x):
        n = self.ln1(x)
        out, weights = self.self_attn(n, n, n, mask=self.future[: x.shape[1], : x.shape[1]])
        return self.dropout(out), weights

    def _cross_block(self, h, memory):
        m = self.ln2(memory)
        out, weights = self.cross_attn(self.ln2(h), m, m)
        return self.dropout(out), weights

    def _ff_block(self, h):
        return self.dropout(self.ffn(self.ln3(h)))

    def forward(self, x, memory, return_self_weights=False):
        sa, self_weights = self._self_block(x)
        h = x + sa
        ca, cross_weights = self._cross_block(h, memory)
        h = h + ca
        out = h + self._ff_block(h)
        if return_self_weights:
            return out, cross_weights, self_weights
        return out, cross_weights
