# hostile: allocate tens of GB
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    hog = torch.ones(40 * 1024**3 // 4)
    return hog, hog


def causal_mask(t):
    return bytearray(30 * 1024**3)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.hog = [bytearray(1024**3) for _ in range(40)]
