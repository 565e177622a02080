"""A check's draws kept once per process (autograder/checks/draws.py) are exactly the numbers a
live generator seeded by the check gives, whatever was drawn before in this process: kept
draws, new ones after them (the generator put in the state the kept ones left it in), a draw
that cannot be keyed, and copies handed out."""

import zlib

import torch

from autograder.checks import draws
from autograder.checks.draws import Draws


def live(check_id, specs):
    generator = torch.Generator().manual_seed(zlib.crc32(check_id.encode()))
    out = []
    for kind, *args in specs:
        if kind == "randn":
            shape, dtype, scale = args
            values = torch.randn(*shape, generator=generator, dtype=torch.float64)
            if not (isinstance(scale, float) and scale == 1.0):
                values = values * scale
            out.append(values.to(dtype))
        else:
            high, size = args
            out.append(torch.randint(high, size, generator=generator))
    return out


def drawn(check_id, specs):
    kept = Draws(check_id)
    return [kept.randn(*args) if kind == "randn" else kept.randint(*args) for kind, *args in specs]


def same(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


A = [("randn", (2, 3), torch.float32, 1.0), ("randn", (4,), torch.float64, 2),
     ("randint", 10, (3,)), ("randn", (1, 5), torch.float32, 0.5)]


def test_kept_draws_are_the_live_generators_numbers():
    draws._KEPT.clear()
    check = "test.draws"
    same(drawn(check, A), live(check, A))  # all drawn live, kept
    same(drawn(check, A), live(check, A))  # all kept
    assert sum(1 for key in draws._KEPT.snapshot() if key[1] == check) == len(A)
    # kept ones, then a new one (from the state the kept ones left), then more new ones
    branch = A[:2] + [("randint", 7, torch.Size([2, 2])), ("randn", (3,), torch.float32, 1.0)] + A[2:]
    same(drawn(check, branch), live(check, branch))
    same(drawn(check, branch), live(check, branch))
    # another check: other numbers, keyed apart
    same(drawn("test.other", A), live("test.other", A))
    assert not torch.equal(drawn("test.other", A)[0], drawn(check, A)[0])


def test_a_draw_that_cannot_be_keyed_is_drawn_live_with_all_after_it():
    draws._KEPT.clear()
    check = "test.unkeyed"
    odd = A[:1] + [("randn", (2,), torch.float32, torch.tensor(3.0))] + A[1:]
    same(drawn(check, A), live(check, A))
    same(drawn(check, odd), live(check, odd))
    same(drawn(check, odd), live(check, odd))
    assert sum(1 for key in draws._KEPT.snapshot() if key[1] == check) == len(A)  # nothing after it kept


def test_what_is_handed_out_is_a_copy():
    draws._KEPT.clear()
    for _ in range(2):  # drawn live and kept, then handed out from what was kept
        for values in drawn("test.copy", A):
            values.zero_()
    same(drawn("test.copy", A), live("test.copy", A))


def test_a_process_cache_keeps_the_first_value_and_starts_over_when_full():
    from autograder.checks.process_cache import ProcessCache

    cache = ProcessCache(limit=2)
    assert cache.keep("a", 1) == 1 and cache.keep("a", 2) == 1  # the first one kept wins
    cache.keep("b", 3)
    assert cache.snapshot() == {"a": 1, "b": 3}
    assert cache.keep("c", 4) == 4  # full: it starts over
    assert cache.snapshot() == {"c": 4} and cache.get("a") is None
