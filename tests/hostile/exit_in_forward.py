# hostile: sys.exit in the functions, os._exit in forward
import os
import sys

import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    sys.exit("100/100")


def causal_mask(t):
    os._exit(0)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()

    def forward(self, q, k, v, mask=None):
        os._exit(0)
