# correct: einsum everywhere, additive float mask, fused q/k/v projection built at forward time from the separate wq/wk/wv weights when q is k is v
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.new_tensor(q.shape[-1]).rsqrt()
    scores = torch.einsum("...qd,...kd->...qk", q, k) * scale
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
        bias = bias.masked_fill(mask.to(device=scores.device), float("-inf"))
        scores = scores + bias
    weights = F.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


def causal_mask(t):
    return torch.triu(torch.full((t, t), True), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads={num_heads} must divide d_model={d_model}")
        self.n_heads, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(in_features=d_model, out_features=d_model)
        self.wk = nn.Linear(in_features=d_model, out_features=d_model)
        self.wv = nn.Linear(in_features=d_model, out_features=d_model)
        self.wo = nn.Linear(in_features=d_model, out_features=d_model)

    def forward(self, q, k, v, mask=None):
        if q is k and k is v:
            w = torch.cat([self.wq.weight, self.wk.weight, self.wv.weight], dim=0)
            b = torch.cat([self.wq.bias, self.wk.bias, self.wv.bias], dim=0)
            Q, K, V = F.linear(q, w, b).chunk(3, dim=-1)
        else:
            Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        split = lambda t: t.unflatten(-1, (self.n_heads, self.d_k))
        Q, K, V = split(Q), split(K), split(V)          # (B, T, H, d_k)
        scores = torch.einsum("bqhd,bkhd->bhqk", Q, K) / self.d_k ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        a = scores.softmax(-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", a, V).flatten(-2)
        return self.wo(ctx), a
