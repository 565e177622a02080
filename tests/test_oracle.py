"""The grader is no oracle: a worker only ever answers the requests it is sent.

Block checks used to swap reference sub-layers into a student's block and compute them in the
grader on the worker's request (callbacks), so a worker that found its pipe could ask the
grader for reference results on inputs and sizes of its choosing. Now the grader answers
nothing: a frame from the worker that is not the answer to the request in flight is a protocol
violation (``WorkerFailure``), and the block checks record the student's own sub-layers
instead (``ctx.record``).

(a) forged callback frames, found through ``gc.get_objects()``, earn nothing;
(b) a ``Reference*``-named module carrying a proxy handle earns nothing;
(c) every kind of frame a worker can write is refused, and the grader writes nothing back but
    requests;
and the records a worker returns are bounded, read for their form, and mapped onto the
contract's arguments whatever names or style the student's code uses.
"""

import resource
from pathlib import Path

import pytest
import torch

import solutions
from autograder import plan as plans
from autograder.checks.recorded import blocked, MISSING, Records
from autograder.grading.grader import grade
from autograder.loading import Submission
from autograder.sandbox import process
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.sandbox.session import MAX_RECORDS, Session

HOSTILE = Path(__file__).parent / "hostile"


@pytest.fixture(scope="module")
def attention():
    return plans.load("attention")


@pytest.fixture
def sent(monkeypatch):
    """Every frame the grader writes to a worker."""
    frames = []
    original = process.WorkerConnection._send

    def spy(self, message, *rest):
        frames.append(message)
        return original(self, message, *rest)

    monkeypatch.setattr(process.WorkerConnection, "_send", spy)
    return frames


def only_requests(frames):
    """The grader wrote requests (each with its op) and nothing else: no answer to anything."""
    return all(isinstance(f, dict) and f.get("op") in ("load", "ping", "new", "set", "call", "calls", "grad")
               and not {"result", "error", "ok", "callback"} & set(f) for f in frames)


def graded(tmp_path, plan, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return grade(Submission(name, plan.name, path), plan)


def earned(result):
    return {o.check.id for o in result.outcomes if o.score > 0}


# -- (a), (b): the attacks, graded ---------------------------------------------------------------
@pytest.mark.parametrize("attack", ["oracle_forged_callback", "oracle_reference_named"])
def test_an_attack_earns_nothing_beyond_the_same_code_without_it(tmp_path, attention, sent, attack):
    """The same file with ATTACK = False computes nothing (zeros, its own untrained layers):
    what it earns is what a submission with the contract's signatures and no implementation
    earns. With the attack the worker is stopped at its first forged frame."""
    source = (HOSTILE / f"{attack}.py").read_text()
    assert "ATTACK = True" in source
    with_attack = graded(tmp_path, attention, attack, source)
    without = graded(tmp_path, attention, "twin", source.replace("ATTACK = True", "ATTACK = False"))
    assert with_attack.score <= without.score, sorted(earned(with_attack) - earned(without))
    assert earned(with_attack) <= earned(without)
    assert not earned(with_attack) & {"mha.numeric", "mha.shape", "mha.rows_sum_to_one", "causal.values"}
    assert only_requests(sent)


def test_a_forged_callback_is_a_protocol_violation(sent):
    s = Session([{"code": (HOSTILE / "oracle_forged_callback.py").read_text(), "origin": "cell 1"}],
                ["causal_mask"], solutions, request_timeout=10, max_restarts=0)
    try:
        with pytest.raises(WorkerFailure) as failure:
            s.call("causal_mask", 4)
        assert failure.value.kind == "bad_reply"
    finally:
        s.close()
    assert sent and only_requests(sent)


# -- (c): every kind of frame a worker can write -----------------------------------------------
FORGER = r'''
import gc, json, os, select, struct

def _channel():
    for obj in gc.get_objects():
        try:
            if (not isinstance(obj, type) and isinstance(getattr(obj, "read_fd", None), int)
                    and isinstance(getattr(obj, "write_fd", None), int)):
                return obj
        except Exception:
            pass

def _seq():
    """The sequence number of the request in flight, read from the worker's memory."""
    found = [o for o in gc.get_objects() if isinstance(o, dict) and o.get("op") == "call" and "seq" in o]
    return found[-1]["seq"] if found else None

def _seq_of(n):
    return {"__seq__": list(n), "tuple": False}

def forge(kind):
    frames = {
        "callback-new": {"callback": {"kind": "new", "name": "MultiHeadAttention",
                                      "args": _seq_of([8192, 1]), "kwargs": {"__dict__": {}}}},
        "callback-call": {"callback": {"kind": "call", "handle": 1, "grad": False,
                                       "args": _seq_of([]), "kwargs": {"__dict__": {}}}},
        "callback-vjp": {"callback": {"kind": "vjp", "call": 1, "grads": _seq_of([])}},
        "callback-func": {"callback": {"kind": "func", "name": "causal_mask",
                                       "args": _seq_of([20000]), "kwargs": {"__dict__": {}}}},
        "callback-other": {"callback": {"kind": "anything at all"}},
        "result": {"result": 1},
        "ok-stale": {"ok": {"result": 1, "seq": -1}},
        "ok-forged": {"ok": {"result": "forged", "seq": _seq()}},
        "error": {"error": {"type": "Forged", "message": "forged", "where": []}},
        "not-an-object": [1, 2, 3],
    }
    channel = _channel()
    if kind == "not-json":
        payload = b"\xff{"
    elif kind == "too-large":
        payload = None
    else:
        payload = json.dumps(frames[kind]).encode()
    header = struct.pack(">I", 2 ** 31) if payload is None else struct.pack(">II", 4 + len(payload), len(payload))
    os.write(channel.write_fd, header + (payload or b""))
    if select.select([channel.read_fd], [], [], 1.0)[0]:
        return "answered: " + repr(os.read(channel.read_fd, 1 << 16)[:200])
    return "nothing came back"
'''
KINDS = ["callback-new", "callback-call", "callback-vjp", "callback-func", "callback-other",
         "result", "ok-stale", "ok-forged", "error", "not-an-object", "not-json", "too-large"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_frame_a_worker_can_write_is_refused_and_answered_by_nothing(sent, kind):
    s = Session([{"code": FORGER, "origin": "cell 1"}], ["forge"], solutions, request_timeout=10,
                max_restarts=2)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        s.load()
        if kind in ("ok-forged", "error"):
            # Taken as the answer to its own request (what the worker says is its own business:
            # no reference value in it); the real answer that follows is then out of step.
            if kind == "error":
                with pytest.raises(StudentError):
                    s.call("forge", kind)
            else:
                assert s.call("forge", kind) == "forged"
            with pytest.raises(WorkerFailure) as failure:
                s.call("forge", "result")
        else:
            with pytest.raises(WorkerFailure) as failure:
                s.call("forge", kind)
        assert failure.value.kind == "bad_reply"
    finally:
        s.close()
    assert only_requests(sent), [f for f in sent if "op" not in f]
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) * 1024
    assert grown < 256 * 2 ** 20, f"the grader grew by {grown / 2 ** 20:.0f} MB"


# -- records: bounded, read for their form ------------------------------------------------------
BLOCK = r'''
import gc
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, query, key=None, value=None, attn_mask=None):
        key = query if key is None else key
        return self.lin(query + key), torch.ones(query.shape[0], 1, query.shape[1], key.shape[1])


class Broken(nn.Module):
    def forward(self, x):
        x.mul_(0)  # edits its input in place, and the result has another shape
        return x[..., :1]


def helper(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


class Block(nn.Module):
    def __init__(self, d, flood=0):
        super().__init__()
        self.attn = Attention(d)
        self.twin = self.attn  # the same module under a second name
        self.ffn = Broken()
        self.flood = flood

    def forward(self, x, mask=None):
        m = helper(x.shape[1])
        a, _ = self.attn(query=x, attn_mask=m)
        if self.flood:  # a worker that writes its own records: many more than one forward makes
            recorder = next(o for o in gc.get_objects()
                            if type(o).__name__ == "_Recorder" and hasattr(o, "records"))
            recorder.records.extend(dict(recorder.records[0]) for _ in range(self.flood))
        return x + a + self.ffn(x)
'''


@pytest.fixture
def block_session():
    s = Session([{"code": BLOCK, "origin": "cell 1"}], ["Block", "helper"], solutions,
                request_timeout=10, max_restarts=3)
    yield s
    s.close()


def test_records_map_keyword_calls_and_defaults_onto_the_contract(block_session):
    s = block_session
    obj = s.new("Block", 4)
    x = torch.randn(2, 3, 4)
    standin = {"result": torch.full((2, 3, 4), 7.0), "inputs": [(2, 3, 4)]}
    result, raw, after = s.call_recording(obj, [x], record={
        "modules": ["attn", "twin", "ffn"], "functions": ["helper"], "standins": {"ffn": [standin]}},
        return_inputs=True)
    records = Records(raw, after)
    (attn,) = records.of("attn")
    assert set(attn.names) == {"attn", "twin"}  # one module asked for twice: one wrapper, both names
    q, k, v, mask = attn.attention_arguments()  # query=x, key and value left to default to q
    assert torch.equal(q, x) and k is q and v is q
    assert torch.equal(blocked(mask, (2, 1, 3, 3)), helper_mask(3).expand(2, 1, 3, 3))
    (ffn,) = records.of("ffn")  # broken: the stand-in took its place, on copies of its input
    assert ffn.replaced == {"returned": (2, 3, 1)} and torch.equal(ffn.output, standin["result"])
    assert torch.equal(after[0], x)
    (made,) = records.of("helper")
    assert made.arguments(("t",)) == {"t": 3} and torch.equal(made.main, helper_mask(3))
    assert torch.allclose(result, x + attn.main + standin["result"])
    # everything is put back: a plain call runs the student's own ffn again, which zeroes x in
    # place after x + a is taken and adds its zeros
    assert torch.allclose(s.call(obj, x), x + attn.main)


def helper_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


def test_a_stand_in_is_not_used_for_a_call_with_other_shapes(block_session):
    """The block calls ffn with x of shape (2, 3, 4); a stand-in offered for (2, 5, 4) inputs is
    not used: a block that calls a sub-layer with the wrong shapes is not rescued."""
    s = block_session
    obj = s.new("Block", 4)
    standin = {"result": torch.zeros(2, 5, 4), "inputs": [(2, 5, 4)]}
    _, raw, _ = s.call_recording(obj, [torch.randn(2, 3, 4)], record={
        "modules": ["ffn"], "standins": {"ffn": [standin]}})
    (ffn,) = Records(raw).of("ffn")
    assert ffn.replaced is None and tuple(ffn.output.shape) == (2, 3, 1)


def test_more_records_than_the_cap_are_a_protocol_violation(block_session):
    s = block_session
    obj = s.new("Block", 4, flood=5 * MAX_RECORDS)
    with pytest.raises(WorkerFailure) as failure:
        s.call_recording(obj, [torch.randn(2, 3, 4)], record={"modules": ["attn"]})
    assert failure.value.kind == "bad_reply" and "records" in failure.value.detail


def test_arguments_follow_the_callees_own_parameter_names():
    def call(args, kwargs, params, defaults=None):
        return Records([{"names": ("attn",), "index": 0, "params": params, "defaults": defaults or {},
                         "args": args, "kwargs": kwargs, "output": None, "grad": {},
                         "replaced": None}]).calls[0]

    x, y, m = torch.ones(1), torch.zeros(1), torch.tensor([True])
    own = [("query", "POSITIONAL_OR_KEYWORD", False), ("key", "POSITIONAL_OR_KEYWORD", False),
           ("value", "POSITIONAL_OR_KEYWORD", False), ("attn_mask", "POSITIONAL_OR_KEYWORD", True)]
    by_keyword = call([], {"value": y, "attn_mask": m, "query": x, "key": x}, own)
    assert by_keyword.attention_arguments() == (x, x, y, m)
    by_position = call([x, x, y, m], {}, own)
    assert by_position.attention_arguments() == (x, x, y, m)
    defaults = [("q", "POSITIONAL_OR_KEYWORD", False), ("k", "POSITIONAL_OR_KEYWORD", True),
                ("v", "POSITIONAL_OR_KEYWORD", True), ("mask", "KEYWORD_ONLY", True)]
    self_attention = call([x], {"mask": m}, defaults, {"k": None, "v": None, "mask": None})
    assert self_attention.attention_arguments() == (x, x, x, m)
    variadic = call([x, y, y], {"mask": m}, [("args", "VAR_POSITIONAL", False), ("kw", "VAR_KEYWORD", False)])
    assert variadic.attention_arguments() == (x, y, y, m)
    unknown = call([x, y], {"attn_mask": m}, None)
    assert unknown.attention_arguments() == (x, y, y, m)
    assert call([], {}, None).arguments(("x",)).get("x", MISSING) is MISSING
