"""Fuzzing the grader's side of the wire: whatever bytes a worker writes as its reply, the
grader either gets plain values (CPU tensors of the wire's dtypes, numbers, text, lists,
dicts) or the submission's failure (``WorkerFailure``, or ``StudentError`` for a frame that
says the student's code raised). Nothing else may come out of decoding: an exception of
another type there is a grader error (exit status 3) that a student chose.

Each frame goes through the grader's own decoding path, the functions ``WorkerConnection``
and ``Session`` call on a reply (``process.answer_of`` for the frame, then the answer of every
kind of request: call, calls, grad, a batch of new objects, set, load)."""

import json
import math
import struct

import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from autograder.sandbox import wire
from autograder.sandbox.process import StudentError, WorkerFailure, answer_of
from autograder.sandbox.session import (RemoteObject, _set_answer, _validate_load_info, batch_answer,
                                        call_answer, calls_answer, grad_answer, trace_answer)

NAMES = ["scaled_dot_product_attention", "MultiHeadAttention"]
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _plain(value, meta=False, depth=0):
    """Whether ``value`` holds only what a check may be handed."""
    assert depth < 40, "nested too deep"
    if value is None or isinstance(value, (bool, int, float, str, wire.Opaque)):
        return True
    if isinstance(value, torch.Tensor):
        return (type(value) is torch.Tensor and value.layout == torch.strided and not value.is_nested
                and value.dtype in {t for t, _ in wire.DTYPES.values()}
                and (value.device.type == "cpu" or meta and value.device.type == "meta"))
    if isinstance(value, (list, tuple)):
        return all(_plain(v, meta, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, meta, depth + 1) for k, v in value.items())
    return False


def _shape_of(value):
    return isinstance(value, tuple) and len(value) <= 8 and all(type(n) is int and n >= 0 for n in value)


def _records_ok(records):
    """The form ``checks.recorded`` reads records in (session._decode_records)."""
    return records is None or isinstance(records, list) and all(
        set(r) == {"names", "index", "params", "defaults", "args", "kwargs", "output", "grad", "replaced",
                   "seed"}
        and (r["seed"] is None or type(r["seed"]) is int)
        and isinstance(r["names"], tuple) and all(isinstance(n, str) for n in r["names"])
        and type(r["index"]) is int
        and (r["params"] is None or all(isinstance(n, str) and isinstance(k, str) and isinstance(d, bool)
                                         for n, k, d in r["params"]))
        and isinstance(r["defaults"], dict) and isinstance(r["args"], list) and isinstance(r["kwargs"], dict)
        and set(r["grad"]) == {"enabled", "inputs", "output"} and all(type(v) is bool for v in r["grad"].values())
        and (r["replaced"] is None or isinstance(r["replaced"].get("raised"), str)
             or _shapes_ok(r["replaced"].get("returned")))
        for r in records)


def _shapes_ok(value):
    return value is None or _shape_of(value) or isinstance(value, list) and all(map(_shapes_ok, value))


def _form_ok(reader, value):
    """The form each reader promises its callers (who index it without further checks)."""
    if reader in ("call", "call_meta", "call_plain"):
        return len(value) == 3 and _records_ok(value[2])
    if reader == "calls":
        return all(_form_ok("call", v) for v in value)
    if reader == "grad":
        return isinstance(value[0], dict) and isinstance(value[1], list) and _records_ok(value[2])
    if reader == "set":
        missing, mismatched = value
        return all(isinstance(p, str) for p in missing) and all(
            isinstance(p, str) and _shape_of(s) for p, s in mismatched)
    if reader == "load":
        return (all(set(e) == {"origin", "type", "message", "where"} and all(isinstance(w, str) for w in e["where"])
                    for e in value["errors"])
                and all(d["kind"] in ("missing", "other") or all(
                    isinstance(p, dict) and isinstance(p["name"], str) and isinstance(p["default"], bool)
                    for p in (d["parameters"] or []) + (d["forward"] or []))
                        for d in value["names"].values()))
    if reader == "new":
        params, aliases, modules = value
        return (all(isinstance(k, str) and _shape_of(v) for k, v in [*params.items(), *aliases.items()])
                and all(isinstance(v, str) for v in modules.values()))
    if reader == "trace":
        return type(value["dropped"]) is int and all(
            isinstance(e["value"], torch.Tensor) and e["value"].is_floating_point() and isinstance(e["op"], str)
            and (e["line"] is None or type(e["line"]) is int) and len(e["outer"]) == 2
            and all(type(i) is int and 0 <= i < n for i in e["inputs"]) for n, e in enumerate(value["entries"]))
    if reader == "batch":
        return all(isinstance(v, str) or isinstance(v, tuple) and (
            _form_ok("new", v[0]) and _form_ok("set", v[1]) if len(v) == 2 else _form_ok("call", v)) for v in value)
    return True


def decode_everything(body):
    """Every way the grader reads a reply, on this one body. Returns how many decoders
    accepted it; raises only what the grader lets through (see the module docstring)."""
    try:
        answer = answer_of(body)
    except (WorkerFailure, StudentError):
        return 0
    readers = {
        "call": lambda: call_answer(answer, True, True),
        "call_plain": lambda: call_answer(answer, False, False),
        "call_meta": lambda: call_answer(answer, True, True, meta=True),
        "calls": lambda: calls_answer(answer, [(True, False)] * len(answer.get("replies") or [])
                                      if isinstance(answer, dict) and isinstance(answer.get("replies"), list) else []),
        "grad": lambda: grad_answer(answer, True),
        "trace": lambda: trace_answer(answer),
        "batch": lambda: _read_batch(answer),
        "set": lambda: _set_answer(answer),
        "load": lambda: _validate_load_info(answer, NAMES),
        "new": lambda: _described(answer),
    }
    accepted = 0
    for name, read in readers.items():
        try:
            value = read()
        except (WorkerFailure, StudentError):
            continue
        assert _plain(value, meta=name == "call_meta"), f"{name} let through {value!r}"[:2000]
        assert _form_ok(name, value), f"{name} let through a malformed {value!r}"[:2000]
        accepted += 1
    return accepted


def _described(answer):
    obj = RemoteObject("o1", "X")
    obj._describe(answer)
    return obj._described


def _read_batch(answer):
    """As ``Session._request_with_deferred`` reads a batch of two ``new`` and one ``call``."""
    answers = batch_answer(answer, 3)
    read = []
    for index, item in enumerate(answers):
        if isinstance(item, StudentError):
            read.append(item.message)
        elif index < 2:
            read.append((_described(item), _set_answer(item)))
        else:
            read.append(call_answer(item, False, False))
    return read


# -- frames as the protocol has them, with anything in their fields ---------------------------------
# Each field is most often of the form the protocol gives it (so that the decoders get far) and
# otherwise anything: numbers out of range, infinities, text, lists, other tensors.
_numbers = st.one_of(st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True, allow_infinity=True),
                     st.sampled_from([float("inf"), float("-inf"), float("nan"), 2 ** 64, -1]),
                     st.booleans(), st.none())
_texts = st.one_of(st.sampled_from(["", "ok", "error", "cpu", "meta", "cuda", "float32", "complex64",
                                    "uint8", "sparse_coo", "subclass", "nested", "__tensor__",
                                    "POSITIONAL_OR_KEYWORD", "class", "function", "missing"]),
                   st.text(max_size=12))
_leaves = st.one_of(_numbers, _texts)
_dtypes = st.one_of(st.sampled_from(sorted(wire.DTYPES)), st.sampled_from(sorted(wire.DTYPES)),
                    st.sampled_from(["complex64", "bfloat16", "qint8", "uint8"]), _leaves)
_devices = st.one_of(st.sampled_from(["cpu", "meta"]), st.sampled_from(["cuda", "mps", "xla"]), _leaves)
_shapes = st.one_of(st.lists(st.integers(0, 3), max_size=3), st.lists(st.integers(0, 3), max_size=3),
                    st.lists(_numbers, max_size=3), st.lists(st.integers(0, 2), min_size=9, max_size=10), _leaves)


@st.composite
def _tensor_descriptions(draw, blob_size):
    meta = {"dtype": draw(_dtypes), "shape": draw(_shapes), "device": draw(_devices)}
    if draw(st.booleans()):  # data at a place in the frame's blobs, or anything
        meta["data"] = draw(st.one_of(st.tuples(st.integers(0, blob_size), st.integers(0, blob_size)).map(list),
                                      st.lists(st.integers(-5, 2 ** 64), max_size=3), _leaves))
    for field in ("kind", "layout"):
        if draw(st.integers(0, 5)) == 0:
            meta[field] = draw(st.one_of(st.sampled_from(["subclass", "nested", "sparse_coo"]), _leaves))
    if draw(st.integers(0, 5)) == 0:
        del meta[draw(st.sampled_from(sorted(meta)))]
    return {"__tensor__": meta}


def _values(blob_size):
    """What an encoded value may hold, and things it should not."""
    tensors = _tensor_descriptions(blob_size)
    return st.recursive(
        st.one_of(tensors, tensors, _leaves, st.builds(lambda n: {"__other__": n}, _leaves)),
        lambda inner: st.one_of(
            st.builds(lambda items, t: {"__seq__": items, "tuple": t}, st.lists(inner, max_size=3),
                      st.one_of(st.booleans(), _leaves)),
            st.builds(lambda d: {"__dict__": d}, st.dictionaries(_texts, inner, max_size=3)),
            st.lists(inner, max_size=3), st.dictionaries(_texts, inner, max_size=3)),
        max_leaves=8)


def _maybe(strategy):
    """Mostly ``strategy``, sometimes anything."""
    return st.one_of(strategy, strategy, strategy, _leaves, st.lists(_leaves, max_size=2))


def _answers(blob_size):
    value = _values(blob_size)
    shape = _maybe(st.lists(st.one_of(st.integers(0, 4), _numbers), max_size=3))
    pairs = _maybe(st.lists(_maybe(st.tuples(_leaves, shape).map(list)), max_size=3))
    parameter = _maybe(st.fixed_dictionaries(
        {"name": _maybe(_texts), "kind": _maybe(st.sampled_from(sorted(
            ["POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY", "VAR_KEYWORD"]))),
         "default": _maybe(st.booleans())}))
    parameters = st.one_of(st.none(), _maybe(st.lists(parameter, max_size=3)))
    description = _maybe(st.fixed_dictionaries(
        {"kind": _maybe(st.sampled_from(["class", "function", "missing", "other"]))},
        optional={"is_module": _leaves, "parameters": parameters, "forward": parameters, "type": _leaves}))
    record = _maybe(st.fixed_dictionaries(
        {"names": _maybe(st.lists(_texts, max_size=2)), "args": _maybe(value), "kwargs": _maybe(value)},
        optional={"index": _maybe(st.integers(0, 3)), "params": _maybe(st.lists(_maybe(st.tuples(
                      _texts, _texts, _leaves).map(list)), max_size=2)),
                  "defaults": value, "output": value, "grad": _maybe(st.dictionaries(
                      st.sampled_from(["enabled", "inputs", "output"]), _leaves)),
                  "replaced": _maybe(st.one_of(st.fixed_dictionaries({"raised": _maybe(st.fixed_dictionaries(
                      {"type": _leaves, "message": _leaves}))}), st.fixed_dictionaries({"returned": _maybe(
                          st.one_of(st.fixed_dictionaries({"shape": shape}), st.lists(_maybe(
                              st.fixed_dictionaries({"shape": shape})), max_size=2)))})))}))
    records = _maybe(st.fixed_dictionaries({"records": _maybe(st.lists(record, max_size=2))},
                                           optional={"dropped": _leaves}))
    error = _maybe(st.fixed_dictionaries({}, optional={"type": _leaves, "message": st.one_of(_leaves, value),
                                                       "where": _maybe(st.lists(_leaves, max_size=4))}))
    entry = _maybe(st.fixed_dictionaries({"value": _maybe(value)}, optional={
        "op": _leaves, "origin": _leaves, "line": _maybe(st.integers(-2, 50)), "outer": _maybe(st.lists(_leaves, max_size=3)),
        "inputs": _maybe(st.lists(_maybe(st.integers(-1, 3)), max_size=3))}))
    trace = _maybe(st.fixed_dictionaries({"entries": _maybe(st.lists(entry, max_size=3))},
                                         optional={"dropped": _leaves}))
    call = st.fixed_dictionaries({"result": value}, optional={"inputs_after": value, "records": records,
                                                              "seq": _leaves, "trace": trace})
    grad = st.fixed_dictionaries({"param_grads": value, "input_grads": value}, optional={"records": records})
    new = st.fixed_dictionaries({"params": pairs, "aliases": pairs, "modules": pairs},
                                optional={"missing": _maybe(st.lists(_texts, max_size=2)), "mismatched": pairs})
    load = st.fixed_dictionaries({"errors": _maybe(st.lists(error, max_size=2)),
                                  "names": _maybe(st.dictionaries(st.sampled_from(NAMES), description, max_size=2))})
    one = st.one_of(call, grad, new, load)
    batch = st.fixed_dictionaries({"replies": _maybe(st.lists(_maybe(st.one_of(
        st.fixed_dictionaries({"ok": one}), st.fixed_dictionaries({"error": error}),
        st.fixed_dictionaries({"ok": _leaves, "error": _leaves}))), max_size=4))})
    answer = st.one_of(one, batch, _maybe(value))
    return st.one_of(st.fixed_dictionaries({"ok": answer}), st.fixed_dictionaries({"ok": answer}),
                     st.fixed_dictionaries({"error": error}), st.fixed_dictionaries({"ok": _leaves, "error": error}),
                     value)


@st.composite
def protocol_frames(draw):
    blobs = draw(st.binary(max_size=64))
    message = draw(_answers(len(blobs)))
    return wire.frame_body(json.dumps(message, allow_nan=True).encode(), blobs)


def _honest_frames():
    """Replies a real worker writes, encoded by the wire itself."""
    values = [torch.randn(2, 3), (torch.zeros(2, 2, dtype=torch.bool), [torch.arange(3)]),
              {"a": torch.ones(1, dtype=torch.float64), "b": None}]
    replies = [{"ok": {"result": wire.encode_value(v), "seq": 1}} for v in values]
    replies.append({"ok": {"result": wire.encode_value(values[0]), "inputs_after": wire.encode_value([]),
                           "records": {"records": [{"names": ["ffn"], "index": 0, "params": [["x", "POSITIONAL_OR_KEYWORD", False]],
                                                    "defaults": wire.encode_value({}),
                                                    "args": wire.encode_value([values[0]]),
                                                    "kwargs": wire.encode_value({}), "output": wire.encode_value(values[0]),
                                                    "grad": {"enabled": False, "inputs": False, "output": False}}],
                                       "dropped": 0}}})
    replies.append({"ok": {"params": [["w", [2, 2]]], "aliases": [["w", [2, 2]]], "modules": [["l", "Linear"]],
                           "missing": [], "mismatched": [["b", [3]]]}})
    replies.append({"ok": {"errors": [{"origin": "cell 1", "type": "ValueError", "message": "x", "where": []}],
                           "names": {NAMES[0]: {"kind": "function", "is_module": False, "forward": None,
                                                "parameters": [{"name": "q", "kind": "POSITIONAL_OR_KEYWORD",
                                                                "default": False}]}}}})
    replies.append({"ok": {"replies": [{"ok": {"params": [], "aliases": [], "modules": [], "missing": [],
                                               "mismatched": []}}, {"error": {"type": "E", "message": "m"}}]}})
    replies.append({"error": {"type": "ValueError", "message": "student bug", "where": ["cell 1, line 2"]}})
    frames = []
    for reply in replies:
        written = []
        wire.write_frame(written.append, reply)
        frames.append(bytes(written[0][wire.HEADER.size:]))
    return frames


HONEST = _honest_frames()
_DELETE = object()


def _split(body):
    (size,) = wire.HEADER.unpack_from(body)
    return json.loads(body[wire.HEADER.size:wire.HEADER.size + size]), body[wire.HEADER.size + size:]


@st.composite
def _mutation(draw, node, blob_size):
    """``node`` with one thing in it replaced (or deleted), somewhere along a random path."""
    children = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
    if children and draw(st.integers(0, 3)) > 0:
        key = draw(st.sampled_from(children))
        changed = draw(_mutation(node[key], blob_size))
        node = dict(node) if isinstance(node, dict) else list(node)
        if changed is _DELETE:
            del node[key]
        else:
            node[key] = changed
        return node
    return draw(st.one_of(
        _leaves, _tensor_descriptions(blob_size), st.just(_DELETE), st.lists(_leaves, max_size=3),
        st.just([node]), st.just({"__seq__": [node]}), st.dictionaries(_texts, _leaves, max_size=2),
        st.sampled_from([float("inf"), -1, 2 ** 63, [float("inf")], [-1], [2 ** 40] * 9, "x", [], {}, None])))


@st.composite
def mutated_frames(draw):
    """An honest reply with a few things in it changed: near the protocol, where the checks that
    matter are (a shape of infinity, a parameter list that is a number, a meta tensor)."""
    message, blobs = _split(draw(st.sampled_from(HONEST)))
    for _ in range(draw(st.integers(1, 4))):
        changed = draw(_mutation(message, len(blobs)))
        message = message if changed is _DELETE else changed
    return wire.frame_body(json.dumps(message, allow_nan=True).encode(), blobs)


def test_honest_replies_are_read():
    """The readers are not refusing everything: each real reply passes at least one of them."""
    assert all(decode_everything(body) >= 1 for body in HONEST[:-1])
    try:
        answer_of(HONEST[-1])
    except StudentError as error:
        assert error.message == "student bug" and error.where == ["cell 1, line 2"]


@FUZZ
@given(protocol_frames())
@example(wire.frame_body(b'{"ok": {"result": {"__tensor__": {"dtype": "float32", "shape": [2], "device": "meta"}}}}'))
@example(wire.frame_body(b'{"ok": {"params": [["w", [Infinity]]], "aliases": [], "modules": []}}'))
@example(wire.frame_body(b'{"ok": {"missing": [], "mismatched": [["w", 5]]}}'))
@example(wire.frame_body(b'{"ok": {"errors": [], "names": {"MultiHeadAttention": {"parameters": [1]}}}}'))
@example(wire.frame_body(b'{"error": {"type": "E", "where": 7}}'))
@example(wire.frame_body(b'{"ok": {"replies": [{"ok": {}, "error": 1}]}}'))
@example(wire.frame_body(b'{"ok": {"records": {"records": [{"names": [], "args": {"__seq__": []}, '
                         b'"kwargs": {"__dict__": {}}, "index": Infinity}]}}}'))
def test_no_protocol_frame_gets_past_the_decoders(body):
    decode_everything(body)


NASTY = [float("inf"), float("-inf"), float("nan"), -1, 2 ** 63, 2 ** 70, True, None, "x", "meta", "cuda",
         "complex64", "uint8", "sparse_coo", "subclass", [], {}, [float("inf")], [-1], [2 ** 40] * 9, [[1, 2]],
         {"__seq__": 5}, {"__dict__": []}, {"__other__": []}, [[[[[[[[[[]]]]]]]]]],
         {"__tensor__": {"dtype": "float32", "shape": [2], "device": "meta"}},
         {"__tensor__": {"dtype": "float32", "shape": [2], "device": "cuda"}},
         {"__tensor__": {"dtype": "float32", "shape": [2], "device": "cpu", "kind": "subclass"}},
         {"__tensor__": {"dtype": "complex64", "shape": [2], "device": "cpu"}},
         {"__tensor__": {"dtype": "float32", "shape": [0, 2 ** 62], "device": "cpu", "data": [0, 0]}}]


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _paths(child, (*path, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _paths(child, (*path, index))


def _replaced(node, path, value):
    if not path:
        return value
    node = dict(node) if isinstance(node, dict) else list(node)
    if value is _DELETE and len(path) == 1:
        del node[path[0]]
    else:
        node[path[0]] = _replaced(node[path[0]], path[1:], value)
    return node


def test_every_field_of_an_honest_reply_with_each_nasty_value():
    """Systematic: in every honest reply, every field (at any depth) replaced in turn by each
    value of ``NASTY``, or deleted."""
    tried = 0
    for body in HONEST:
        message, blobs = _split(body)
        for path in _paths(message):
            for value in [*NASTY, _DELETE] if path else NASTY:
                decode_everything(wire.frame_body(json.dumps(_replaced(message, path, value)).encode(), blobs))
                tried += 1
    assert tried > 5000


@FUZZ
@given(mutated_frames())
def test_no_honest_frame_with_a_field_changed_gets_past_the_decoders(body):
    decode_everything(body)


@FUZZ
@given(st.sampled_from(range(len(HONEST))), st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255),
                                                                st.sampled_from(["flip", "insert", "delete"])),
                                                      min_size=1, max_size=6))
def test_no_mutated_honest_frame_gets_past_the_decoders(which, edits):
    body = bytearray(HONEST[which])
    for position, byte, edit in edits:
        position %= max(len(body), 1)
        if edit == "flip" and body:
            body[position] ^= byte or 1
        elif edit == "insert":
            body.insert(position, byte)
        elif body:
            del body[position]
    decode_everything(bytes(body))


@FUZZ
@given(st.binary(max_size=256), st.integers(0, 300))
def test_no_random_bytes_get_past_the_decoders(data, json_size):
    decode_everything(data)
    decode_everything(struct.pack(">I", json_size) + data)


def test_a_meta_tensor_is_refused_unless_the_request_ran_on_meta():
    meta = wire.encode_value(torch.empty(2, 3, device="meta"))
    reply = {"result": json.loads(json.dumps(meta))}
    try:
        call_answer(reply, False, False)
    except WorkerFailure as failure:
        assert failure.kind == "bad_reply" and "meta device" in failure.detail
    else:
        raise AssertionError("a meta tensor was decoded for a request that did not run on meta")
    result, _, _ = call_answer(reply, False, False, meta=True)
    assert result.device.type == "meta" and tuple(result.shape) == (2, 3)
    assert math.prod(result.shape) == 6
