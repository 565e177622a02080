# corpus: mutant — the untouched stub: every body raises NotImplementedError
# expect-score-at-most: 0%
# expect-fail: sdpa.present, causal.present, mha.present
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    # YOUR CODE HERE
    raise NotImplementedError()


def causal_mask(t):
    # YOUR CODE HERE
    raise NotImplementedError()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError()

    def forward(self, q, k, v, mask=None):
        # YOUR CODE HERE
        raise NotImplementedError()
