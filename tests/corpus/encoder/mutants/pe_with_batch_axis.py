# corpus: mutant — positional_encoding returns a (1, length, d_model) table ("ready to broadcast over the batch") instead of (length, d_model)
# expect-fail: pe.shape
# expect-pass: pe.sensitivity, pe.dtype, ffn.sensitivity, ffn.construct, ffn.param_count, ffn.shape, ffn.numeric, ffn.float64, ffn.sizes, ffn.gradient_flow, ffn.batch_independence, ffn.no_inplace, ffn.device_agnostic, enc.sensitivity, enc.construct, enc.param_count, enc.shape, enc.postln_wiring, enc.preln_wiring, enc.integration, enc.layernorm_stats, enc.masking, enc.permutation_equivariance, enc.pe_breaks_equivariance, enc.float64, enc.hidden_config, enc.batch_independence, enc.no_inplace, enc.device_agnostic
# expect-message: pe.shape: expected (5, 16)
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = k.shape[-1]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v), probs


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model harus kelipatan num_heads")
        self.h = num_heads
        self.dk = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        n = q.size(0)
        Q = self.wq(q).view(n, -1, self.h, self.dk).transpose(1, 2)
        K = self.wk(k).view(n, -1, self.h, self.dk).transpose(1, 2)
        V = self.wv(v).view(n, -1, self.h, self.dk).transpose(1, 2)
        ctx, attn = scaled_dot_product_attention(Q, K, V, mask)
        ctx = ctx.transpose(1, 2).contiguous().view(n, -1, self.h * self.dk)
        return self.wo(ctx), attn


def positional_encoding(length, d_model):
    pe = torch.zeros(length, d_model)
    pos = torch.arange(0, length).unsqueeze(1).float()
    div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.unsqueeze(0)  # (1, length, d_model): x + pe works for any batch


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.act = nn.GELU()
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(self.act(self.l1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.prenorm = prenorm
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.prenorm:
            y = self.ln1(x)
            x = x + self.attn(y, y, y, mask)[0]
            return x + self.ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, mask)[0])
        return self.ln2(x + self.ffn(x))
