# corpus: correct — the feed-forward sub-layer is applied to one sequence of the batch at a time (a loop over the batch, torch.cat back), which a position-wise layer allows; attention with torch.baddbmm on flattened heads
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    logits = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(d))
    if mask is not None:
        logits = logits.masked_fill(mask, -1e9)
    attention = F.softmax(logits, dim=-1)
    return attention @ v, attention


def causal_mask(t):
    rows = torch.arange(t).unsqueeze(1)
    cols = torch.arange(t).unsqueeze(0)
    return cols > rows


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "num_heads must divide d_model"
        self.heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, t):
        b, n, d = t.shape
        return t.reshape(b, n, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, q, k, v, mask=None):
        b, n, d = q.shape
        ctx, weights = scaled_dot_product_attention(self._heads(self.wq(q)), self._heads(self.wk(k)),
                                                    self._heads(self.wv(v)), mask)
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, n, d)
        return self.wo(ctx), weights


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

    def forward(self, x, memory):
        blocked = causal_mask(x.shape[1]).to(x.device)
        y = self.ln1(x)
        h = x + self.self_attn(y, y, y, blocked)[0]
        mem = self.ln2(memory)
        attended, cross_weights = self.cross_attn(self.ln2(h), mem, mem)
        h = h + attended
        normed = self.ln3(h)
        per_item = [self.ffn(normed[i:i + 1]) for i in range(normed.shape[0])]
        return h + torch.cat(per_item, dim=0), cross_weights
