"""The workers' stand-ins for sympy and ``torch.fx.experimental.symbolic_shapes``
(``sandbox/meta_device.py``): they answer plain values exactly as the real modules do, import
the real ones for anything else, and keep a worker's runs on ``meta`` from importing either."""

import inspect
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import solutions
from autograder.sandbox import inprocess
from autograder.sandbox.session import Session

meta_device = inprocess._script("meta_device")
import torch.fx.experimental.symbolic_shapes as real_shapes  # noqa: E402  (the test process's real one)

FAST = ("expect_true", "guard_or_false", "guard_or_true", "statically_known_true", "is_nested_int",
        "sym_and", "sym_or", "sym_eq")


def _stand_in():
    """A stand-in that is not installed: what it hands on goes to the real module, which this
    process has imported."""
    import importlib.util

    return meta_device._LazySymbolicShapes(importlib.util.find_spec(meta_device.SYMBOLIC_SHAPES))


def _outcome(function, *args):
    try:
        result = function(*args)
    except Exception as error:  # noqa: BLE001  (the real functions raise AssertionError)
        return ("raises", type(error))
    return (type(result), result)


plain = st.one_of(st.booleans(), st.integers(-3, 3))
shapes = st.one_of(st.lists(st.integers(0, 4), max_size=4), st.lists(st.integers(0, 4), max_size=4).map(tuple),
                   st.lists(st.integers(0, 4), max_size=4).map(torch.Size))


@settings(max_examples=200, deadline=None)
@given(a=st.one_of(plain, st.none(), st.floats(allow_nan=False), st.text(max_size=2)),
       others=st.lists(plain, max_size=3))
def test_the_stand_in_answers_plain_values_as_the_real_functions_do(a, others):
    stand_in = _stand_in()
    for name in ("expect_true", "guard_or_false", "guard_or_true", "statically_known_true", "is_nested_int"):
        assert _outcome(getattr(stand_in, name), a) == _outcome(getattr(real_shapes, name), a), (name, a)
    for name in ("sym_and", "sym_or"):
        assert _outcome(getattr(stand_in, name), a, *others) == \
            _outcome(getattr(real_shapes, name), a, *others), (name, a, others)
    if type(a) is bool and all(type(y) is bool for y in others):
        assert stand_in._real is None  # plain bools never import the real module


@settings(max_examples=200, deadline=None)
@given(x=st.one_of(shapes, plain), y=st.one_of(shapes, plain))
def test_the_stand_in_compares_shapes_as_the_real_sym_eq_does(x, y):
    assert _outcome(_stand_in().sym_eq, x, y) == _outcome(real_shapes.sym_eq, x, y), (x, y)


def test_what_the_stand_in_answers_or_defers_is_a_function_of_the_real_module():
    """Its answers and its deferred names stand for plain functions of torch's module (a
    torch upgrade that renames or replaces one fails here, not in a worker)."""
    for name in (*FAST, *meta_device._LazySymbolicShapes.DEFERRED):
        assert inspect.isfunction(getattr(real_shapes, name)), name
    deferred = _stand_in().guard_bool
    assert deferred(True) is real_shapes.guard_bool(True)
    with pytest.raises(AssertionError):
        deferred("not a bool")  # the real function's own error, through the deferred call


PROBE = '''
import sys as _sys

def imported(name):
    module = _sys.modules.get(name)
    return module is not None and "_real" not in vars(module)  # a stand-in has _real

def use_sympy():
    import sympy
    two = sympy.Integer(2)
    return [int(two + 1), isinstance(two, sympy.Basic), imported("sympy")]

def shapes_module_answers():
    import torch.fx.experimental.symbolic_shapes as shapes
    return [shapes.has_free_symbols(3), shapes.guard_int(4), imported("torch.fx.experimental.symbolic_shapes")]
'''


@pytest.mark.parametrize("assignment", ["encoder", "decoder"])
def test_a_workers_runs_on_meta_import_neither_sympy_nor_symbolic_shapes(assignment):
    """Before the stand-ins the zygote's warm-up imported both (~0.6 s of its start, on the
    path of every cold grading); a worker's block on meta, as the device checks run it, must
    not import them either."""
    path = sorted((Path(__file__).parent / "corpus" / assignment / "correct").glob("*.py"))[0]
    block = "EncoderBlock" if assignment == "encoder" else "DecoderBlock"
    s = Session([{"code": path.read_text() + PROBE, "origin": "cell 1"}], [block], solutions,
                request_timeout=10, max_restarts=0)
    try:
        obj = s.new(block, 16, 4, 32, device="meta")
        x = torch.randn(2, 5, 16, device="meta")
        result = s.call(obj, x) if assignment == "encoder" else s.call(obj, x, torch.randn(2, 7, 16, device="meta"))
        out = result[0] if isinstance(result, (tuple, list)) else result
        assert out.device.type == "meta" and tuple(out.shape) == (2, 5, 16)
        assert s.call("imported", "sympy") is False
        assert s.call("imported", "torch.fx.experimental.symbolic_shapes") is False
    finally:
        s.close()


def test_a_student_who_uses_sympy_or_symbolic_shapes_gets_the_real_modules():
    """Anything beyond the stand-ins' answers imports the real module, which then answers
    everything (and the meta device still works after it)."""
    path = sorted((Path(__file__).parent / "corpus" / "encoder" / "correct").glob("*.py"))[0]
    s = Session([{"code": path.read_text() + PROBE, "origin": "cell 1"}], ["EncoderBlock"], solutions,
                request_timeout=20, max_restarts=0)
    try:
        assert s.call("use_sympy") == [3, True, True]
        assert s.call("shapes_module_answers") == [False, 4, True]
        obj = s.new("EncoderBlock", 16, 4, 32, device="meta")
        assert tuple(s.call(obj, torch.randn(2, 5, 16, device="meta")).shape) == (2, 5, 16)
    finally:
        s.close()


def _ask_for_basic(module):
    return module.Basic


def test_sympy_basic_is_a_stand_in_only_for_torchs_type_promotion(monkeypatch):
    """Inside torch's type promotion, while the real sympy is not imported, ``sympy.Basic`` is
    a class nothing is an instance of (no sympy object can exist yet); anywhere else, and
    once the real sympy is imported, it is the real class."""
    import importlib.util

    assert meta_device._type_promotion_code(), "torch._prims_common.elementwise_dtypes moved"
    monkeypatch.setattr(meta_device, "_TYPE_PROMOTION", frozenset({_ask_for_basic.__code__}))
    stand_in = meta_device._LazySympy(importlib.util.find_spec("sympy"))
    assert _ask_for_basic(stand_in) is meta_device._NoInstances
    assert not isinstance(torch.ones(1), meta_device._NoInstances)
    with pytest.raises(TypeError):
        meta_device._NoInstances()
    assert stand_in._real is None
    import sympy

    assert stand_in.Basic is sympy.Basic  # not the promotion: the real one, imported
    assert _ask_for_basic(stand_in) is sympy.Basic  # and from then on, everywhere
