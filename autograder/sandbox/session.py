"""The trusted grader's handle on one submission running in a worker.

A ``Session`` starts the worker lazily, loads the student's code into it, and
restarts it after a crash or a timeout so that one bad check does not take
the others down.

The grader only ever sends requests whose inputs a check made itself (and the weights
it copies in); the worker only ever answers them. Nothing the worker sends makes the
grader run, build or allocate anything else: there are no callbacks, and a frame that is
not the answer to the request in flight (a forged or stale one) is a protocol violation,
``WorkerFailure("bad_reply")``. To see inside a student's block, a check asks for a
*recording* (``call_recording``): the worker wraps the student's own sub-layers for that
call and returns each call's arguments and result with the block's output.
"""

import itertools
from dataclasses import dataclass

import torch

from autograder.sandbox import wire
from autograder.sandbox.process import Limits, StudentError, WorkerFailure, shared_zygote
from autograder.config import DEFAULTS  # the one place defaults live

__all__ = ["Session", "RemoteObject", "StudentError", "WorkerFailure", "MAX_RECORDS"]

MAX_RECORDS = 64  # recorded calls one reply may hold (the worker stops recording there)
MAX_DEFERRED = 8  # deferred new requests: the next one sends them first
MAX_RECORD_ELEMENTS = 1_000_000  # per recorded tensor: a check's inputs are far smaller


class RemoteObject:
    """A student object that lives in the worker; only its id and structure are known here:
    ``params`` (attribute path -> shape, each parameter once: what counts), ``aliases``
    (every attribute path of a parameter -> shape, shared ones too) and ``modules``
    (attribute path -> type name). One built with ``defer`` is described once the worker
    has answered (reading the description asks for that answer)."""

    def __init__(self, id, name, session=None):
        self.id, self.name = id, name
        self.failure = None  # the StudentError that building it raised (deferred building)
        self._session, self._described = session, None

    def _describe(self, info):
        try:
            self._described = (
                {str(p)[:200]: _shape(s) for p, s in _pairs(info["params"])},
                {str(p)[:200]: _shape(s) for p, s in _pairs(info["aliases"])},
                {str(p)[:200]: str(t)[:80] for p, t in _pairs(info["modules"])})
        except (KeyError, TypeError, ValueError):
            raise WorkerFailure("bad_reply", "malformed description of a new object") from None

    def _description(self):
        if self._described is None and self.failure is None and self._session is not None:
            self._session.flush()
        if self.failure is not None:
            raise self.failure
        return self._described

    params = property(lambda self: self._description()[0])
    aliases = property(lambda self: self._description()[1])
    modules = property(lambda self: self._description()[2])

    def sub(self, path):
        """One of its sub-modules, by attribute path, as a target for ``call`` / ``grad``."""
        return SubModule(self, path)

    def method(self, name):
        """One of the contract's methods (``encode``, ``decode``), as a target for ``call``."""
        return Method(self, name)


@dataclass(frozen=True)
class SubModule:
    owner: RemoteObject
    path: str


@dataclass(frozen=True)
class Method:
    """One of the contract's methods of a student object (``encode``, ``decode``), as a target."""

    owner: RemoteObject
    name: str


class Session:
    def __init__(self, chunks, names, reference, limits=Limits(),
                 startup_timeout=DEFAULTS["grading"]["startup_timeout"],
                 request_timeout=DEFAULTS["grading"]["request_timeout"],
                 max_restarts=DEFAULTS["grading"]["max_restarts"], zygote=None, slot=0):
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
        self._seq = itertools.count(1)
        self._deferred = []  # (new request, RemoteObject, on_answer) not sent yet
        self._recipes = {}  # object id -> the request that built it (``recipe``)
        self._altered = set()  # ids of objects changed after they were built (``altered``)
        self._failed_builds = []  # StudentErrors of deferred building not raised by a flush yet

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
        """One request, one answer. No callback is answered: ``request`` is called without
        one, so a frame that asks for something is a ``WorkerFailure`` like any malformed one;
        an answer to another request (its sequence number differs) is one too. Deferred
        ``new`` requests travel with it, in order, in one round trip (``op: batch``)."""
        if self._deferred:
            return self._request_with_deferred(message, timeout)
        seq = next(self._seq)
        try:
            self._ensure_worker()
            reply = self.worker.request({**message, "seq": seq}, timeout or self.request_timeout)
            if not isinstance(reply, dict) or reply.get("seq") != seq:
                raise WorkerFailure("bad_reply", "an answer that is not the answer to this request")
            return reply
        except WorkerFailure:
            self._drop_worker()
            raise

    def _request_with_deferred(self, message, timeout):
        """The deferred ``new`` requests, then ``message``, in one batch. The answers are taken
        in order, as separate requests would have been: a building that raised marks its object
        (every later use raises that error; ``flush`` raises it once more), an ``on_answer``
        that raises (weights that do not fit) raises here; then ``message``'s own error."""
        deferred, self._deferred = self._deferred, []
        reply = self._request({"op": "batch", "requests": [m for m, _, _ in deferred] + [message]},
                              timeout)
        replies = batch_answer(reply, len(deferred) + 1)
        failure = None
        for index, (_, obj, on_answer) in enumerate(deferred):
            answer = replies[index] if index < len(replies) else None
            if failure is not None or answer is None:  # not built: an earlier request raised
                obj.failure = failure or StudentError({"type": "Error", "message": "not built"})
                continue
            if isinstance(answer, StudentError):
                failure = obj.failure = answer
                self._failed_builds.append(failure)
                continue
            obj._describe(answer)
            on_answer(obj, *_set_answer(answer))
        if failure is not None:
            raise failure
        if len(replies) <= len(deferred):
            raise WorkerFailure("bad_reply", "a batch answered without its last request")
        if isinstance(replies[-1], StudentError):
            raise replies[-1]
        return replies[-1]

    def flush(self):
        """Send what is deferred (with a ``ping``), and raise the first error a deferred
        building raised since the last flush, even if a check caught it where the object was
        used: a module that cannot be built fails the check that built it, as if built at once."""
        if self._deferred:
            self._request({"op": "ping"})
        failed, self._failed_builds = self._failed_builds, []
        if failed:
            raise failed[0]

    def discard_deferred(self):
        """Forget what is deferred and not sent (a check ended early): nothing is built."""
        self._deferred, self._failed_builds = [], []

    # -- operations ----------------------------------------------------------------
    def new(self, name, *args, dtype=None, device=None, repeat=1, **kwargs):
        return self._new(name, args, kwargs, dtype, device, repeat, None)[0]

    def new_with_params(self, name, args, kwargs, values, dtype=None, on_answer=None):
        """``new`` and ``set_params`` in one request: (object, missing, mismatched). With
        ``on_answer(object, missing, mismatched)`` the request is deferred: it travels with the
        next request (or ``flush``), ``on_answer`` is called then, and only the object returns."""
        if on_answer is not None:
            obj, message = self._new_message(name, args, kwargs, dtype, None, 1, values)
            if len(self._deferred) >= MAX_DEFERRED:
                self.flush()
            self._deferred.append((message, obj, on_answer))
            return obj
        obj, info = self._new(name, args, kwargs, dtype, None, 1, values)
        return (obj, *_set_answer(info))

    def _new_message(self, name, args, kwargs, dtype, device, repeat, values):
        number = next(self._ids)
        obj = RemoteObject(f"o{number}", name, self)
        message = {
            "op": "new", "id": obj.id, "name": name,
            "args": wire.encode_value(list(args)), "kwargs": wire.encode_value(kwargs),
            "dtype": dtype, "device": device, "repeat": repeat,
            "seed": number,  # what the module initialises itself is the same when built again
        }
        if values is not None:
            message["values"] = encoded_values(values)
        self._recipes[obj.id] = message
        return obj, message

    def recipe(self, obj):
        """The request that built ``obj`` (a RemoteObject), to build it again elsewhere."""
        return self._recipes.get(obj.id)

    def fresh_worker(self):
        """From the next request on, a new worker: the submission loaded anew in a process
        that has run nothing of it yet (not counted as a restart)."""
        self.discard_deferred()
        if self.worker is not None:
            self._drop_worker()
            self.starts = max(self.starts - 1, 0)

    def batch(self, requests, timeout=None):
        """Requests (``new`` and ``call`` messages) in one round trip, in order: each one's
        answer (a dict) or its ``StudentError``, up to and including the first that raised."""
        requests = list(requests)
        return batch_answer(self._request({"op": "batch", "requests": requests}, timeout), len(requests))

    @classmethod
    def call_message(cls, target, args, kwargs=None, seed=None, record=None, records_back=True):
        """The request that calls ``target`` (a function name, object or sub-module), after
        seeding torch's generator with ``seed`` if given (a recorded call made again), with the
        sub-layers ``record`` names recorded (as ``call_recording``) if given; without
        ``records_back`` the worker records them as it would but sends back the result alone
        (a recording made again for its result: the sub-layers run as they ran)."""
        spec = None if record is None else _record_spec(record)
        if spec is not None and not records_back:
            spec["report"] = False
        message = cls._call_message(target, args, kwargs or {}, spec, False)
        if seed is not None:
            message["seed"] = seed
        return message

    @classmethod
    def call_result(cls, reply):
        """The result in a ``call`` request's reply."""
        return call_answer(reply, False, False)[0]

    def _new(self, name, args, kwargs, dtype, device, repeat, values):
        obj, message = self._new_message(name, args, kwargs, dtype, device, repeat, values)
        info = self._request(message)
        obj._describe(info)
        return obj, info

    def set_params(self, obj, values):
        self._target(obj)
        self._altered.add(obj.id)
        return _set_answer(self._request({"op": "set", "id": obj.id,
                                          "values": encoded_values(values)}))

    @staticmethod
    def _target(target):
        owner = target.owner if isinstance(target, (SubModule, Method)) else target
        if isinstance(owner, RemoteObject) and owner.failure is not None:
            raise owner.failure  # its building raised: so does every use of it
        if isinstance(target, RemoteObject):
            return {"obj": target.id}
        if isinstance(target, SubModule):
            return {"obj": target.owner.id, "path": target.path}
        if isinstance(target, Method):
            return {"obj": target.owner.id, "method": target.name}
        return {"func": str(target)}

    # -- the grader's own models and training (assignment 4) ------------------------------------
    def define(self, source):
        """Run the grader's ``source`` in the worker's namespace of given classes (``new_given``
        builds from it). Sent again after a restart: call it before each use."""
        self._request({"op": "define", "source": source})

    def new_given(self, name, args, values=None):
        """A model of the grader's given classes, with ``values`` copied in; its RemoteObject."""
        obj, message = self._new_message(name, args, {}, None, None, 1, values)
        message["given"] = True
        info = self._request(message)
        obj._describe(info)
        missing, mismatched = _set_answer(info) if values is not None else ([], [])
        if missing or mismatched:
            raise WorkerFailure("bad_reply", "the given model did not take its weights")
        return obj

    def optimizer(self, model, lr):
        """Adam(lr) over ``model``'s parameters, in the worker: its RemoteObject."""
        obj = RemoteObject(f"o{next(self._ids)}", "Adam", self)
        self._request({"op": "optimizer", "id": obj.id, "model": self._target(model)["obj"], "lr": lr})
        obj._described = ({}, {}, {})
        return obj

    def state(self, model, optimizer=None):
        """{"params": {path: tensor}, "adam": {path: {exp_avg, exp_avg_sq, step}}}."""
        reply = self._request({"op": "state", "model": self._target(model)["obj"],
                               "optimizer": optimizer.id if optimizer is not None else None})
        return _state_answer(_decoded(reply, "state"))

    def worker_cpu_seconds(self):
        """The worker's CPU clock as the kernel keeps it (``WorkerConnection.cpu_seconds``):
        the difference across a request is what that request cost the worker, whatever else
        the machine is doing. None while no worker runs."""
        if self.worker is None or not self.worker.alive:
            return None
        return self.worker.cpu_seconds()

    def train(self, function, model, optimizer, batches, timeout=None, modes=False):
        """``function(model, optimizer, *batch)`` for each batch (src, tgt_in, tgt_out), gradients
        on: (the losses it returned, float or None each, the state after each step); with
        ``modes``, also whether every module of ``model`` the step called was in training mode
        (True, False, or None where none was called), step by step."""
        message = {"op": "train", "func": str(function), "model": self._target(model)["obj"],
                   "optimizer": optimizer.id, "batches": wire.encode_value(list(batches))}
        if modes:
            message["modes"] = True
        reply = self._request(message, timeout)
        losses, states = _decoded(reply, "losses"), _decoded(reply, "states")
        if not isinstance(losses, list) or not isinstance(states, list) or len(losses) != len(batches) \
                or len(states) != len(batches):
            raise WorkerFailure("bad_reply", "malformed answer to train")
        losses = [float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None
                  for x in losses]
        if not modes:
            return losses, [_state_answer(s) for s in states]
        seen = reply.get("modes")
        if not isinstance(seen, list) or len(seen) != len(batches) or any(m not in (True, False, None) for m in seen):
            raise WorkerFailure("bad_reply", "malformed training modes")
        return losses, [_state_answer(s) for s in states], [m if m is None else bool(m) for m in seen]

    def call(self, target, *args, **kwargs):
        """Run a student function or module; returns its result."""
        return self._call(target, args, kwargs, None, return_inputs=False)[0]

    def call_seeded(self, target, args, kwargs, seed):
        """``call``, after seeding torch's generator with ``seed`` in the worker: the same call
        made again elsewhere with the same seed (``call_message``) draws the same numbers."""
        message = self.call_message(target, args, kwargs, seed)
        return call_answer(self._request(message), False, False, _on_meta(args, kwargs))[0]

    def altered(self, obj):
        """True when ``obj`` was changed after it was built (``set_params``): its recipe no
        longer builds what the worker holds."""
        return obj.id in self._altered

    def call_returning_inputs(self, target, *args, **kwargs):
        """Run it and also return the inputs as they were afterwards (to spot in-place edits)."""
        return self._call(target, args, kwargs, None, return_inputs=True)

    def call_recording(self, target, args, kwargs=None, record=None, return_inputs=False, seed=None):
        """Run it with the sub-layers and functions named in ``record`` recorded:
        ``record = {"modules": [attribute paths], "functions": [names], "standins": {name:
        [{"result": value, "inputs": [shape, ...]} per call]}}`` (see the worker's
        ``_Recorder`` for when a stand-in is used). Returns (result, records, inputs afterwards
        or None): the records as plain data, validated for their form and size only
        (``checks.context.Records`` reads them)."""
        result, after, records = self._call(target, args, kwargs or {}, _record_spec(record),
                                            return_inputs=return_inputs, seed=seed)
        return result, records, after

    def calls_recording(self, calls, timeout=None):
        """Several ``call_recording`` calls in one request, run in order: ``calls`` is a list of
        dicts with ``target``, ``args`` and optionally ``kwargs``, ``record``, ``return_inputs``.
        Returns a list of (result, records, inputs afterwards or None); the first call that
        raises raises its ``StudentError`` here, as its own request would. ``timeout``: for the
        whole request (default: one request's)."""
        if not calls:
            return []
        messages = [self._call_message(c["target"], c["args"], c.get("kwargs") or {},
                                       _record_spec(c.get("record")), bool(c.get("return_inputs")),
                                       c.get("seed"))
                    for c in calls]
        reply = self._request({"op": "calls", "calls": [{k: v for k, v in m.items() if k != "op"}
                                                        for m in messages]}, timeout)
        answers = calls_answer(reply, [(bool(m.get("return_inputs")), _on_meta(c["args"], c.get("kwargs")))
                                       for m, c in zip(messages, calls)])
        return [(result, records, after) for result, after, records in answers]

    @classmethod
    def _call_message(cls, target, args, kwargs, record, return_inputs, seed=None):
        args = list(args)
        objects = {str(i): cls._target(a)["obj"] for i, a in enumerate(args) if isinstance(a, RemoteObject)}
        args = [None if isinstance(a, RemoteObject) else a for a in args]
        message = {"op": "call", "target": cls._target(target),
                   "args": wire.encode_value(args), "kwargs": wire.encode_value(kwargs),
                   "return_inputs": return_inputs}
        if objects:
            message["objects"] = objects  # the worker puts its objects in these places
        if record is not None:
            message["record"] = record
        if seed is not None:
            message["seed"] = seed
        return message

    def _call(self, target, args, kwargs, record, return_inputs, seed=None):
        reply = self._request(self._call_message(target, args, kwargs, record, return_inputs, seed))
        answer = call_answer(reply, return_inputs, record is not None, _on_meta(args, kwargs))
        return answer if record is not None else answer[:2]

    def call_tracing(self, target, args, kwargs=None):
        """Run it with every tensor its torch functions make noted, and where (the worker's
        ``tracing.Tracer``; for feedback only, never a verdict): (result, trace), the trace as
        ``trace_answer`` decodes it. A call that raises raises ``StudentError`` with ``trace``:
        the tensors made before the error, decoded the same way (None if malformed)."""
        message = self._call_message(target, args, kwargs or {}, None, False)
        message["trace"] = {}
        try:
            reply = self._request(message)
        except StudentError as error:
            try:
                error.trace = trace_answer({"trace": error.trace}) if error.trace is not None else None
            except WorkerFailure:
                error.trace = None
            raise
        result = call_answer(reply, False, False)[0]
        return result, trace_answer(reply)

    def grad(self, target, cotangent, *args, **kwargs):
        """Gradients of every parameter and input after backpropagating <cotangent, output>:
        ({path: tensor or None}, [tensor or None per argument])."""
        params, inputs, _ = self._grad(target, cotangent, args, kwargs, None)
        return params, inputs

    def grad_recording(self, target, cotangent, args, kwargs=None, record=None):
        """``grad`` with sub-layers recorded as in ``call_recording`` (without stand-ins):
        (param grads, input grads, records); each record also says whether autograd was on
        and whether the call's inputs and result required gradients."""
        spec = _record_spec(record)
        spec.pop("standins", None)
        return self._grad(target, cotangent, args, kwargs or {}, spec)

    def _grad(self, target, cotangent, args, kwargs, record):
        message = {"op": "grad", "target": self._target(target),
                   "cotangent": wire.encode_value(cotangent),
                   "args": wire.encode_value(list(args)),
                   "kwargs": wire.encode_value(kwargs)}
        if record is not None:
            message["record"] = record
        return grad_answer(self._request(message), record is not None, _on_meta(args, kwargs, cotangent))


# -- what the worker answers, decoded (every function below takes what the worker sent and
# returns plain values, or raises WorkerFailure("bad_reply"); tests/test_wire_fuzz.py feeds
# them random and mutated frames) ---------------------------------------------------------
def _on_meta(*values, depth=6):
    """Whether a request's arguments hold a tensor on the meta device: only then may its
    answer hold meta tensors (a device check ran the student's code on meta)."""
    for value in values:
        if isinstance(value, torch.Tensor):
            if value.device.type == "meta":
                return True
        elif depth > 0 and isinstance(value, (tuple, list)):
            if _on_meta(*value, depth=depth - 1):
                return True
        elif depth > 0 and isinstance(value, dict):
            if _on_meta(*value.values(), depth=depth - 1):
                return True
    return False


def call_answer(reply, return_inputs, recorded, meta=False):
    """The answer to a ``call``: (result, inputs afterwards or None, records or None)."""
    if not isinstance(reply, dict):
        raise WorkerFailure("bad_reply", "malformed answer to call")
    try:
        after = wire.decode_value(reply["inputs_after"], meta=meta) if return_inputs else None
        result = wire.decode_value(reply["result"], meta=meta)
    except (KeyError, TypeError, wire.WireError) as error:
        raise WorkerFailure("bad_reply", str(error)) from None
    return result, after, (_decode_records(reply, meta) if recorded else None)


def calls_answer(reply, calls):
    """The answer to ``calls``; ``calls``: (return_inputs, meta) of each call, in order."""
    replies = reply.get("replies") if isinstance(reply, dict) else None
    if not isinstance(replies, list) or len(replies) != len(calls):
        raise WorkerFailure("bad_reply", "malformed answer to calls")
    return [call_answer(r, return_inputs, True, meta) for r, (return_inputs, meta) in zip(replies, calls)]


def grad_answer(reply, recorded, meta=False):
    """The answer to ``grad``: ({path: gradient or None}, [gradient or None], records or None)."""
    try:
        params = wire.decode_value(reply["param_grads"], meta=meta)
        inputs = wire.decode_value(reply["input_grads"], meta=meta)
    except (KeyError, TypeError, wire.WireError) as error:
        raise WorkerFailure("bad_reply", str(error)) from None
    if not isinstance(params, dict) or not isinstance(inputs, list):
        raise WorkerFailure("bad_reply", "malformed gradient report")
    return params, inputs, (_decode_records(reply, meta) if recorded else None)


MAX_TRACE_ENTRIES = 600  # the worker's tracing.MAX_ENTRIES
MAX_TRACE_ELEMENTS = 50_000  # per tensor: tracing.MAX_ELEMENTS


def trace_answer(reply):
    """The trace of a ``call`` with ``trace`` on: {"entries": [{"value": float tensor, "op":
    text, "origin": text or None, "line": int or None, "outer": (origin, line) of the target's
    own forward, "inputs": [earlier entries' indices]}], "dropped": int}. Anything of another form, or beyond the worker's bounds, is a
    ``WorkerFailure("bad_reply")``."""
    try:
        raw = reply["trace"]
        entries = raw["entries"]
        if not isinstance(entries, list) or len(entries) > MAX_TRACE_ENTRIES:
            raise ValueError("too many entries")
        decoded = []
        for number, entry in enumerate(entries):
            value = wire.decode_value(entry["value"], max_elements=MAX_TRACE_ELEMENTS)
            if not isinstance(value, torch.Tensor) or not value.is_floating_point():
                raise ValueError("not a floating-point tensor")
            line = entry.get("line")
            origin = entry.get("origin")
            inputs = _list(entry.get("inputs", []))[:8]
            if not all(type(i) is int and 0 <= i < number for i in inputs):
                raise ValueError("bad inputs")
            outer = entry.get("outer")
            outer = outer if isinstance(outer, list) and len(outer) == 2 else [None, None]
            decoded.append({"value": value, "op": str(entry.get("op", ""))[:40],
                            "origin": str(origin)[:80] if origin is not None else None,
                            "line": _line_number(line),
                            "outer": (str(outer[0])[:80] if outer[0] is not None else None,
                                      _line_number(outer[1])),
                            "inputs": list(inputs)})
        dropped = raw.get("dropped", 0)
        return {"entries": decoded, "dropped": dropped if type(dropped) is int and dropped >= 0 else 1}
    except (KeyError, TypeError, ValueError, AttributeError, wire.WireError) as error:
        raise WorkerFailure("bad_reply", f"malformed trace: {str(error)[:200]}") from None


def _line_number(value):
    return value if type(value) is int and 0 < value < 1 << 31 else None


class EncodedValues(dict):
    """Parameter values already encoded for the wire ({path: encoded tensor}): sent as they
    are, so that weights shared by every submission (a check's reference module) are encoded
    once per grading process, not once per use. Read only: never changed after it is made."""

    @classmethod
    def of(cls, values):
        return cls({path: wire.encode_value(t) for path, t in values.items()})  # bytes taken now


def encoded_values(values):
    return values if isinstance(values, EncodedValues) else EncodedValues.of(values)


def batch_answer(reply, count):
    """The answers of a batch of ``count`` requests, in order, each the request's answer (a
    dict) or its ``StudentError``; the worker stops at the first error, so there may be fewer."""
    replies = reply.get("replies") if isinstance(reply, dict) else None
    if not isinstance(replies, list) or not 0 < len(replies) <= count:
        raise WorkerFailure("bad_reply", "malformed answer to a batch")
    answers = []
    for r in replies:
        if isinstance(r, dict) and isinstance(r.get("error"), dict):
            answers.append(StudentError(r["error"]))
        elif isinstance(r, dict) and "error" not in r and isinstance(r.get("ok"), dict):
            answers.append(r["ok"])
        else:
            raise WorkerFailure("bad_reply", "malformed answer to a batch")
    return answers


def _decoded(reply, key):
    try:
        return wire.decode_value(reply[key])
    except (KeyError, TypeError, wire.WireError) as error:
        raise WorkerFailure("bad_reply", str(error)) from None


def _state_answer(state):
    """A state as ``Session.state`` returns it, checked for its form."""
    try:
        params, adam = state["params"], state["adam"]
        ok = (isinstance(params, dict) and isinstance(adam, dict)
              and all(isinstance(t, torch.Tensor) for t in params.values())
              and all(isinstance(m, dict) and all(isinstance(t, torch.Tensor) for t in m.values())
                      for m in adam.values()))
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise WorkerFailure("bad_reply", "malformed model state")
    return {"params": {str(k): v for k, v in params.items()},
            "adam": {str(k): {str(n): t for n, t in m.items()} for k, m in adam.items()}}


def _pairs(value):
    """A list of [key, value] pairs, as the worker sends them."""
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
        raise ValueError("not a list of pairs")
    return value


def _shape(value):
    """A tensor's shape as the worker sends it: at most 8 sizes, each a whole number >= 0.
    (A loop, not all() over a generator: a submission's replies describe ~1,400 shapes.)"""
    if not isinstance(value, list) or len(value) > 8:
        raise ValueError("not a shape")
    for n in value:
        if type(n) is not int or not 0 <= n < _SHAPE_LIMIT:
            raise ValueError("not a shape")
    return tuple(value)


_SHAPE_LIMIT = 1 << 62


def _set_answer(info):
    try:
        return ([str(p)[:200] for p in _list(info["missing"])],
                [(str(p)[:200], _shape(s)) for p, s in _pairs(info["mismatched"])])
    except (KeyError, TypeError, ValueError):
        raise WorkerFailure("bad_reply", "malformed answer to set") from None


def _list(value):
    if not isinstance(value, list):
        raise ValueError("not a list")
    return value


def _record_spec(record):
    record = dict(record or {})
    spec = {"modules": [str(m) for m in record.get("modules", ())],
            "functions": [str(f) for f in record.get("functions", ())]}
    if record.get("standins"):  # {path: [{"result": value, "inputs": [shape, ...]}, ...]}
        spec["standins"] = wire.encode_value(
            {str(k): [{"result": s["result"], "inputs": [list(shape) for shape in s.get("inputs", ())]}
                      for s in v] for k, v in record["standins"].items()})
    return spec


_RECORD_KEYS = ("names", "index", "params", "defaults", "args", "kwargs", "grad", "output", "replaced",
                "seed")


def _decode_records(reply, meta=False):
    """The records of a reply, decoded: a list of dicts (at most ``MAX_RECORDS``), each with
    ``names``, ``index``, ``params`` ([[name, kind, has_default]] or None), ``defaults``,
    ``args``, ``kwargs``, ``output``, ``grad`` and ``replaced``. Anything of another form is
    a ``WorkerFailure``; tensors are limited to ``MAX_RECORD_ELEMENTS`` each."""
    try:
        raw = reply["records"]
        entries = raw["records"]
        if not isinstance(entries, list) or len(entries) > MAX_RECORDS:
            raise WorkerFailure("bad_reply", "too many records")
        decoded = []
        for entry in entries:
            names = [str(n)[:80] for n in entry["names"]][:8]
            params = entry.get("params")
            if params is not None:
                params = [(str(n)[:80], str(k)[:40], bool(d)) for n, k, d in params[:16]]
            grad = entry.get("grad") or {}
            decoded.append({
                "names": tuple(names), "index": int(entry.get("index", 0)), "params": params,
                "defaults": _decode(entry.get("defaults"), dict, meta),
                "args": _decode(entry["args"], list, meta), "kwargs": _decode(entry["kwargs"], dict, meta),
                "output": _decode(entry.get("output"), None, meta),
                "seed": entry["seed"] if type(entry.get("seed")) is int and abs(entry["seed"]) < 2 ** 62 else None,
                "grad": {k: bool(grad.get(k)) for k in ("enabled", "inputs", "output")},
                "replaced": _replaced(entry.get("replaced")),
            })
        return decoded
    except WorkerFailure:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, wire.WireError) as error:
        raise WorkerFailure("bad_reply", f"malformed records: {str(error)[:200]}") from None


def _decode(value, kind=None, meta=False):
    decoded = wire.decode_value(value, max_elements=MAX_RECORD_ELEMENTS, meta=meta)
    if kind is not None and not isinstance(decoded, kind):
        raise ValueError(f"expected a {kind.__name__}")
    return decoded


def _replaced(value):
    """Why the worker returned the stand-in instead of the sub-layer's result: None, or
    {"raised": "Type: message"} or {"returned": shapes} with shapes a tensor's shape (a tuple),
    or a list of them for a sequence, or None for anything else."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("bad replaced")
    if "raised" in value:
        raised = value["raised"] if isinstance(value["raised"], dict) else {}
        return {"raised": f"{str(raised.get('type', ''))[:80]}: {str(raised.get('message', ''))[:200]}"}
    found = {"returned": _shapes(value.get("returned"), 3)}
    if value.get("non_finite") is True:  # NaN or inf everywhere (checked again by verification)
        found["non_finite"] = True
    return found


def _shapes(value, depth):
    if isinstance(value, dict) and isinstance(value.get("shape"), list) and len(value["shape"]) <= 8:
        return tuple(int(n) for n in value["shape"])
    if isinstance(value, list) and depth > 0:
        return [_shapes(v, depth - 1) for v in value[:4]]
    return None


def _validate_load_info(info, names):
    try:
        errors = [
            {"origin": str(e.get("origin", ""))[:80], "type": str(e.get("type", ""))[:80],
             "message": str(e.get("message", ""))[:2000],
             "where": [str(w)[:200] for w in _list(e.get("where", []))[:3]]}
            for e in _list(info["errors"])[:50]
        ]
        described = {name: _described_name(info["names"].get(name, {"kind": "missing"})) for name in names}
    except (KeyError, TypeError, AttributeError, ValueError):
        raise WorkerFailure("bad_reply", "malformed load report") from None
    return {"errors": errors, "names": described}


NAME_KINDS = ("missing", "class", "function", "other")
PARAMETER_KINDS = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY",
                   "VAR_KEYWORD")


def _described_name(info):
    """What the worker says a name is (see ``Worker._describe``), in exactly that form."""
    if not isinstance(info, dict) or info.get("kind") not in NAME_KINDS:
        raise ValueError("bad description")
    if info["kind"] == "missing":
        return {"kind": "missing"}
    if info["kind"] == "other":
        return {"kind": "other", "type": str(info.get("type", ""))[:80]}
    return {"kind": info["kind"], "is_module": bool(info.get("is_module")),
            "parameters": _parameters(info.get("parameters")), "forward": _parameters(info.get("forward"))}


def _parameters(value):
    if value is None:
        return None
    found = []
    for p in _list(value)[:64]:
        if not isinstance(p, dict) or p.get("kind") not in PARAMETER_KINDS:
            raise ValueError("bad parameter")
        found.append({"name": str(p["name"])[:80], "kind": p["kind"], "default": bool(p["default"])})
    return found
