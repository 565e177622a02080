# hostile: stop reading the request pipe so that the grader blocks writing to it: ask for a large callback answer (a 3000x3000 causal mask) and never read it, or forge an answer and never read the next request
import sys
import time

import torch.nn as nn


def _find():
    """The worker's channel and the request in flight, from the call stack."""
    channel = request = None
    frame = sys._getframe()
    while frame is not None:
        for name, value in frame.f_locals.items():
            if channel is None and hasattr(value, "write_fd") and hasattr(value, "read_fd"):
                channel = value
            if request is None and name == "request" and isinstance(value, dict) and "op" in value:
                request = value
        frame = frame.f_back
    return channel, request


def _sleep_forever():
    while True:  # never read again
        time.sleep(1)


def _stall_on_callback():
    channel, _ = _find()
    if channel is not None:
        channel.send({"callback": {"kind": "func", "name": "causal_mask",
                                   "args": {"__seq__": [3000], "tuple": False},
                                   "kwargs": {"__dict__": {}}}})
    _sleep_forever()


def _answer_and_stall():
    """Forge the answer to this request (the grader then sends the next one, which can be
    large: weights, inputs) and never read again."""
    channel, request = _find()
    if channel is not None and request is not None:
        channel.send({"ok": {"result": None, "seq": request.get("seq")}})
    _sleep_forever()


def scaled_dot_product_attention(q, k, v, mask=None):
    _stall_on_callback()


def causal_mask(t):
    _answer_and_stall()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        _stall_on_callback()
