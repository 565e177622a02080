# corpus: mutant — FeedForward's second layer is built with bias=False (l2 = nn.Linear(d_ff, d_model, bias=False)): 16 parameters short
# expect-fail: ffn.param_count
# expect-pass: pe.values, ffn.construct, ffn.shape, enc.construct, enc.shape, enc.postln_wiring, enc.preln_wiring, enc.layernorm_stats, enc.masking, enc.permutation_equivariance, enc.pe_breaks_equivariance, enc.batch_independence, enc.no_inplace, enc.device_agnostic, ffn.gradient_flow, ffn.batch_independence, ffn.no_inplace
# diagnosis: ffn.bias_false
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model % num_heads != 0"
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.shape[1]
        H, dk = self.num_heads, self.d_k
        Q = self.wq(q).view(B, Tq, H, dk).transpose(1, 2)
        K = self.wk(k).view(B, Tk, H, dk).transpose(1, 2)
        V = self.wv(v).view(B, Tk, H, dk).transpose(1, 2)
        scores = Q.matmul(K.transpose(-1, -2)).div(math.sqrt(dk))
        if mask is not None:
            scores = scores.masked_fill(mask, -1e9)
        weights = F.softmax(scores, dim=-1)
        out = weights.matmul(V).transpose(1, 2).reshape(B, Tq, D)
        return self.wo(out), weights


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    freq = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angle = pos * freq[None, :]
    z = torch.polar(torch.ones_like(angle), angle)          # cos + i sin
    pairs = torch.view_as_real(z).flip(-1)                  # (length, d/2, 2) as (sin, cos)
    return pairs.reshape(length, d_model).to(torch.float32)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model, bias=False)

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
