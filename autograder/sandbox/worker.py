"""The untrusted side: runs student code and answers the grader with plain data.

Started as a script (``python -I -S worker.py READ_FD WRITE_FD SITE_DIR...``) so that neither the
autograder package nor the reference solution is importable here. It never
receives an expected value: it builds the student's objects, copies in the
weights it is sent, runs them on the inputs it is sent and returns what came
out. Every decision is taken by the grader on the other end of the pipe.

``serve(read_fd, write_fd)`` is the whole protocol, so a pre-forked process
that already imported torch can call it in a child after ``fork``.
"""

import inspect
import os
import sys
import traceback

if __name__ == "__main__":
    sys.path[:0] = sys.argv[3:]  # site-packages that hold torch and numpy
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import wire  # noqa: E402

STUDENT_FILE_PREFIX = "<student "
MAX_MESSAGE = 2000
_get = object.__getattribute__  # a student's __getattr__ / properties cannot intercept this


class Channel:
    """Frames over two pipes; the worker only ever answers or asks a callback."""

    def __init__(self, read_fd, write_fd):
        self.read_fd, self.write_fd = read_fd, write_fd

    def _read_exact(self, n):
        chunks = []
        while n:
            chunk = os.read(self.read_fd, n)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def receive(self):
        (size,) = wire.HEADER.unpack(self._read_exact(wire.HEADER.size))
        return wire.decode_frame(self._read_exact(size))

    def send(self, message):
        wire.write_frame(self._write_all, message)

    def _write_all(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view):]

    def callback(self, request):
        """Ask the grader to run a reference part (used for swapped-in sub-layers)."""
        self.send({"callback": request})
        reply = self.receive()
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return wire.decode_value(reply["result"])


def _short(text):
    text = str(text)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + " ..."


def describe_exception(error):
    """Type, message and the student's own lines of the traceback."""
    try:
        message = _short(error)
    except BaseException:  # a hostile __str__
        message = "<unprintable message>"
    frames = []
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename.startswith(STUDENT_FILE_PREFIX):
            label = frame.filename[len(STUDENT_FILE_PREFIX):-1]
            frames.append(f"{label}, line {frame.lineno}, in {frame.name}")
    return {"type": type(error).__name__, "message": message, "where": frames[-3:]}


def _module_tree(root):
    """Modules and parameters read from nn.Module's own dictionaries, not from methods a
    submission could override (a ``parameters()`` that lies changes nothing here).
    Returns (path, module) pairs, parameters counted once, and every alias of each."""
    modules, params, aliases, seen_params = [], [], [], set()
    stack = [("", root, frozenset())]
    while stack and len(modules) < 10_000:
        path, module, ancestors = stack.pop()
        modules.append((path, module))
        prefix = path + "." if path else ""
        for name, param in _get(module, "_parameters").items():
            if isinstance(param, torch.nn.Parameter):
                shape = list(torch.Tensor.size(param))
                aliases.append([prefix + name, shape])
                if id(param) not in seen_params:
                    seen_params.add(id(param))
                    params.append([prefix + name, shape])
        inner = ancestors | {id(module)}
        children = [(prefix + name, child, inner) for name, child in _get(module, "_modules").items()
                    if isinstance(child, torch.nn.Module) and id(child) not in inner]
        stack.extend(reversed(children))
    return modules, params, aliases


def _resolve(root, path):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


class _RemoteSublayer(torch.autograd.Function):
    """A swapped-in reference sub-layer: the grader computes its forward and, when autograd
    asks, its vector-Jacobian product, so gradients flow through the student's wiring."""

    @staticmethod
    def forward(ctx, channel, handle, layout, wants_grad, *tensors):
        args, kwargs = _rebuild(layout, tensors)
        reply = channel.callback({"kind": "call", "handle": handle, "grad": wants_grad,
                                  "args": wire.encode_value(args), "kwargs": wire.encode_value(kwargs)})
        ctx.channel, ctx.call = channel, reply["call"]
        outputs = reply["outputs"]
        ctx.single = isinstance(outputs, torch.Tensor)
        return outputs if ctx.single else tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        reply = ctx.channel.callback({"kind": "vjp", "call": ctx.call, "grads": wire.encode_value(list(grads))})
        return (None, None, None, None, *reply)


def _rebuild(layout, tensors):
    values = [tensors[item] if kind == "tensor" else item for kind, item in layout]
    count = len(values) - len(layout.names)
    return values[:count], dict(zip(layout.names, values[count:]))


class _Layout(list):
    names = ()


def _make_proxy_class(channel, name):
    class ReferenceProxy(torch.nn.Module):
        """Stands in for a reference sub-layer; the grader computes its output."""

        def __init__(self, *args, **kwargs):
            super().__init__()
            self.proxy_handle = channel.callback(
                {"kind": "new", "name": name,
                 "args": wire.encode_value(list(args)), "kwargs": wire.encode_value(kwargs)})

        def forward(self, *args, **kwargs):
            layout, tensors = _Layout(), []
            layout.names = tuple(kwargs)
            for value in (*args, *kwargs.values()):
                if isinstance(value, torch.Tensor):
                    layout.append(("tensor", len(tensors)))
                    tensors.append(value)
                else:
                    layout.append(("value", value))
            # grad mode is off inside Function.forward: decide here whether autograd is watching
            wants_grad = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
            return _RemoteSublayer.apply(channel, self.proxy_handle, layout, wants_grad, *tensors)

    ReferenceProxy.__name__ = ReferenceProxy.__qualname__ = f"Reference{name}"
    return ReferenceProxy


def _make_proxy_function(channel, name):
    def reference_function(*args, **kwargs):
        placement = {k: kwargs.pop(k) for k in ("device", "dtype") if k in kwargs}
        result = channel.callback({"kind": "func", "name": name, "args": wire.encode_value(list(args)),
                                   "kwargs": wire.encode_value(kwargs)})
        placement = {k: v for k, v in placement.items() if v is not None}
        return result.to(**placement) if placement else result

    reference_function.__name__ = name
    return reference_function


class Worker:
    def __init__(self, channel):
        self.channel = channel
        self.chunks = []
        self.namespaces = {}
        self.objects = {}

    # -- loading -------------------------------------------------------------
    def _execute_chunks(self, namespace):
        errors = []
        for chunk in self.chunks:
            filename = f"{STUDENT_FILE_PREFIX}{chunk['origin']}>"
            try:
                code = compile(chunk["code"], filename, "exec")
                exec(code, namespace)
            except BaseException as error:  # SystemExit too: a student's exit() is just an error
                errors.append({"origin": chunk["origin"], **describe_exception(error)})
        return errors

    def op_load(self, request):
        self.chunks = list(request["chunks"])
        namespace = {"__name__": "submission", "__builtins__": __builtins__}
        errors = self._execute_chunks(namespace)
        self.namespaces = {(): namespace}
        return {"errors": errors, "names": {n: self._describe(namespace, n) for n in request["names"]}}

    @staticmethod
    def _describe(namespace, name):
        if name not in namespace:
            return {"kind": "missing"}
        obj = namespace[name]
        if isinstance(obj, type):
            kind, is_module = "class", issubclass(obj, torch.nn.Module)
            target = obj.__init__
        elif callable(obj):
            kind, is_module, target = "function", False, obj
        else:
            return {"kind": "other", "type": type(obj).__name__}
        try:
            parameters = [
                {"name": p.name, "kind": p.kind.name, "default": p.default is not p.empty}
                for p in inspect.signature(target).parameters.values()
            ]
        except (TypeError, ValueError):
            parameters = None
        if kind == "class" and parameters:
            parameters = parameters[1:]  # drop self
        forward = None
        if is_module:
            try:
                forward = [
                    {"name": p.name, "kind": p.kind.name, "default": p.default is not p.empty}
                    for p in list(inspect.signature(obj.forward).parameters.values())[1:]
                ]
            except (TypeError, ValueError):
                forward = None
        return {"kind": kind, "is_module": is_module, "parameters": parameters, "forward": forward}

    def _namespace(self, proxies):
        key = tuple(sorted(proxies))
        if key not in self.namespaces:
            namespace = {"__name__": "submission", "__builtins__": __builtins__}
            self._execute_chunks(namespace)
            for name in proxies:
                is_class = isinstance(namespace.get(name), type) or name[:1].isupper()
                namespace[name] = (_make_proxy_class if is_class else _make_proxy_function)(self.channel, name)
            self.namespaces[key] = namespace
        return self.namespaces[key]

    # -- objects -------------------------------------------------------------
    def op_new(self, request):
        namespace = self._namespace(request.get("proxies", []))
        cls = namespace[request["name"]]
        args = wire.decode_value(request.get("args", []))
        kwargs = wire.decode_value(request.get("kwargs", {}))
        repeat = request.get("repeat", 1)
        if repeat > 1:
            obj = torch.nn.Sequential(*[cls(*args, **kwargs) for _ in range(repeat)])
        else:
            obj = cls(*args, **kwargs)
        if not isinstance(obj, torch.nn.Module):
            raise TypeError(f"{request['name']}(...) did not create a torch.nn.Module")
        obj.eval()
        if request.get("dtype"):
            obj.to(wire.DTYPES[request["dtype"]][0])
        if request.get("device"):
            obj.to(torch.device(request["device"]))
        self.objects[request["id"]] = obj
        modules, params, aliases = _module_tree(obj)
        return {
            "params": params,
            "aliases": aliases,
            "modules": [[path, type(m).__name__] for path, m in modules if path],
            "proxies": [[path, _get(m, "proxy_handle")] for path, m in modules
                        if type(m).__name__.startswith("Reference") and "proxy_handle" in _get(m, "__dict__")],
        }

    def op_set(self, request):
        obj = self.objects[request["id"]]
        missing, mismatched = [], []
        with torch.no_grad():
            for path, value in request["values"].items():
                tensor = wire.decode_value(value)
                try:
                    target = _resolve(obj, path)
                except AttributeError:
                    missing.append(path)
                    continue
                if target is None:  # e.g. nn.Linear(..., bias=False)
                    missing.append(path)
                    continue
                if not isinstance(target, torch.Tensor) or target.shape != tensor.shape:
                    mismatched.append([path, list(getattr(target, "shape", []))])
                    continue
                target.copy_(tensor)
        return {"missing": missing, "mismatched": mismatched}

    def _target(self, target):
        if "obj" in target:
            return self.objects[target["obj"]]
        return self._namespace(target.get("proxies", []))[target["func"]]

    def op_call(self, request):
        fn = self._target(request["target"])
        args = wire.decode_value(request.get("args", []))
        kwargs = wire.decode_value(request.get("kwargs", {}))
        with torch.no_grad():
            result = fn(*args, **kwargs)
        reply = {"result": wire.encode_value(result)}
        if request.get("return_inputs"):
            reply["inputs_after"] = wire.encode_value(args)
        return reply

    def op_grad(self, request):
        """Backpropagate <cotangent, first output>; return the gradients that arrived."""
        fn = self._target(request["target"])
        args = wire.decode_value(request.get("args", []))
        kwargs = wire.decode_value(request.get("kwargs", {}))
        cotangent = wire.decode_value(request["cotangent"])
        for arg in args:
            if isinstance(arg, torch.Tensor) and arg.is_floating_point():
                arg.requires_grad_(True)
        with torch.enable_grad():
            result = fn(*args, **kwargs)
            first = result[0] if isinstance(result, (tuple, list)) else result
            (first * cotangent).sum().backward()
        params = {}
        if isinstance(fn, torch.nn.Module):
            params = {path: p.grad for path, p in fn.named_parameters()}
        inputs = [a.grad if isinstance(a, torch.Tensor) else None for a in args]
        return {"param_grads": wire.encode_value(params), "input_grads": wire.encode_value(inputs)}

    def op_ping(self, request):
        return {"pong": True}


def serve(read_fd, write_fd):
    torch.set_num_threads(1)  # a forked child must not reuse the parent's thread pool
    channel = Channel(read_fd, write_fd)
    worker = Worker(channel)
    while True:
        try:
            request = channel.receive()
        except EOFError:
            return
        handler = getattr(worker, "op_" + str(request.get("op")), None)
        try:
            if handler is None:
                raise ValueError(f"unknown op {request.get('op')!r}")
            reply = {"ok": handler(request)}
        except BaseException as error:
            reply = {"error": describe_exception(error)}
        try:
            channel.send(reply)
        except (ValueError, TypeError, OverflowError) as error:  # not JSON-able
            channel.send({"error": {"type": type(error).__name__, "message": _short(error), "where": []}})


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
