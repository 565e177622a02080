# corpus: mutant — scores divided by d_k instead of sqrt(d_k)
# expect-fail: sdpa.numeric, mha.integration
# expect-pass: sdpa.shape, sdpa.float64, mha.float64, sdpa.rows_sum_to_one, sdpa.mask_convention, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.values, mha.shape, mha.param_count, mha.rows_sum_to_one, mha.mask_convention, mha.gradient_flow, mha.batch_independence, mha.numeric, mha.hidden_config, mha.sizes
# diagnosis: sdpa.scale_by_dk
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / d_k
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        split = lambda x: x.view(b, x.size(1), self.h, d // self.h).transpose(1, 2)
        z, w = scaled_dot_product_attention(split(self.wq(q)), split(self.wk(k)), split(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), w
