# corpus: mutant — FeedForward applies GELU to l2's output instead of between l1 and l2
# expect-fail: ffn.numeric, ffn.sizes, enc.integration
# expect-pass: ffn.construct, ffn.param_count, ffn.shape, ffn.gradient_flow, ffn.batch_independence, ffn.no_inplace, ffn.device_agnostic, ffn.float64, enc.construct, enc.param_count, enc.shape, enc.postln_wiring, enc.preln_wiring, enc.layernorm_stats, enc.masking, enc.permutation_equivariance, enc.float64, enc.hidden_config, enc.gradient_flow
# diagnosis: ffn.activation_misplaced
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.num_heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]
        h = self.num_heads
        Q = self.wq(q).view(b, tq, h, d // h).transpose(1, 2)
        K = self.wk(k).view(b, tk, h, d // h).transpose(1, 2)
        V = self.wv(v).view(b, tk, h, d // h).transpose(1, 2)
        out, w = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(out.transpose(1, 2).reshape(b, tq, d)), w


def positional_encoding(length, d_model):
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    div = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.stack([torch.sin(position / div), torch.cos(position / div)], dim=-1)
    return pe.flatten(1).float()


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.l2(self.l1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.prenorm = prenorm
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)

    def _sa(self, x, mask):
        out, _ = self.attn(x, x, x, mask=mask)
        return out

    def forward(self, x, mask=None):
        if not self.prenorm:
            x = self.ln1(x + self._sa(x, mask))
            return self.ln2(x + self.ffn(x))
        x = x + self._sa(self.ln1(x), mask)
        return x + self.ffn(self.ln2(x))
