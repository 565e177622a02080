"""The untrusted side of localization: the tensors a student's forward makes, and where.

Loaded by the worker as a plain script (like ``wire``): it imports only the standard library
and torch. A request with ``"trace": {...}`` runs under ``Tracer``, a ``TorchFunctionMode`` that
notes, for every torch function the student's code calls, each floating-point tensor it
returns: a plain CPU copy of its values, the op's name, the student's cell and line that made
the call (the innermost frame of the student's code, and the outermost: the line of the
target's own forward that led to it), and which earlier entries were its
tensor arguments (the data flow, by object identity while the call lasts). The call's own
arguments come first, as entries of op ``input``. Bounded: at most ``MAX_ENTRIES`` entries, a
tensor of at most ``MAX_ELEMENTS`` elements, ``MAX_TOTAL`` elements in all; past that the rest is
only counted.

The grader uses the trace for feedback only (``autograder.checks.localization``): it never
decides a point, so a student's code that lies in it, hides from it or breaks it changes no
verdict. Inside a ``torch.func`` transform (``vmap``, ``grad``, ``jvp``) a tensor is unwrapped
to the plain tensor below it (a vmapped head's scores are recorded as all heads' scores, the
mapped dimensions first) before it is copied, so nothing escapes the transform; the worker's
recorder copies a sub-layer's arguments and result the same way (``plain_copy``).
"""

import sys

import torch
from torch.overrides import TorchFunctionMode

STUDENT_FILE_PREFIX = "<student "
MAX_ENTRIES = 600
MAX_ELEMENTS = 50_000
MAX_TOTAL = 1_000_000
MAX_INPUTS = 8  # data-flow links kept per entry
MAX_UNWRAP = 8  # levels of torch.func wrappers taken off a tensor
_functorch = getattr(torch._C, "_functorch", None)


def plain_copy(tensor):
    """A detached plain ``torch.Tensor`` copy of ``tensor``'s values on the CPU, taken without
    running a ``__torch_function__`` of the student's (a subclass's) and from below any
    ``torch.func`` wrapper; None when it cannot be read (a meta tensor, say)."""
    try:
        with torch._C.DisableTorchFunctionSubclass():
            value = unwrapped(tensor)
            value = torch.Tensor.detach(value)
            if type(value) is not torch.Tensor:
                value = torch.Tensor.as_subclass(value, torch.Tensor)
            if value.device.type != "cpu":
                if value.device.type == "meta":
                    return None
                value = torch.Tensor.cpu(value)
            return torch.Tensor.clone(value)
    except Exception:  # a tensor this cannot read: nothing is noted
        return None


def unwrapped(tensor):
    """The plain tensor below any ``torch.func`` wrapper (vmap's batched, grad's, jvp's), each
    mapped dimension moved to the front, outermost first: what a call inside ``vmap`` got for
    every example at once."""
    if _functorch is None:
        return tensor
    for _ in range(MAX_UNWRAP):
        if not _functorch.is_functorch_wrapped_tensor(tensor):
            break
        if _functorch.is_batchedtensor(tensor):
            dim = _functorch.maybe_get_bdim(tensor)
            tensor = _functorch.get_unwrapped(tensor)
            if dim > 0:
                tensor = torch.Tensor.movedim(tensor, dim, 0)
        else:
            tensor = _functorch.get_unwrapped(tensor)
    return tensor


def inside_transform():
    """Whether a ``torch.func`` transform (vmap, grad, jvp, ...) is running now."""
    return _functorch is not None and _functorch.peek_interpreter_stack() is not None


def student_places():
    """((origin, line) of the innermost frame of the student's code, (origin, line) of the
    outermost: the target's own forward), or None."""
    frame = sys._getframe(2)
    inner = outer = None
    depth = 0
    while frame is not None and depth < 200:
        name = frame.f_code.co_filename
        if name.startswith(STUDENT_FILE_PREFIX):
            outer = name[len(STUDENT_FILE_PREFIX):-1][:80], frame.f_lineno
            inner = inner or outer
        frame, depth = frame.f_back, depth + 1
    return (inner, outer) if inner else None


def _tensors(value, depth=3):
    if isinstance(value, torch.Tensor):
        yield value
    elif depth > 0 and isinstance(value, (tuple, list)):
        for item in list(value)[:16]:
            yield from _tensors(item, depth - 1)
    elif depth > 0 and isinstance(value, dict):
        for item in list(value.values())[:16]:
            yield from _tensors(item, depth - 1)


class Tracer(TorchFunctionMode):
    """Notes the tensors each torch function returns while it is active (see the module's
    docstring). ``entries``: dicts with ``value``, ``op``, ``origin``, ``line``, ``inputs``."""

    def __init__(self, spec=None):
        super().__init__()
        spec = spec if isinstance(spec, dict) else {}
        self.max_entries = min(int(spec.get("max_entries", MAX_ENTRIES)), MAX_ENTRIES)
        self.entries, self.dropped, self.total = [], 0, 0
        self._index = {}  # id(tensor) -> its latest entry
        self._alive = []  # the tensors noted, kept alive so that their ids are not reused

    def add_inputs(self, args, kwargs):
        for tensor in _tensors((args, kwargs)):
            self._note(tensor, "input", None, [])

    def _note(self, tensor, op, place, inputs):
        if not torch.Tensor.is_floating_point(tensor):
            return
        if len(self.entries) >= self.max_entries:
            self.dropped += 1
            return
        value = plain_copy(tensor)
        if value is None:
            return
        count = value.numel()
        if count > MAX_ELEMENTS or self.total + count > MAX_TOTAL:
            self.dropped += 1
            return
        self.total += count
        self._index[id(tensor)] = len(self.entries)
        self._alive.append(tensor)
        (origin, line), outer = place if place else ((None, None), (None, None))
        self.entries.append({"value": value, "op": op, "origin": origin, "line": line,
                             "outer": [outer[0], outer[1]], "inputs": inputs[:MAX_INPUTS]})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        try:
            self._after(func, args, kwargs, result)
        except Exception:  # noting never changes what the student's code computes
            self.dropped += 1
        return result

    def _after(self, func, args, kwargs, result):
        outputs = [t for t in _tensors(result, 1)]
        if not outputs or len(self.entries) >= self.max_entries:
            if outputs:
                self.dropped += 1
            return
        place = student_places()
        if place is None:
            return
        inputs = []
        for tensor in _tensors((args, kwargs)):
            index = self._index.get(id(tensor))
            if index is not None and index not in inputs:
                inputs.append(index)
        name = getattr(func, "__name__", None) or type(func).__name__
        for tensor in outputs[:8]:
            self._note(tensor, str(name)[:40], place, inputs)

    def report(self, encode):
        """The trace as plain data (``encode``: the wire's ``encode_value``)."""
        return {"entries": [{**entry, "value": encode(entry["value"])} for entry in self.entries],
                "dropped": self.dropped}
