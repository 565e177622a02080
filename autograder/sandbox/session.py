"""The trusted grader's handle on one submission running in a worker.

A ``Session`` starts the worker lazily, loads the student's code into it, and
restarts it after a crash or a timeout so that one bad check does not take
the others down. It also answers the worker's callbacks for reference
sub-layers that were swapped into a student's block: those run here, in the
trusted process.
"""

import copy
import inspect
import itertools
from dataclasses import dataclass, field

import torch

from autograder.reference_weights import deterministic_weights
from autograder.sandbox import wire
from autograder.sandbox.process import Limits, StudentError, WorkerFailure, shared_zygote

__all__ = ["Session", "RemoteObject", "StudentError", "WorkerFailure"]


@dataclass
class RemoteObject:
    """A student object that lives in the worker; only its id and structure are known here."""

    id: str
    name: str
    params: dict  # attribute path -> shape, each parameter once (what counts)
    aliases: dict  # every attribute path of a parameter -> shape (shared ones too)
    modules: dict  # attribute path -> type name
    proxies: dict = field(default_factory=dict)  # attribute path -> handle


class Session:
    def __init__(self, chunks, names, reference, limits=Limits(), startup_timeout=60.0,
                 request_timeout=20.0, max_restarts=3, zygote=None, slot=0):
        self.chunks = chunks
        self.names = list(names)
        self.reference = reference
        self.limits = limits
        self.startup_timeout = startup_timeout
        self.request_timeout = request_timeout
        self.max_restarts = max_restarts
        self.zygote = zygote
        self.slot = slot
        self.worker = None
        self.starts = 0
        self.load_info = None
        self.load_failure = None
        self.output_tail = ""
        self._ids = itertools.count(1)
        self._handles = {}
        self._in_grad_request = False
        self._calls = {}  # reference calls made for the worker, kept for their backward
        self._calls_without_grad = set()  # proxy handles the last request ran outside autograd

    # -- lifecycle -------------------------------------------------------------
    def _ensure_worker(self):
        if self.worker is not None and self.worker.alive:
            return
        self._drop_worker()
        if self.load_failure is not None:
            raise self.load_failure  # loading the code itself hangs or crashes: no point retrying
        if self.starts > self.max_restarts:
            raise WorkerFailure("gave_up", f"the worker failed {self.starts} times")
        self.starts += 1
        self.zygote = self.zygote or shared_zygote()
        self.worker = self.zygote.spawn(self.limits, self.slot)
        try:
            info = self.worker.request(
                {"op": "load", "chunks": self.chunks, "names": self.names},
                timeout=self.startup_timeout)
        except WorkerFailure as failure:
            self.load_failure = WorkerFailure(f"load_{failure.kind}", failure.detail)
            raise self.load_failure from None
        if self.load_info is None:
            self.load_info = _validate_load_info(info, self.names)

    def load(self):
        """Start the worker and load the code; returns what the names turned out to be."""
        self._request({"op": "ping"})
        return self.load_info

    def _drop_worker(self):
        if self.worker is not None:
            self.output_tail = self.worker.output_tail()
            self.worker.close()
            self.worker = None

    def close(self):
        self._drop_worker()

    def _request(self, message, timeout=None):
        self._calls.clear()
        self._calls_without_grad.clear()
        self._in_grad_request = message.get("op") == "grad"
        try:
            self._ensure_worker()
            return self.worker.request(message, timeout or self.request_timeout, self._callback)
        except WorkerFailure:
            self._drop_worker()
            raise

    # -- reference sub-layers swapped into a student's block ----------------------
    def _callback(self, request):
        kind = request.get("kind")
        if kind == "new":
            args, kwargs = self._callback_arguments(request)
            cls = getattr(self.reference, str(request.get("name")))
            handle = len(self._handles) + 1
            module = _call_with_contract_arguments(cls, args, kwargs).eval()
            self._handles[handle] = deterministic_weights(module, seed=handle)
            return handle
        if kind == "call":
            return self._reference_call(request)
        if kind == "func" and request.get("name") in ("causal_mask",):
            args, kwargs = self._callback_arguments(request)
            return _call_with_contract_arguments(self.reference.causal_mask, args, kwargs)
        if kind == "vjp":
            inputs, outputs = self._calls[int(request["call"])]
            grads = wire.decode_value(request.get("grads"))
            pairs = [(o, g) for o, g in zip(outputs, grads)
                     if isinstance(g, torch.Tensor) and o.requires_grad and g.shape == o.shape]
            wanted = [t for t in inputs if t.requires_grad]
            found = iter(torch.autograd.grad([o for o, _ in pairs], wanted, [g.to(o.dtype) for o, g in pairs],
                                             allow_unused=True) if pairs and wanted else ())
            return [next(found, None) if t.requires_grad else None for t in inputs]
        raise ValueError(f"unknown callback {kind!r}")

    @staticmethod
    def _callback_arguments(request):
        args = wire.decode_value(request.get("args"))
        kwargs = wire.decode_value(request.get("kwargs"))
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ValueError("bad callback arguments")
        return args, kwargs

    def _reference_call(self, request):
        module = self._handles[int(request["handle"])]
        args, kwargs = self._callback_arguments(request)
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        floats = [t for t in tensors if t.is_floating_point()]
        dtype = floats[0].dtype if floats else None
        if dtype is not None and next(module.parameters()).dtype != dtype:
            module = copy.deepcopy(module).to(dtype)  # never change the trusted module itself
        grad = bool(request.get("grad"))
        if self._in_grad_request and not grad:
            self._calls_without_grad.add(int(request["handle"]))
        if grad:
            args = [a.requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                    for a in args]
            kwargs = {k: v.requires_grad_() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                      for k, v in kwargs.items()}
        with torch.set_grad_enabled(grad):
            outputs = _call_with_contract_arguments(module.forward, args, kwargs)
        call = len(self._calls) + 1
        listed = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        self._calls[call] = ([a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)], listed)
        detached = [o.detach() for o in listed]
        return {"call": call, "outputs": detached[0] if not isinstance(outputs, (tuple, list)) else detached}

    def sublayers_called_without_grad(self, obj):
        """Attribute paths of the swapped-in sub-layers that the last gradient request ran
        under ``no_grad`` or on detached inputs."""
        return sorted(path for path, handle in obj.proxies.items() if handle in self._calls_without_grad)

    def bind_proxies(self, obj, reference_module):
        """Make each swapped-in sub-layer compute with the reference module's own sub-layer,
        unless the student built it with other sizes (e.g. a hard-coded number of heads)."""
        for path, handle in obj.proxies.items():
            try:
                target = reference_module.get_submodule(path)
            except AttributeError:
                continue  # stored under a name the contract does not know: the wiring check fails
            built = self._handles.get(handle)
            if built is not None and _configuration(built) != _configuration(target):
                continue  # keep the instance built with the student's own sizes
            self._handles[handle] = target

    # -- operations ----------------------------------------------------------------
    def new(self, name, *args, proxies=None, dtype=None, device=None, repeat=1, **kwargs):
        object_id = f"o{next(self._ids)}"
        info = self._request({
            "op": "new", "id": object_id, "name": name,
            "args": wire.encode_value(list(args)), "kwargs": wire.encode_value(kwargs),
            "proxies": list(proxies or ()), "dtype": dtype, "device": device, "repeat": repeat,
        })
        try:
            return RemoteObject(
                id=object_id, name=name,
                params={str(p): tuple(int(n) for n in s) for p, s in info["params"]},
                aliases={str(p): tuple(int(n) for n in s) for p, s in info["aliases"]},
                modules={str(p): str(t) for p, t in info["modules"]},
                proxies={str(p): int(h) for p, h in info["proxies"]},
            )
        except (KeyError, TypeError, ValueError):
            raise WorkerFailure("bad_reply", "malformed description of a new object") from None

    def set_params(self, obj, values):
        info = self._request({"op": "set", "id": obj.id,
                              "values": {p: wire.encode_value(t) for p, t in values.items()}})
        try:
            return [str(p) for p in info["missing"]], [(str(p), s) for p, s in info["mismatched"]]
        except (KeyError, TypeError, ValueError):
            raise WorkerFailure("bad_reply", "malformed answer to set") from None

    @staticmethod
    def _target(target, proxies=None):
        if isinstance(target, RemoteObject):
            return {"obj": target.id}
        return {"func": target, "proxies": list(proxies or ())}

    def call(self, target, *args, proxies=None, **kwargs):
        """Run a student function or module; returns its result."""
        return self._call(target, args, kwargs, proxies, return_inputs=False)[0]

    def call_returning_inputs(self, target, *args, **kwargs):
        """Run it and also return the inputs as they were afterwards (to spot in-place edits)."""
        return self._call(target, args, kwargs, None, return_inputs=True)

    def _call(self, target, args, kwargs, proxies, return_inputs):
        reply = self._request({"op": "call", "target": self._target(target, proxies),
                               "args": wire.encode_value(list(args)), "kwargs": wire.encode_value(kwargs),
                               "return_inputs": return_inputs})
        try:
            after = wire.decode_value(reply["inputs_after"]) if return_inputs else None
            return wire.decode_value(reply["result"]), after
        except (KeyError, TypeError, wire.WireError) as error:
            raise WorkerFailure("bad_reply", str(error)) from None

    def grad(self, target, cotangent, *args, **kwargs):
        """Gradients of every parameter and input after backpropagating <cotangent, output>:
        ({path: tensor or None}, [tensor or None per argument])."""
        reply = self._request({"op": "grad", "target": self._target(target),
                               "cotangent": wire.encode_value(cotangent),
                               "args": wire.encode_value(list(args)),
                               "kwargs": wire.encode_value(kwargs)})
        try:
            params = wire.decode_value(reply["param_grads"])
            inputs = wire.decode_value(reply["input_grads"])
        except (KeyError, TypeError, wire.WireError) as error:
            raise WorkerFailure("bad_reply", str(error)) from None
        if not isinstance(params, dict) or not isinstance(inputs, list):
            raise WorkerFailure("bad_reply", "malformed gradient report")
        return params, inputs


def _configuration(module):
    """What construction decided: parameter shapes and plain settings (e.g. num_heads)."""
    settings = {k: v for k, v in vars(module).items()
                if isinstance(v, (int, float, bool, str)) and k != "training"}
    return [tuple(p.shape) for p in module.parameters()], settings


def _call_with_contract_arguments(function, args, kwargs):
    """Call a reference function with the arguments the contract names; a student's extra
    optional arguments (dropout=..., device=...) are dropped."""
    parameters = [p for p in inspect.signature(function).parameters.values()
                  if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in parameters]
    kept = {k: v for k, v in kwargs.items() if k in names[len(args):]}
    return function(*args[:len(names)], **kept)


def _validate_load_info(info, names):
    try:
        errors = [
            {"origin": str(e.get("origin", ""))[:80], "type": str(e.get("type", ""))[:80],
             "message": str(e.get("message", ""))[:2000],
             "where": [str(w)[:200] for w in e.get("where", [])][:3]}
            for e in info["errors"][:50]
        ]
        described = {name: dict(info["names"].get(name, {"kind": "missing"})) for name in names}
    except (KeyError, TypeError, AttributeError, ValueError):
        raise WorkerFailure("bad_reply", "malformed load report") from None
    return {"errors": errors, "names": described}
