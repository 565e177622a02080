# correct: projections as einsum against wq/wk/wv weights reshaped to (H, d_k, D) plus bias; additive -inf mask; wo applied via einsum over (H, d_k); float64-safe
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    s = torch.einsum("...id,...jd->...ij", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        s = s + torch.zeros_like(s).masked_fill(mask, float("-inf"))
    w = s.softmax(-1)
    return torch.einsum("...ij,...jd->...id", w, v), w


def causal_mask(t):
    return torch.ones(t, t).triu(1).bool()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.H = num_heads
        self.dk = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _proj(self, lin, x):
        W = lin.weight.view(self.H, self.dk, -1)       # (H, d_k, D)
        b = lin.bias.view(1, self.H, 1, self.dk)
        return torch.einsum("btd,hkd->bhtk", x, W) + b  # (B, H, T, d_k)

    def forward(self, q, k, v, mask=None):
        Q, K, V = self._proj(self.wq, q), self._proj(self.wk, k), self._proj(self.wv, v)
        ctx, w = scaled_dot_product_attention(Q, K, V, mask)
        Wo = self.wo.weight.view(-1, self.H, self.dk)   # (D, H, d_k)
        out = torch.einsum("bhtk,ehk->bte", ctx, Wo) + self.wo.bias
        return out, w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x), approximate="none"))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, memory):
        mask = causal_mask(x.shape[-2]).to(device=x.device)
        n = self.ln1(x)
        attn_out, _ = self.self_attn(n, n, n, mask)
        h = x + attn_out
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        ff = self.ffn(self.ln3(h))
        return h + ff, cross_weights
