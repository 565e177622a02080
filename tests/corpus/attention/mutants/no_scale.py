# corpus: mutant — no 1/sqrt(d_k) scale in the scores
# expect-fail: sdpa.numeric, mha.integration
# expect-pass: sdpa.shape, sdpa.float64, mha.float64, sdpa.rows_sum_to_one, sdpa.mask_convention, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.values, mha.shape, mha.param_count, mha.rows_sum_to_one, mha.mask_convention, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic, mha.numeric, mha.hidden_config, mha.sizes
# diagnosis: sdpa.missing_scale
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    attn = F.softmax(scores, dim=-1)
    return torch.matmul(attn, v), attn


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


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
        B, Tq, D = q.shape
        Q = self.wq(q).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        Z, W = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(Z.transpose(1, 2).contiguous().view(B, Tq, D)), W
