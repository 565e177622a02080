"""Plain-data wire format shared by the trusted grader and the untrusted worker.

A frame is a 4-byte big-endian length, then the body: the 4-byte length of its UTF-8 JSON,
the JSON, and the raw bytes of the tensors it carries, one after another. In the JSON a tensor
is ``{"__tensor__": {"dtype", "shape", "device", "data": [offset, size]}}``, its bytes found at
``offset`` (from the end of the JSON) and checked against its dtype and shape; nothing is ever
pickled. Only plain tensors cross: dense (strided), on the CPU, of one of ``DTYPES``. The
worker sends anything else (another device, a sparse or nested layout, a subclass of
``torch.Tensor``, a quantized or complex dtype) as a description without data, and the
grader refuses it (``WireError``: the reply is the student's ``bad_reply``). The one
exception is the ``meta`` device, which a decoder may allow (``decode_value(meta=True)``)
where the request itself ran on meta (the device checks). Raw bytes rather than base64 in the JSON: a megabyte of tensors costs ~7 ms to
encode and decode as base64 JSON, ~0.05 ms as bytes, and each submission sends over one.
This file imports only the standard library, numpy and torch, because the worker loads it as
a plain script (it must not import the ``autograder`` package).
"""

import json
import math
import struct

import numpy as np
import torch

HEADER = struct.Struct(">I")
# What a frame may hold. Legitimate frames are a few levels deep (encode_value stops at 6
# levels of sequences, about 16 of JSON) and carry their bulk in tensor strings.
MAX_FRAME_DEPTH = 64
MAX_FRAME_ITEMS = 1_000_000

# The dtypes a tensor may have on the wire; anything else is refused.
DTYPES = {
    "float32": (torch.float32, np.float32),
    "float64": (torch.float64, np.float64),
    "float16": (torch.float16, np.float16),
    "int64": (torch.int64, np.int64),
    "int32": (torch.int32, np.int32),
    "bool": (torch.bool, np.bool_),
}
_TORCH_TO_NAME = {torch_dtype: name for name, (torch_dtype, _) in DTYPES.items()}
DEVICES = ("cpu", "meta")  # the devices a torch.device value may name on the wire


class WireError(Exception):
    """A frame or a value that does not follow the wire format."""


class Blob:
    """A tensor's raw bytes inside an encoded value: ``write_frame`` puts them after the JSON."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


def write_frame(fd_write, message):
    blobs, placed = [], [0]

    def place(value):
        if not isinstance(value, Blob):
            raise TypeError(f"{type(value).__name__} cannot go on the wire")
        blobs.append(value.data)
        offset = placed[0]
        placed[0] += len(value.data)
        return [offset, len(value.data)]

    # No check for circular references: a frame is made of encode_value's fresh containers
    # (bounded in depth) and the kit's own plain data; the check cost a fifth of the encoding.
    payload = json.dumps(message, allow_nan=True, default=place, check_circular=False).encode("utf-8")
    fd_write(b"".join([HEADER.pack(HEADER.size + len(payload) + placed[0]), HEADER.pack(len(payload)),
                       payload, *blobs]))


def frame_body(json_bytes, blobs=b""):
    """A frame's body (what follows its length) from its JSON and its tensors' bytes."""
    return HEADER.pack(len(json_bytes)) + json_bytes + blobs


def _split(body):
    if len(body) < HEADER.size:
        raise WireError("reply is shorter than its header")
    (size,) = HEADER.unpack_from(body)
    if size > len(body) - HEADER.size:
        raise WireError("reply's JSON is longer than the reply")
    view = memoryview(body)
    return bytes(view[HEADER.size:HEADER.size + size]), view[HEADER.size + size:]


def decode_frame(body, max_depth=MAX_FRAME_DEPTH, max_items=MAX_FRAME_ITEMS):
    """A frame's body -> plain JSON data whose tensors hold their bytes (a memoryview into
    ``body``), or ``WireError`` for anything malformed: invalid UTF-8 or JSON, more than
    ``max_items`` values, nested deeper than ``max_depth`` levels (a frame nested 100,000 deep
    must not reach the interpreter's recursion limit), tensor data outside the frame."""
    payload, blobs = _split(body)
    # An upper bound on the number of values, counted before anything is allocated for them.
    items = payload.count(b",") + payload.count(b"[") + payload.count(b"{")
    if items > max_items:
        raise WireError(f"reply has more than {max_items} values")
    try:
        value = json.loads(payload.decode("utf-8"))
    except RecursionError:
        raise WireError(f"reply is nested deeper than {max_depth} levels") from None
    except (UnicodeDecodeError, ValueError) as error:  # JSONDecodeError; an int of 5000 digits
        raise WireError(f"reply is not valid JSON: {str(error)[:200]}") from None
    if isinstance(value, (dict, list)) and not _walk(value, max_depth - 1, blobs, [len(blobs)]):
        raise WireError(f"reply is nested deeper than {max_depth} levels")
    return value


_trusted_blobs = memoryview(b"")  # the tensors' bytes of the frame the worker is answering


def decode_trusted_frame(body):
    """``decode_frame`` without the limits, for frames from the grader (the worker's side,
    which answers one frame at a time): its tensors keep their [offset, size] and find their
    bytes when ``decode_value`` reaches them, as walking every request first cost more."""
    global _trusted_blobs
    payload, _trusted_blobs = _split(body)
    return json.loads(payload)


def _walk(container, levels, blobs, unclaimed):
    """Whether ``container`` holds containers at most ``levels`` levels below it; on the way,
    each tensor's ``data`` [offset, size] becomes its bytes in ``blobs``. Recursive, yet
    bounded: it stops ``levels`` (< the recursion limit) calls down. ``unclaimed``: [bytes of
    ``blobs`` no tensor has claimed yet]; the tensors may claim no more than the frame holds,
    as each one is copied when decoded (a thousand tensors on the same 40 MB must not become
    40 GB in the grader). JSON gives exactly dicts and lists (no subclasses), and a list of
    plain values (a shape, a tensor's [offset, size], a pair of names) is checked here
    without a call of its own: most of a reply's containers are such lists."""
    if levels < 0:
        return False
    if type(container) is dict:
        meta = container.get("__tensor__")
        if type(meta) is dict and "data" in meta:
            meta["data"] = _blob(meta["data"], blobs, unclaimed)
        children = container.values()
    else:
        children = container
    below = levels - 1
    for child in children:
        kind = type(child)
        if kind is list:
            for item in child:
                if type(item) in _CONTAINERS:
                    break
            else:  # plain values only: one level below, no deeper
                if below < 0:
                    return False
                continue
        elif kind is not dict:
            continue
        if not _walk(child, below, blobs, unclaimed):
            return False
    return True


_CONTAINERS = (dict, list)


def _blob(where, blobs, unclaimed=None):
    if (not isinstance(where, list) or len(where) != 2
            or not all(type(n) is int and n >= 0 for n in where) or sum(where) > len(blobs)):
        raise WireError("bad tensor data")
    if unclaimed is not None:
        unclaimed[0] -= where[1]
        if unclaimed[0] < 0:
            raise WireError("tensors claim more bytes than the reply holds")
    return blobs[where[0]:where[0] + where[1]]


def encode_value(value, max_depth=6):
    """Python value -> JSON-able plain data (tensors, sequences, numbers, text)."""
    if isinstance(value, torch.Tensor):
        return {"__tensor__": _encode_tensor(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if max_depth > 0 and isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: encode_value(v, max_depth - 1) for k, v in value.items()}}
    if max_depth > 0 and isinstance(value, (tuple, list)):
        return {"__seq__": [encode_value(item, max_depth - 1) for item in value],
                "tuple": isinstance(value, tuple)}
    if isinstance(value, torch.device) and value.type in DEVICES:
        return {"__device__": value.type}  # a sub-layer called with device=x.device can be replayed
    if isinstance(value, torch.dtype) and value in _TORCH_TO_NAME:
        return {"__dtype__": _TORCH_TO_NAME[value]}
    return {"__other__": type(value).__name__}


def _encode_tensor(tensor):
    """A tensor's description, with its bytes if it is a plain one (see the module docstring).
    A subclass, a sparse, nested or other layout travels as a description only, so that the
    grader can say what it was; its methods are never called here (they are the student's)."""
    plain = type(tensor) in (torch.Tensor, torch.nn.Parameter)
    if not plain:
        tensor = torch.Tensor.as_subclass(tensor, torch.Tensor)  # for shape and dtype only
    layout = torch.Tensor.layout.__get__(tensor)
    nested = torch.Tensor.is_nested.__get__(tensor)
    name = _TORCH_TO_NAME.get(tensor.dtype)
    meta = {"dtype": name or str(tensor.dtype).removeprefix("torch.")[:40],
            "shape": [] if nested else list(torch.Tensor.size(tensor)),
            "device": tensor.device.type}
    if not plain:
        meta["kind"] = "subclass"
    elif nested:
        meta["kind"] = "nested"
    elif layout != torch.strided:
        meta["kind"] = str(layout).removeprefix("torch.")[:40]
    if "kind" in meta or name is None or tensor.device.type != "cpu":
        return meta
    tensor = torch.Tensor.resolve_neg(torch.Tensor.detach(tensor))
    meta["data"] = Blob(torch.Tensor.contiguous(tensor).numpy().tobytes())
    return meta


def decode_value(data, max_elements=10_000_000, max_depth=6, meta=False):
    """Plain data -> Python value; validates every tensor against the wire format: a plain
    CPU tensor of one of ``DTYPES``, or, with ``meta``, a shape-only tensor on the meta device
    (``WireError`` for anything else)."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, dict):
        if "__tensor__" in data:
            return _decode_tensor(data["__tensor__"], max_elements, meta)
        if "__seq__" in data and max_depth > 0 and isinstance(data["__seq__"], list):
            items = [decode_value(item, max_elements, max_depth - 1, meta) for item in data["__seq__"]]
            return tuple(items) if data.get("tuple") else items
        if "__dict__" in data and max_depth > 0 and isinstance(data["__dict__"], dict):
            return {str(k): decode_value(v, max_elements, max_depth - 1, meta)
                    for k, v in data["__dict__"].items()}
        if data.get("__device__") in DEVICES:
            return torch.device(data["__device__"])
        if data.get("__dtype__") in DTYPES:
            return DTYPES[data["__dtype__"]][0]
        if "__other__" in data:
            return Opaque(str(data["__other__"])[:80])
    raise WireError("unexpected value in reply")


class Opaque:
    """Something the worker returned that is not plain data (only its type name travels)."""

    def __init__(self, type_name):
        self.type_name = type_name

    def __repr__(self):
        return f"<{self.type_name}>"


class RemoteTensor:
    """A tensor that was not on the CPU: only its metadata travels. No longer made by
    ``decode_value`` (such a tensor is a ``WireError``); kept for the checks that test for it."""

    def __init__(self, dtype, shape, device):
        self.dtype, self.shape, self.device = dtype, tuple(shape), device

    def __repr__(self):
        return f"RemoteTensor({self.dtype}, {self.shape}, {self.device})"


TENSOR_FIELDS = frozenset({"dtype", "shape", "device", "data", "kind"})
REFUSED_KINDS = {"subclass": "a subclass of torch.Tensor", "nested": "a nested tensor"}
KNOWN_DEVICES = ("cpu", "meta", "cuda", "mps", "xpu", "xla", "hip", "mtia", "privateuseone")
_KNOWN_DTYPES = frozenset(str(v).removeprefix("torch.") for v in vars(torch).values()
                          if isinstance(v, torch.dtype))
PLAIN = ("only plain (dense) CPU tensors of dtype " + ", ".join(list(DTYPES)[:-1]) + " or "
         + list(DTYPES)[-1] + " can be graded")


def _decode_tensor(meta, max_elements, allow_meta=False):
    """A tensor from its description, or ``WireError`` with a message for the student that
    names what was refused in the wire's own words (never a string the worker chose)."""
    if not isinstance(meta, dict) or not TENSOR_FIELDS.issuperset(meta):
        raise WireError("bad tensor")
    shape = meta.get("shape")
    if not isinstance(shape, list) or not all(type(n) is int and 0 <= n for n in shape):
        raise WireError("bad tensor shape")
    if len(shape) > 8:
        raise WireError("too many tensor dimensions")
    count = math.prod(shape)
    if count > max_elements:
        raise WireError("tensor too large")
    dtype, device, kind = meta.get("dtype"), meta.get("device"), meta.get("kind")
    if kind is not None:
        what = REFUSED_KINDS.get(kind) or (f"a tensor with the {kind} layout"
                                           if kind in ("sparse_coo", "sparse_csr", "sparse_csc",
                                                       "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged")
                                           else "a tensor of another layout")
        raise WireError(f"your code returned {what}; {PLAIN}")
    if device != "cpu" and not (device == "meta" and allow_meta):
        where = f"the {device} device" if device in KNOWN_DEVICES else "another device"
        raise WireError(f"your code returned a tensor on {where}; {PLAIN}")
    if dtype not in DTYPES:
        what = f"of dtype {dtype}" if dtype in _KNOWN_DTYPES else "of another dtype"
        raise WireError(f"your code returned a tensor {what}; {PLAIN}")
    torch_dtype = DTYPES[dtype][0]
    if device == "meta":  # shape-only tensors, for the device checks (requests that ran on meta)
        if "data" in meta:
            raise WireError("bad tensor data")
        return torch.empty(shape, dtype=torch_dtype, device="meta")
    if "data" not in meta:
        raise WireError("bad tensor data")
    raw = meta["data"]
    if isinstance(raw, Blob):  # encoded here, never framed
        raw = raw.data
    elif isinstance(raw, list):  # a trusted frame's (in the grader, where none is read: empty)
        raw = _blob(raw, _trusted_blobs)
    if not isinstance(raw, (memoryview, bytes)):
        raise WireError("bad tensor data")
    if len(raw) != count * torch_dtype.itemsize:
        raise WireError("tensor data does not match its shape")
    if not raw:
        return torch.empty(shape, dtype=torch_dtype)
    return torch.frombuffer(bytearray(raw), dtype=torch_dtype).reshape(shape)
