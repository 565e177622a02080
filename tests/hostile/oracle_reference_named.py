# hostile: a module whose class is named Reference* and that carries a proxy handle (taken with a forged "new" callback), so that the grader binds the check's own reference module, weights included, to it
import gc
import json
import os
import select
import struct

import numpy as np
import torch
import torch.nn as nn

ATTACK = True  # tests/test_oracle.py grades this file once more with False: the same code, no attack
REFERENCE_NAMED = True
_BLOBS, _RECEIVED = [], bytearray()
DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}


def _channel():
    """The worker's end of the pipes to the grader: whatever object holds both descriptors."""
    for obj in gc.get_objects():
        try:
            if (not isinstance(obj, type) and isinstance(getattr(obj, "read_fd", None), int)
                    and isinstance(getattr(obj, "write_fd", None), int)):
                return obj
        except Exception:
            pass
    return None


def _encode(value):
    if isinstance(value, torch.Tensor):
        array = value.detach().contiguous().numpy()
        _BLOBS.append(array.tobytes())  # the frame carries tensors' bytes after its JSON
        return {"__tensor__": {"dtype": str(value.dtype).replace("torch.", ""), "shape": list(value.shape),
                               "device": "cpu", "data": [sum(map(len, _BLOBS[:-1])), len(_BLOBS[-1])]}}
    if isinstance(value, (list, tuple)):
        return {"__seq__": [_encode(v) for v in value], "tuple": isinstance(value, tuple)}
    if isinstance(value, dict):
        return {"__dict__": {k: _encode(v) for k, v in value.items()}}
    return value


def _decode(data):
    if isinstance(data, dict) and "__tensor__" in data:
        meta = data["__tensor__"]
        offset, size = meta["data"]
        array = np.frombuffer(_RECEIVED[offset:offset + size], dtype=DTYPES[meta["dtype"]])
        return torch.from_numpy(array.reshape(meta["shape"]).copy())
    if isinstance(data, dict) and "__seq__" in data:
        return [_decode(v) for v in data["__seq__"]]
    if isinstance(data, dict) and "__dict__" in data:
        return {k: _decode(v) for k, v in data["__dict__"].items()}
    return data


def _read(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def ask(request):
    """Write a forged callback frame and wait (briefly) for the grader's answer."""
    channel = _channel() if ATTACK else None
    if channel is None:
        return None
    payload = json.dumps({"callback": request}).encode()
    blobs = b"".join(_BLOBS)
    _BLOBS.clear()
    os.write(channel.write_fd, struct.pack(">II", 4 + len(payload) + len(blobs), len(payload)) + payload + blobs)
    if not select.select([channel.read_fd], [], [], 1.0)[0]:
        return None
    header = _read(channel.read_fd, 4)
    body = header and _read(channel.read_fd, struct.unpack(">I", header)[0])
    if not body:
        return None
    size = struct.unpack(">I", body[:4])[0]
    reply = json.loads(body[4:4 + size])
    _RECEIVED[:] = body[4 + size:]
    return _decode(reply["result"]) if isinstance(reply, dict) and "result" in reply else None


def scaled_dot_product_attention(q, k, v, mask=None):
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    mask = ask({"kind": "func", "name": "causal_mask", "args": _encode([t]), "kwargs": _encode({})})
    return mask if isinstance(mask, torch.Tensor) else torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.handle = ask({"kind": "new", "name": "MultiHeadAttention",
                           "args": _encode([d_model, num_heads]), "kwargs": _encode({})})
        if REFERENCE_NAMED and isinstance(self.handle, int):
            # the grader listed modules whose class is named Reference* and that carry a
            # proxy_handle, and bound the check's reference module (its weights just copied in)
            type(self).__name__ = type(self).__qualname__ = "ReferenceMultiHeadAttention"
            self.proxy_handle = self.handle

    def forward(self, q, k, v, mask=None):
        if isinstance(self.handle, int):
            kwargs = {} if mask is None else {"mask": mask}
            answer = ask({"kind": "call", "handle": self.handle, "grad": False,
                          "args": _encode([q, k, v]), "kwargs": _encode(kwargs)})
            if isinstance(answer, dict) and isinstance(answer.get("outputs"), list):
                out, weights = answer["outputs"]
                return out.to(q.dtype), weights.to(q.dtype)
        b, tq, _ = q.shape
        return q * 0, torch.zeros(b, self.num_heads, tq, k.shape[1], dtype=q.dtype)
