"""How the sandboxed worker builds a module whose weights a request copies in (``new`` with
``values``, autograder/sandbox/worker.py): torch's own layers skip their random initialisation,
which the weights overwrite anyway, and a module that the weights do not cover entirely is
built as before, from the request's seed, so that what it holds never depends on the skip."""

import pytest
import torch

import solutions
from autograder.sandbox.session import Session

CODE = '''
import torch
import torch.nn as nn


class Covered(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(self.lin(x))


class Extra(nn.Module):
    """One Linear more than the weights name: it keeps its own initialisation."""

    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.extra = nn.Linear(d, d)

    def forward(self, x):
        return self.extra(self.lin(x))


class Picky(nn.Module):
    """A constructor that reads its initial weights (and refuses zeros)."""

    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        assert self.lin.weight.abs().sum() > 0, "all zeros"
        self.start = float(self.lin.weight.sum())

    def forward(self, x):
        return self.lin(x) + self.start


def draw():
    return torch.rand(4)
'''
D = 3


@pytest.fixture(scope="module")
def session():
    sandboxed = Session([{"code": CODE, "origin": "cell 1"}], ["Covered", "Extra", "Picky", "draw"], solutions,
                        request_timeout=60, max_restarts=0)
    yield sandboxed
    sandboxed.close()


def _weights(*names):
    generator = torch.Generator().manual_seed(7)
    values = {}
    for name in names:
        values[f"{name}.weight"] = torch.randn(D, D, generator=generator)
        values[f"{name}.bias"] = torch.randn(D, generator=generator)
    return values


def _seeded_draw(seed):
    torch.manual_seed(seed)
    return torch.rand(4)


def test_a_module_whose_weights_are_all_copied_in_is_built_without_random_initialisation(session):
    values = {**_weights("lin"), "norm.weight": torch.full((D,), 2.0), "norm.bias": torch.full((D,), 0.5)}
    obj, missing, mismatched = session.new_with_params("Covered", (D,), {}, values)
    assert missing == [] and mismatched == []
    after_build = session.call("draw")  # torch's generator, left where the build left it
    seed = session.recipe(obj)["seed"]
    assert torch.equal(after_build, _seeded_draw(seed)), "the build drew random numbers"
    x = torch.randn(2, D)
    expected = torch.nn.functional.layer_norm(x @ values["lin.weight"].T + values["lin.bias"], (D,),
                                              values["norm.weight"], values["norm.bias"])
    assert torch.allclose(session.call(obj, x), expected, atol=1e-6)


def test_a_parameter_the_weights_leave_alone_keeps_the_initialisation_of_its_seed(session):
    obj, missing, mismatched = session.new_with_params("Extra", (D,), {}, _weights("lin"))
    assert missing == [] and mismatched == []
    seed = session.recipe(obj)["seed"]
    torch.manual_seed(seed)
    here = CODE_NAMESPACE["Extra"](D).eval()
    with torch.no_grad():
        for path, value in _weights("lin").items():
            here.get_parameter(path).copy_(value)
    x = torch.randn(2, D)
    assert torch.equal(session.call(obj, x), here(x).detach())
    assert not torch.equal(session.call("draw"), _seeded_draw(seed))  # built as always: it drew


def test_a_constructor_that_fails_on_skipped_weights_is_built_as_always(session):
    obj, missing, mismatched = session.new_with_params("Picky", (D,), {}, _weights("lin"))
    assert missing == [] and mismatched == []
    seed = session.recipe(obj)["seed"]
    torch.manual_seed(seed)
    here = CODE_NAMESPACE["Picky"](D).eval()
    with torch.no_grad():
        for path, value in _weights("lin").items():
            here.get_parameter(path).copy_(value)
    x = torch.randn(2, D)
    assert torch.equal(session.call(obj, x), here(x).detach())  # its start is the seeded one's


CODE_NAMESPACE = {}
exec(compile(CODE, "<test code>", "exec"), CODE_NAMESPACE)
