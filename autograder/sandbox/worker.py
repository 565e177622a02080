"""The untrusted side: runs student code and answers the grader with plain data.

Started as a script (``python -I -S worker.py READ_FD WRITE_FD SITE_DIR...``) so that neither the
autograder package nor the reference solution is importable here. It never
receives an expected value: it builds the student's objects, copies in the
weights it is sent, runs them on the inputs it is sent and returns what came
out. Every decision is taken by the grader on the other end of the pipe.

The worker never asks the grader for anything: it reads a request, answers it, and reads
the next one. The grader treats any other frame as a protocol violation. What the grader
needs to see inside a student's block, it asks for in the request (``record``): the
student's own sub-layers are wrapped for that one call and every call's inputs and outputs
come back with the result (see ``_Recorder``).

``serve(read_fd, write_fd)`` is the whole protocol, so a pre-forked process
that already imported torch can call it in a child after ``fork``.
"""

import contextlib
import inspect
import os
import sys
import traceback

if __name__ == "__main__":
    sys.path[:0] = sys.argv[3:]  # site-packages that hold torch and numpy
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import tracing  # noqa: E402
import wire  # noqa: E402

STUDENT_FILE_PREFIX = "<student "
MAX_MESSAGE = 2000
# torch.manual_seed also seeds every accelerator backend lazily, and on a machine without one
# each call formats the whole stack for a possible later error report (~0.15 ms, a few hundred
# times per submission): the CPU generator alone is what a worker draws from. Bound here, before
# any student code runs.
manual_seed = torch.default_generator.manual_seed
_get = object.__getattribute__  # a student's __getattr__ / properties cannot intercept this


class Channel:
    """Frames over two pipes; the worker only ever answers the request it was sent."""

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
        return wire.decode_trusted_frame(self._read_exact(size))  # from the grader: no limits to check

    def send(self, message):
        wire.write_frame(self._write_all, message)

    def _write_all(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view):]



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
    return {"type": type(error).__name__, "message": message, "where": frames[-3:],
            "builtin": _builtin_base(type(error))}


def _builtin_base(cls):
    """The nearest built-in exception class of ``cls``: "ValueError" for a student's own
    ``class TooLong(ValueError)``, so that a check that wants a ValueError accepts it."""
    try:
        return next(base.__name__ for base in cls.__mro__ if base.__module__ == "builtins")[:80]
    except BaseException:  # a hostile metaclass
        return "Exception"


def describe_failure(worker, error):
    """``describe_exception``, with the trace of a traced call that raised (``op_call``: the
    tensors made before the error, for localization) where ``worker`` holds one for ``error``."""
    described = describe_exception(error)
    traced, worker.error_trace = getattr(worker, "error_trace", None), None
    if traced is not None and traced[0] is error:
        described["trace"] = traced[1]
    return described


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


# -- recording the student's own sub-layers for one request ------------------------------------
MAX_RECORDS = 64  # calls recorded per request; a block makes a handful
MAX_RECORDED = 8  # sub-layers and functions one request may ask to record
MAX_SNAPSHOT_DEPTH = 4
MAX_CALLS = 32  # calls one request may hold
MAX_BATCH = 16  # requests one batch may hold (the grader defers at most 8 new ones)
METHODS = ("encode", "decode")  # the contract's methods a request may call on an object


def _snapshot(value, depth=MAX_SNAPSHOT_DEPTH):
    """A copy of a call's argument or result as it is now (later in-place edits do not reach it);
    a tensor becomes a plain ``torch.Tensor`` (a subclass of the student's is read without its
    ``__torch_function__``; inside ``torch.func.vmap`` the tensor of every example at once, the
    mapped dimensions first), or None when it cannot be read."""
    if isinstance(value, torch.Tensor):
        if type(value) is torch.Tensor and not tracing.inside_transform():
            return torch.Tensor.clone(torch.Tensor.detach(value))
        return tracing.plain_copy(value)
    if depth > 0 and isinstance(value, (tuple, list)):
        return type(value)(_snapshot(v, depth - 1) for v in value) if type(value) in (tuple, list) \
            else tuple(_snapshot(v, depth - 1) for v in value)
    if depth > 0 and isinstance(value, dict):
        return {str(k): _snapshot(v, depth - 1) for k, v in value.items()}
    return value


def _needs_grad(tensor):
    """Whether autograd tracks ``tensor`` (inside ``torch.func.vmap``: the tensor below it)."""
    return tracing.unwrapped(tensor).requires_grad if tracing.inside_transform() else tensor.requires_grad


def _tensors(value, depth=MAX_SNAPSHOT_DEPTH):
    if isinstance(value, torch.Tensor):
        yield value
    elif depth > 0 and isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item, depth - 1)
    elif depth > 0 and isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, depth - 1)


def _copies(value):
    if isinstance(value, torch.Tensor):
        return torch.Tensor.clone(value)
    if isinstance(value, dict):
        return {k: _copies(v) for k, v in value.items()}
    if type(value) in (tuple, list):
        return type(value)(_copies(v) for v in value)
    return value


def _same_structure(value, standin):
    """Does a sub-layer's result look like the stand-in the grader offered (a tensor of the
    same shape, or a sequence of such)? dtypes and devices may differ."""
    if isinstance(standin, torch.Tensor):
        return isinstance(value, torch.Tensor) and tuple(value.shape) == tuple(standin.shape)
    if isinstance(standin, (tuple, list)):
        return (isinstance(value, (tuple, list)) and len(value) == len(standin)
                and all(_same_structure(v, s) for v, s in zip(value, standin)))
    return True


def _nothing_finite(value):
    """Every floating tensor of a result is NaN or inf throughout (and there is one)."""
    found = [t for t in _tensors(value) if torch.is_floating_point(t) and t.numel()]
    return bool(found) and not any(bool(torch.isfinite(t.detach()).any()) for t in found)


def _structure(value):
    """A short description of a result, for the grader's messages (no values)."""
    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype)[:40]}
    if isinstance(value, (tuple, list)):
        return [_structure(v) for v in list(value)[:4]]
    return {"type": type(value).__name__[:80]}


_SIGNATURES = {}  # (function, bound) -> (its defaults, _signature's answer); see _signature
MAX_SIGNATURES = 256


def _signature(function):
    """[[name, kind, has_default], ...] and the simple defaults of a callable, or (None, {}).
    A recorded sub-layer's ``forward`` is read at every request: the answer for a Python
    function (or a method bound to one) is kept, for as long as its defaults are the same."""
    plain = getattr(function, "__func__", function)
    if not inspect.isfunction(plain):
        return _read_signature(function)
    key, defaults = (plain, plain is not function), (plain.__defaults__, plain.__kwdefaults__)
    known = _SIGNATURES.get(key)
    if known is None or known[0][0] is not defaults[0] or known[0][1] is not defaults[1]:
        known = (defaults, _read_signature(function))
        if known[1][0] is None or len(_SIGNATURES) >= MAX_SIGNATURES:
            return known[1]
        _SIGNATURES[key] = known
    params, simple_defaults = known[1]
    return [list(p) for p in params], dict(simple_defaults)


def _read_signature(function):
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None, {}
    params, defaults = [], {}
    for p in parameters[:16]:
        params.append([p.name, p.kind.name, p.default is not p.empty])
        if p.default is not p.empty and (p.default is None or isinstance(p.default, (bool, int, float, str))):
            defaults[p.name] = p.default
    return params, defaults


class _Recorder:
    """For one request, wraps the student's own sub-layers (module attributes of the target,
    by path) and module-level functions (by name) so that each call's arguments, as passed,
    and result are recorded. Everything is put back afterwards.

    The grader may offer a stand-in for a sub-layer's n-th call: ``{"result": value, "inputs":
    [shape, ...]}``. It is used only when the call's floating-point tensor arguments have those
    shapes (the block called the sub-layer as the contract says) and the sub-layer raised or
    returned something of another form than ``value``: a broken sub-layer then does not take
    the block's own checks down with it. The record says when it happened. A call with a
    stand-in on offer gets copies of its tensor arguments, so that a sub-layer that edits its
    inputs in place does not change the block's tensors either."""

    def __init__(self, worker, root, spec):
        owner = getattr(root, "__self__", None)  # a method of the contract's (encode, decode)
        if isinstance(owner, torch.nn.Module) and not isinstance(root, torch.nn.Module):
            root = owner
        self.worker, self.root = worker, root
        self.modules = [str(p) for p in list(spec.get("modules") or [])[:MAX_RECORDED]]
        self.functions = [str(f) for f in list(spec.get("functions") or [])[:MAX_RECORDED]]
        standins = wire.decode_value(spec.get("standins") or {"__dict__": {}}, meta=True)
        if not isinstance(standins, dict):
            standins = {}
        self.standins = {str(k): [s for s in v if isinstance(s, dict) and "result" in s]
                         for k, v in standins.items() if isinstance(v, list)}
        self.records, self.dropped, self.counts = [], 0, {}
        self.seed = spec.get("seed") if isinstance(spec.get("seed"), int) else 0
        self._undo = []
        self._pending, self._opened = {}, {}  # id(sub-layer) -> its hooks' state (see _hook)

    def __enter__(self):
        by_module = {}
        for path in self.modules:
            module = _submodule(self.root, path) if isinstance(self.root, torch.nn.Module) else None
            if isinstance(module, torch.nn.Module):
                by_module.setdefault(id(module), (module, []))[1].append(path)
        for module, names in by_module.values():
            instance = _get(module, "__dict__")
            had, before = "forward" in instance, instance.get("forward")
            original = _get(module, "forward")
            self._hook(module)
            object.__setattr__(module, "forward", self._wrap(original, names, module))
            self._undo.append(lambda m=module, h=had, b=before: (
                object.__setattr__(m, "forward", b) if h else object.__delattr__(m, "forward")))
        namespace = self.worker.namespace
        for name in self.functions:
            function = namespace.get(name)
            if callable(function) and not isinstance(function, type):
                namespace[name] = self._wrap(function, [name])
                self._undo.append(lambda n=name, f=function: namespace.__setitem__(n, f))
        return self

    def __exit__(self, *exc):
        for undo in reversed(self._undo):
            undo()
        self._undo = []
        return False

    def _hook(self, module):
        """A sub-layer with hooks of the student's is recorded as the block calls it: the
        arguments before its pre-hooks, the result after its hooks (the grader calls it again
        that way). Hooks of ours, the first pre-hook and the last hook, for this request."""
        if not (_get(module, "_forward_pre_hooks") or _get(module, "_forward_hooks")):
            return
        pending, opened = [], []
        self._pending[id(module)], self._opened[id(module)] = pending, opened

        def before(_, args, kwargs):
            pending.append((_snapshot(list(args)), _snapshot(dict(kwargs))))

        def after(_, args, output):
            if opened:
                entry = opened.pop()
                if "replaced" in entry:  # the stand-in stays the record (the grader checks it)
                    return
                entry["output"] = _snapshot(output)
                entry["grad"]["output"] = any(_needs_grad(t) for t in _tensors(output))

        handles = [torch.nn.Module.register_forward_pre_hook(module, before, prepend=True, with_kwargs=True),
                   torch.nn.Module.register_forward_hook(module, after)]
        self._undo.append(lambda: [handle.remove() for handle in handles])

    def _wrap(self, original, names, module=None):
        params, defaults = _signature(original)
        recorder = self
        pending = self._pending.get(id(module)) if module is not None else None

        def recorded(*args, **kwargs):
            transformed = tracing.inside_transform()  # in torch.func's vmap, grad, jvp: see _snapshot
            given = pending.pop() if pending else None  # the arguments before its pre-hooks
            index = recorder.counts.get(names[0], 0)
            recorder.counts[names[0]] = index + 1
            if len(recorder.records) >= MAX_RECORDS:
                recorder.dropped += 1
                return original(*args, **kwargs)
            inputs = [t for t in _tensors((args, kwargs)) if torch.is_floating_point(t)]
            standin = None
            for name in names if not transformed else ():  # no stand-in inside a transform
                offered = recorder.standins.get(name, [])
                if index < len(offered):
                    expected = offered[index].get("inputs") or []
                    if all(isinstance(s, (list, tuple)) and tuple(t.shape) == tuple(s)
                           for t, s in zip(inputs, expected)):
                        standin = offered[index]["result"]
                    break
            # each recorded call starts from a seed of its own, which the grader uses to call the
            # sub-layer again elsewhere (a sub-layer that draws random numbers gives the same)
            seed = recorder.seed + len(recorder.records)
            if not transformed:
                manual_seed(seed)
            given = given or (_snapshot(list(args)), _snapshot(dict(kwargs)))
            entry = {"names": list(names), "index": index, "params": params, "defaults": defaults,
                     "args": given[0], "kwargs": given[1], "seed": seed,
                     "grad": {"enabled": torch.is_grad_enabled(),
                              "inputs": any(_needs_grad(t) for t in inputs)}}
            recorder.records.append(entry)
            if standin is not None:  # the sub-layer works on copies: the block's tensors stay as they are
                args, kwargs = _copies(args), _copies(kwargs)
            try:
                result = original(*args, **kwargs)
            except Exception as error:
                if standin is None:
                    raise
                entry["replaced"] = {"raised": describe_exception(error)}
                result = _copies(standin)
            else:
                if standin is not None and not _same_structure(result, standin):
                    entry["replaced"] = {"returned": _structure(result)}
                    result = _copies(standin)
                elif standin is not None and _nothing_finite(result):  # NaN everywhere: as broken
                    entry["replaced"] = {"returned": _structure(result), "non_finite": True}
                    result = _copies(standin)
            entry["output"] = _snapshot(result)
            entry["grad"]["output"] = any(_needs_grad(t) for t in _tensors(result))
            opened = recorder._opened.get(id(module)) if module is not None else None
            if opened is not None:  # its hooks run next: the result is what they leave
                opened.append(entry)
            return result

        recorded.__name__ = getattr(original, "__name__", "forward")
        recorded.__wrapped__ = original
        return recorded

    def report(self):
        return {"records": [{**entry, "args": wire.encode_value(entry["args"]),
                             "kwargs": wire.encode_value(entry["kwargs"]),
                             "defaults": wire.encode_value(entry["defaults"]),
                             "output": wire.encode_value(entry.get("output"))}
                            for entry in self.records],
                "dropped": self.dropped}


def _submodule(root, path):
    """A sub-module by attribute path, read from nn.Module's own dictionaries."""
    module = root
    for part in str(path).split(".") if path else ():
        children = _get(module, "_modules")
        module = children.get(part) if isinstance(children, dict) else None
        if not isinstance(module, torch.nn.Module):
            return None
    return module

class Worker:
    def __init__(self, channel):
        self.channel = channel
        self.chunks = []
        self.namespace = {}
        self.given = {}  # the grader's own classes (op_define): models that are not the student's
        self.objects = {}
        self.error_trace = None  # (error, trace) of the traced call that raised last (op_call)

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
        self.namespace = namespace
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

    # -- objects -------------------------------------------------------------
    def op_define(self, request):
        """The grader's own source (a reference model, a scripted one), run in a namespace of
        its own: ``new`` with ``given`` builds from it, so the student's function can be called
        on a model that is not the student's."""
        namespace = {"__name__": "given", "__builtins__": __builtins__}
        exec(compile(str(request["source"]), "<given>", "exec"), namespace)
        self.given = namespace
        return {}

    def op_new(self, request):
        cls = (self.given if request.get("given") else self.namespace)[request["name"]]
        args = wire.decode_value(request.get("args", []), meta=True)
        kwargs = wire.decode_value(request.get("kwargs", {}), meta=True)
        repeat = request.get("repeat", 1)
        if isinstance(request.get("seed"), int):  # built again elsewhere, it initialises the same
            manual_seed(request["seed"])
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
        reply = {}
        if request.get("describe", True) is not False:  # an object built again: not described
            modules, params, aliases = _module_tree(obj)
            reply = {
                "params": params,
                "aliases": aliases,
                "modules": [[path, type(m).__name__] for path, m in modules if path],
            }
        if "values" in request:  # the weights to copy in, in the same request
            reply.update(self._set(obj, request["values"]))
        return reply

    def op_set(self, request):
        return self._set(self.objects[request["id"]], request["values"])

    @staticmethod
    def _set(obj, values):
        missing, mismatched = [], []
        with torch.no_grad():
            for path, value in values.items():
                tensor = wire.decode_value(value, meta=True)
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
        """The object (or one of its sub-modules, by path, or one of the contract's methods)
        or the function a request runs."""
        if "obj" in target:
            obj = self.objects[target["obj"]]
            if target.get("path"):
                obj = _submodule(obj, target["path"])
                if obj is None:
                    raise AttributeError(f"no sub-module {str(target['path'])[:80]!r}")
            if target.get("method") in METHODS:
                return getattr(obj, target["method"])
            return obj
        return self.namespace[target["func"]]

    def _with_objects(self, request, args):
        """The arguments with the objects the request names put in their places
        (``objects``: {position: object id}), e.g. greedy_decode(model, ...)."""
        for position, oid in dict(request.get("objects") or {}).items():
            args[int(position)] = self.objects[str(oid)]
        return args

    def _run(self, request, fn, args, kwargs):
        """fn(*args, **kwargs), recording what the request asks for; (result, report or None)."""
        spec = request.get("record")
        if not isinstance(spec, dict):
            return fn(*args, **kwargs), None
        with _Recorder(self, fn, spec) as recorder:
            result = fn(*args, **kwargs)
        if spec.get("report", True) is False:  # a recording made again for its result alone
            return result, None
        return result, recorder.report()

    def op_call(self, request):
        fn = self._target(request["target"])
        args = self._with_objects(request, wire.decode_value(request.get("args", []), meta=True))
        kwargs = wire.decode_value(request.get("kwargs", {}), meta=True)
        if isinstance(request.get("seed"), int):  # a recorded call, made again with its own seed
            manual_seed(request["seed"])
        tracer = tracing.Tracer(request["trace"]) if isinstance(request.get("trace"), dict) else None
        with torch.no_grad():
            if tracer is None:
                result, records = self._run(request, fn, args, kwargs)
            else:
                tracer.add_inputs(args, kwargs)
                try:
                    with tracer:
                        result, records = self._run(request, fn, args, kwargs)
                except Exception as error:  # the tensors made before it raised travel with the error
                    try:
                        self.error_trace = (error, tracer.report(wire.encode_value))
                    except Exception:  # noting never changes what the student's code raised
                        self.error_trace = None
                    raise
        reply = {"result": wire.encode_value(result)}
        if tracer is not None:
            reply["trace"] = tracer.report(wire.encode_value)
        if records is not None:
            reply["records"] = records
        if request.get("return_inputs"):
            reply["inputs_after"] = wire.encode_value(args)
        return reply

    def op_calls(self, request):
        """Several calls in one request (each as ``op_call``), in order; the first that raises
        ends the request with its error, as its own request would."""
        calls = request["calls"]
        if not isinstance(calls, list) or len(calls) > MAX_CALLS:
            raise ValueError("bad calls")
        return {"replies": [self.op_call(call) for call in calls]}

    def op_batch(self, request):
        """Several requests in one (the grader's deferred ``new`` requests, then one more), in
        order; each answered as its own would be, ``{"ok": ...}`` or ``{"error": ...}``; the
        first that raises ends the batch."""
        requests = request["requests"]
        if not isinstance(requests, list) or len(requests) > MAX_BATCH:
            raise ValueError("bad batch")
        replies = []
        for sub in requests:
            op = sub.get("op") if isinstance(sub, dict) else None
            handler = getattr(self, "op_" + str(op), None) if op not in ("batch", "load") else None
            try:
                if handler is None:
                    raise ValueError(f"unknown op {op!r} in a batch")
                replies.append({"ok": handler(sub)})
            except BaseException as error:  # as serve() answers a request that raises
                replies.append({"error": describe_failure(self, error)})
                break
        return {"replies": replies}

    def op_grad(self, request):
        """Backpropagate <cotangent, first output>; return the gradients that arrived."""
        fn = self._target(request["target"])
        args = wire.decode_value(request.get("args", []), meta=True)
        kwargs = wire.decode_value(request.get("kwargs", {}), meta=True)
        cotangent = wire.decode_value(request["cotangent"], meta=True)
        for arg in args:
            if isinstance(arg, torch.Tensor) and arg.is_floating_point():
                arg.requires_grad_(True)
        with torch.enable_grad():
            result, records = self._run(request, fn, args, kwargs)
            first = result[0] if isinstance(result, (tuple, list)) else result
            (first * cotangent).sum().backward()
        params = {}
        if isinstance(fn, torch.nn.Module):
            params = {path: p.grad for path, p in fn.named_parameters()}
        inputs = [a.grad if isinstance(a, torch.Tensor) else None for a in args]
        reply = {"param_grads": wire.encode_value(params), "input_grads": wire.encode_value(inputs)}
        if records is not None:
            reply["records"] = records
        return reply

    # -- training: the student's train_step on a model and the grader's optimizer -------------
    def op_optimizer(self, request):
        """torch.optim.Adam(lr) over the parameters of object ``model`` (read from nn.Module's
        own dictionaries), stored as object ``id``."""
        _light_dynamo()
        _, params, _ = _module_tree(self.objects[request["model"]])
        model = self.objects[request["model"]]
        tensors = [_resolve(model, path) for path, _ in params]
        self.objects[request["id"]] = torch.optim.Adam(tensors, lr=float(request["lr"]))
        return {}

    def _state(self, model, optimizer):
        """{path: parameter} and, per path, Adam's exp_avg, exp_avg_sq and step (copies)."""
        _, params, _ = _module_tree(model)
        values, moments = {}, {}
        state = optimizer.state if optimizer is not None else {}
        for path, _ in params:
            tensor = _resolve(model, path)
            values[path] = torch.Tensor.clone(torch.Tensor.detach(tensor))
            kept = state.get(tensor) if isinstance(state, dict) else None
            if isinstance(kept, dict):
                moments[path] = {k: torch.Tensor.clone(torch.Tensor.detach(torch.as_tensor(kept[k])))
                                 for k in ("exp_avg", "exp_avg_sq", "step") if k in kept}
        return {"params": values, "adam": moments}

    def op_state(self, request):
        optimizer = self.objects.get(request.get("optimizer"))
        return {"state": wire.encode_value(self._state(self.objects[request["model"]], optimizer))}

    def op_train(self, request):
        """``train_step(model, optimizer, src, tgt_in, tgt_out)`` once per batch, with gradients
        on; after each step the loss it returned and the state (``op_state``)."""
        fn = self.namespace[request["func"]]
        model, optimizer = self.objects[request["model"]], self.objects[request["optimizer"]]
        batches = wire.decode_value(request["batches"])
        losses, states, modes = [], [], []
        for src, tgt_in, tgt_out in batches:
            with torch.enable_grad(), _modes_seen(model if request.get("modes") else None) as seen:
                loss = fn(model, optimizer, src, tgt_in, tgt_out)
            modes.append(all(seen) if seen else None)
            losses.append(loss if isinstance(loss, (int, float)) and not isinstance(loss, bool)
                          else float(loss) if isinstance(loss, torch.Tensor) and loss.numel() == 1 else None)
            if request.get("states", True):
                states.append(self._state(model, optimizer))
        reply = {"losses": wire.encode_value(losses), "states": wire.encode_value(states)}
        if request.get("modes"):
            reply["modes"] = modes
        return reply

    def op_ping(self, request):
        return {"pong": True}


@contextlib.contextmanager
def _modes_seen(model):
    """The training flag of each of ``model``'s modules as it is called (a forward of the
    model, of encode's or decode's sub-modules alike), in a list; none without a model."""
    seen = []
    if model is None:
        yield seen
        return
    own = {id(module) for module in model.modules()}

    def note(module, args):
        if id(module) in own:
            seen.append(bool(module.training))

    handle = torch.nn.modules.module.register_module_forward_pre_hook(note)
    try:
        yield seen
    finally:
        handle.remove()


def _light_dynamo():
    """An optimizer's step imports ``torch._dynamo`` (a second or more of CPU in every worker)
    only to disable tracing and to break graphs, which nothing here does: as the zygote's meta
    warm-up does, a stand-in takes its place unless the real one is imported already."""
    if not _SERVING or "torch._dynamo" in sys.modules or "_dynamo" in vars(torch):
        return  # not in a sandboxed worker (sandbox/inprocess.py: the caller's own process)
    import types

    stand_in = types.ModuleType("torch._dynamo")
    stand_in.disable = lambda fn, recursive=True, wrapping=True: fn
    stand_in.is_compiling = lambda: False
    stand_in.graph_break = lambda: None
    sys.modules["torch._dynamo"] = torch._dynamo = stand_in


_SERVING = False  # this process is a worker answering on its pipes (serve)


def serve(read_fd, write_fd):
    global _SERVING
    _SERVING = True
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
            reply = {"ok": {**handler(request), "seq": request.get("seq")}}  # every answer is a dict
        except BaseException as error:
            reply = {"error": describe_failure(worker, error)}
        try:
            channel.send(reply)
        except (ValueError, TypeError, OverflowError) as error:  # not JSON-able
            channel.send({"error": {"type": type(error).__name__, "message": _short(error), "where": []}})


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
