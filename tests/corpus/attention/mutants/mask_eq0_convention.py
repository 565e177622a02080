# corpus: mutant — the chapter's other convention, Annotated-Transformer style: masked_fill(mask == 0, -1e9), i.e. False blocks
# expect-fail: sdpa.mask_convention, sdpa.causal_masking, sdpa.padding_masking, mha.masking, mha.mask_convention
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.rows_sum_to_one, sdpa.batch_independence, causal.values, mha.shape, mha.numeric, mha.rows_sum_to_one, mha.hidden_config
# expect-message: sdpa.mask_convention: Inverted mask
# diagnosis: sdpa.mask_inverted
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)
    return torch.matmul(p_attn, v), p_attn


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
        nbatches = q.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.num_heads, self.d_k).transpose(1, 2)
            for lin, x in zip((self.wq, self.wk, self.wv), (q, k, v))
        ]
        x, attn = scaled_dot_product_attention(query, key, value, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.num_heads * self.d_k)
        return self.wo(x), attn
