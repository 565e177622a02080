"""The worker's side of localization and of torch.func (autograder/sandbox/tracing.py, worker.py),
through a real sandboxed worker:

- a recorded function or sub-layer called inside ``torch.func.vmap``, ``grad`` or ``jvp`` is
  recorded as plain tensors (every example at once, the mapped dimension first) and its result is
  what the student's code computes: nothing escapes the transform;
- a traced call notes each tensor with the student's line and the data flow, within its bounds.
"""

import pytest
import torch

import solutions
from autograder.sandbox.session import Session

pytestmark = pytest.mark.slow

SOURCE = '''
import torch
from torch.func import grad, jvp, vmap


def square(x):
    return x * x


def mapped(x):
    return vmap(square)(x) + 1


def mapped_twice(x):
    return vmap(vmap(square), in_dims=1, out_dims=1)(x)


def derivative(x):
    return grad(lambda t: square(t).sum())(x)


def tangent(x):
    return jvp(square, (x,), (torch.ones_like(x),))[1]


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return vmap(self.lin)(x)


def traced(q, k):
    scores = q @ k.transpose(-2, -1)
    scaled = scores / 2
    return scaled.softmax(-1)


def many(x):
    for _ in range(2000):
        x = x + 1
    return x
'''


@pytest.fixture(scope="module")
def session():
    s = Session([{"code": SOURCE, "origin": "cell 2"}], ["Layer"], solutions, request_timeout=20)
    s.load()
    yield s
    s.close()


@pytest.mark.parametrize("name, expected", [
    ("mapped", lambda x: x * x + 1),
    ("mapped_twice", lambda x: x * x),
    ("derivative", lambda x: 2 * x),
    ("tangent", lambda x: 2 * x),
])
def test_a_recorded_function_inside_torch_func_is_recorded_plainly(session, name, expected):
    x = torch.randn(4, 3)
    result, records, _ = session.call_recording(name, [x], record={"functions": ["square"]})
    assert torch.allclose(result, expected(x))
    calls = records
    assert len(calls) == 1
    arg, out = calls[0]["args"][0], calls[0]["output"]
    assert type(arg) is torch.Tensor and type(out) is torch.Tensor
    if name == "mapped_twice":  # mapped over dimension 1, then 0: (3, 4), outermost first
        assert torch.equal(arg, x.T) and torch.allclose(out, (x * x).T)
    else:
        assert torch.equal(arg, x) and torch.allclose(out, x * x)


def test_a_sub_layer_inside_vmap_is_recorded_for_every_example(session):
    layer = session.new("Layer")
    x = torch.randn(5, 3)
    result, records, _ = session.call_recording(layer, [x], record={"modules": ["lin"]})
    assert len(records) == 1 and torch.equal(records[0]["args"][0], x)
    assert torch.allclose(records[0]["output"], result)


def test_a_trace_notes_each_tensor_with_its_line_and_inputs(session):
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    result, trace = session.call_tracing("traced", [q, k])
    entries = trace["entries"]
    assert [e["op"] for e in entries[:2]] == ["input", "input"]
    scaled = next(e for e in entries if e["line"] == 37 and e["op"] != "input")
    assert scaled["origin"] == "cell 2" and torch.allclose(scaled["value"], q @ k.transpose(-2, -1) / 2)
    product = next(e for e in entries if e["line"] == 36 and e["value"].shape == (2, 3, 5))
    assert torch.allclose(product["value"], q @ k.transpose(-2, -1))
    assert next(i for i, e in enumerate(entries) if e is product) in scaled["inputs"]
    assert torch.allclose(entries[-1]["value"], result)


def test_a_trace_is_bounded(session):
    _, trace = session.call_tracing("many", [torch.zeros(3)])
    assert len(trace["entries"]) <= 600 and trace["dropped"] > 0
