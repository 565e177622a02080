# corpus: mutant — positional encoding computed in float64 and returned without .float()
# expect-fail: pe.dtype
# expect-pass: pe.shape, pe.values, pe.sizes, ffn.construct, ffn.param_count, ffn.shape, ffn.numeric, ffn.float64, ffn.sizes, ffn.gradient_flow, ffn.batch_independence, ffn.no_inplace, ffn.device_agnostic, enc.construct, enc.param_count, enc.shape, enc.postln_wiring, enc.preln_wiring, enc.layernorm_stats, enc.masking, enc.permutation_equivariance, enc.pe_breaks_equivariance, enc.float64, enc.hidden_config, enc.batch_independence, enc.no_inplace, enc.integration, enc.gradient_flow, enc.device_agnostic
# diagnosis: float64_result
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


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

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        Q = self.wq(q).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        z, w = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(z.transpose(1, 2).contiguous().view(b, tq, d)), w


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / 10000 ** (two_i / d_model)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, mask)[0]
            return h + self.ffn(self.ln2(h))
        h = self.ln1(x + self.attn(x, x, x, mask)[0])
        return self.ln2(h + self.ffn(h))
