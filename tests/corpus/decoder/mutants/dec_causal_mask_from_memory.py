# corpus: mutant — DecoderBlock sizes its causal mask from the memory's length (Tsrc) instead of x's (Tdec)
# expect-fail: dec.wiring, dec.integration, dec.hidden_config, dec.sizes
# expect-pass: dec.construct, dec.param_count
# diagnosis: equal_lengths_assumed
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    attn_mask = None if mask is None else ~mask
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    return out, s.softmax(-1)


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), 1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.h = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        def heads(t):
            b, n, d = t.shape
            return t.reshape(b, n, self.h, d // self.h).permute(0, 2, 1, 3)
        out, w = scaled_dot_product_attention(heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v)), mask)
        b, h, n, dk = out.shape
        return self.wo(out.permute(0, 2, 1, 3).reshape(b, n, h * dk)), w


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
        self.ln1, self.ln2, self.ln3 = (nn.LayerNorm(d_model) for _ in range(3))

    def forward(self, x, memory):
        t = x.shape[1]
        mask = causal_mask(memory.shape[1]).to(device=x.device)
        y = self.ln1(x)
        x = x + self.self_attn(y, y, y, mask=mask)[0]
        mem = self.ln2(memory)
        z, w = self.cross_attn(self.ln2(x), mem, mem)
        x = x + z
        x = x + self.ffn(self.ln3(x))
        return x, w
