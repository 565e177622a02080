"""A search over sizes: fixed edge configurations first, then configurations Hypothesis generates
from a strategy (seeded by the course, so a submission always gets the same report); a failure
is shrunk and reported as the smallest failing configuration found. Generic: it knows nothing of
attention or blocks. ``checks.sizes`` runs one per target, over the target's declared
``SizeSpace``; a configuration is judged by a ``Probe`` the check prepares.

No number equal to one of course.toml's hidden sizes (1 excepted) is ever generated or used as an
edge, in any role (``clear``, ``edges``), so none can appear in a message.
"""

import contextlib
import gc
import json
import zlib
from dataclasses import dataclass, fields
from typing import Callable

import torch

from autograder.checks.process_cache import ProcessCache
from autograder.checks.registry import CheckFailed, fail
from autograder.config import Sizes
from autograder.loading import AST_LOCK
from autograder.texts import bilingual

REQUEST_BUDGET_FAILING = 45  # requests a failing check may spend on shrinking
# Hypothesis' runner keeps global state, and it parses source (lambdas) with ast, which is not
# thread-safe in CPython 3.11 (see loading.AST_LOCK): one search at a time, no parse beside it.
_HYPOTHESIS = AST_LOCK
CALLS_PER_REQUEST = 16


@contextlib.contextmanager
def _no_local_constants():
    """Hypothesis (since 6.131) now and then draws a constant it found in the source of the
    "local" modules this process has imported (not in site-packages, not tests), parsing them
    for at most 100 ms. The sizes it generates would then depend on which of the kit's
    modules happen to be imported, on whether the kit is installed editable, and on the
    machine's speed: the same submission could be graded at other sizes by the command line
    and by nbgrader. Here it finds none: the sizes follow from the seed alone."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants

    found = providers._get_local_constants
    providers._get_local_constants = Constants
    try:
        yield
    finally:
        providers._get_local_constants = found
_GENERATED = ProcessCache()  # (check, seed, ...) -> the configurations Hypothesis generates when all pass


def _raised(error):
    return bilingual(f"kode Anda memunculkan {error.type}: {error.message[:300]}",
                     f"your code raised {error.type}: {error.message[:300]}")


@dataclass(frozen=True)
class Probe:
    """One configuration's call of the student's code, and how its result is judged here."""

    target: object  # a function name or a student object
    args: tuple
    kwargs: dict
    judge: Callable  # judge(result, Records of ``functions``): returns when right, else fail(...)
    functions: tuple = ()  # the student's module-level functions to record (``records``)
    standins: dict | None = None  # for them, as ``ctx.record`` takes them


class _Fails(Exception):
    def __init__(self, config, message):
        super().__init__(config)
        self.config, self.message = config, message


class Search:
    """Edge configurations, then generated ones, each evaluated once; the smallest failing one
    found is reported.

    ``fields``: name -> smallest valid value, in the order they are shrunk; ``evaluate(config)``
    returns None when the student's code agrees with the reference there, else a Bilingual
    saying what is wrong; ``valid(config)`` says whether a configuration may be tried (and
    shown); ``show(config)`` writes it for the student."""

    def __init__(self, ctx, fields, evaluate, valid, show, requests, prepare=None):
        self.ctx, self.fields, self._evaluate = ctx, fields, evaluate
        self.valid, self.show, self.requests = valid, show, requests
        self.prepare = prepare
        self.results = {}
        self.spent = 0  # worker requests
        self.limit = None

    @classmethod
    def of_probes(cls, ctx, fields, prepare, valid, show, requests):
        """A search whose configurations are ``prepare(config) -> Probe``: the first pass sends
        every configuration's call in one request; the ones that fail are searched one by one."""
        def evaluate(config):
            probe = prepare(config)
            probe.judge(*ctx.record(probe.target, *probe.args, functions=probe.functions,
                                    standins=probe.standins, **probe.kwargs))
        return cls(ctx, fields, evaluate, valid, show, requests, prepare)

    def key(self, config):
        return tuple(config[name] for name in self.fields)

    def result(self, config):
        key = self.key(config)
        if key not in self.results:
            if self.limit is not None and self.spent >= self.limit:
                return None  # out of budget: what was not tried counts as passing
            self.spent += self.requests(config)
            try:
                self._evaluate(config)
                self.results[key] = None
            except CheckFailed as failed:
                self.results[key] = failed.message
            except self.ctx.StudentError as error:
                self.results[key] = _raised(error)
        return self.results[key]

    def run(self, edges, strategy, seed, examples):
        generated = self._what_hypothesis_generates(strategy, seed, examples)
        if self.prepare is not None:
            self._together(list(edges) + generated)
        failing = next(((edge, self.result(edge)) for edge in edges
                        if self.result(edge) is not None), None)
        if failing is not None:  # an edge: shrink it here (Hypothesis shrinks what it generates)
            self.limit = self.spent + REQUEST_BUDGET_FAILING
            failing = self._shrink(*failing)
        elif any(self.results.get(self.key(c), True) is not None for c in generated):
            failing = self._generated(strategy, seed, examples)  # replays what passed, shrinks
        if failing is not None:
            config, message = failing
            shown = self.show(config)
            shown = shown if not isinstance(shown, str) else bilingual(shown, shown)
            fail(bilingual(f"Salah pada ukuran {shown.id}: {message.id}",
                           f"Wrong at sizes {shown.en}: {message.en}"))

    def _what_hypothesis_generates(self, strategy, seed, examples):
        """The configurations Hypothesis generates while every one passes: the same for every
        submission (the seed is the course's), so found once per process and check."""
        key = (getattr(self.ctx.check, "id", None), seed, examples, tuple(self.fields),
               tuple(sorted(hidden_numbers(self.ctx))))  # not repr(strategy): it parses lambdas
        found = _GENERATED.get(key)
        if found is None:
            found = []

            def collect(config):
                if config not in found:
                    found.append(dict(config))
            with _HYPOTHESIS:
                self._hypothesis(strategy, seed, examples, collect)()
            found = _GENERATED.keep(key, found)
        return [dict(c) for c in found]

    def _together(self, configs):
        """Every configuration not yet tried, prepared here and called in the worker in one
        request per ``CALLS_PER_REQUEST``, judged here. When a call raises, the rest are left to
        be tried one by one (so the error is that configuration's)."""
        probes = []
        for config in configs:
            key = self.key(config)
            if key in self.results or not self.valid(config) or any(k == key for k, _ in probes):
                continue
            self.spent += self.requests(config)
            try:
                probes.append((key, self.prepare(config)))
            except CheckFailed as failed:
                self.results[key] = failed.message
            except self.ctx.StudentError as error:
                self.results[key] = _raised(error)
        if not hasattr(self.ctx.session, "calls_recording"):  # no batched calls: one by one
            return
        timeout = getattr(self.ctx.session, "request_timeout", None)
        for start in range(0, len(probes), CALLS_PER_REQUEST):
            chunk = probes[start:start + CALLS_PER_REQUEST]
            runs = [{"target": p.target, "args": p.args, "kwargs": p.kwargs, "functions": p.functions,
                     "standins": p.standins} for _, p in chunk]
            try:
                answers = self.ctx.record_many(runs, timeout=timeout and timeout * min(len(chunk), 3))
            except self.ctx.StudentError:
                return
            for (key, probe), (result, records) in zip(chunk, answers):
                try:
                    probe.judge(result, records)
                    self.results[key] = None
                except CheckFailed as failed:
                    self.results[key] = failed.message

    def _hypothesis(self, strategy, seed, examples, test):
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import seed as with_seed

        run = settings(database=None, max_examples=examples, deadline=None, derandomize=False,
                       phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck),
                       verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False)(
            with_seed(seed)(given(strategy.filter(self.valid))(test)))

        def without_its_gc_callback():
            # Hypothesis times garbage collections with a callback it adds once and keeps. A
            # Ctrl-C that lands in it is swallowed ("Exception ignored in"): in the grader,
            # where the warm-up runs Hypothesis, a batch would then not stop. No deadline here
            # needs that time.
            before = list(gc.callbacks)
            try:
                with _no_local_constants():
                    return run()
            finally:
                gc.callbacks[:] = [c for c in gc.callbacks if c in before]
        return without_its_gc_callback

    def _generated(self, strategy, seed, examples):
        def probe_one(config):
            message = self.result(config)
            if message is not None:
                raise _Fails(config, message)

        with _HYPOTHESIS:
            probe = self._hypothesis(strategy, seed, examples, probe_one)
            self.limit = self.spent + 3 * examples + REQUEST_BUDGET_FAILING
            try:
                probe()
            except _Fails as found:
                return found.config, found.message
            except Exception as error:  # e.g. Hypothesis' FlakyFailure wrapping ours
                found = [e for e in getattr(error, "exceptions", ()) if isinstance(e, _Fails)]
                if found:
                    smallest = min(found, key=lambda e: self.key(e.config))
                    return smallest.config, smallest.message
                raise
            finally:
                self.limit = None
        return None

    def _shrink(self, config, message):
        """Lower one field at a time while the configuration still fails: the smallest value
        first, then a binary search between the largest passing and the smallest failing one."""
        improved = True
        while improved:
            improved = False
            for name, smallest in self.fields.items():
                value = config[name]
                if smallest is None or value == smallest:
                    continue
                if not isinstance(value, int) or isinstance(value, bool):
                    candidates = [smallest]  # e.g. no mask
                else:
                    candidates = None
                if candidates is not None:
                    found = self._try(config, name, smallest)
                    if found:
                        config, message, improved = *found, True
                    continue
                low, high = smallest - 1, value  # low passes (or is below range), high fails
                while high - low > 1:
                    middle = (low + high) // 2 if low >= smallest else smallest
                    found = self._try(config, name, middle)
                    if found:
                        (config, message), high = found, middle
                    else:
                        low = middle
                if high < value:
                    improved = True
        return config, message

    def _try(self, config, name, value):
        """(config with name=value, its failure) when it is valid and fails, else None."""
        smaller = {**config, name: value}
        if not self.valid(smaller):
            return None
        found = self.result(smaller)
        return None if found is None else (smaller, found)


# -- helpers ------------------------------------------------------------------------------
def seed_of(ctx):
    """From the course (the assignment and its sizes) and the check: one report per submission."""
    course = json.dumps([ctx.plan.name if hasattr(ctx.plan, "name") else "", numbers_of(ctx.chapter),
                         numbers_of(ctx.avoid), ctx.check.id], sort_keys=True)
    return zlib.crc32(course.encode())


def generator_for(ctx, config):
    return torch.Generator().manual_seed(zlib.crc32(f"{ctx.check.id}/{sorted(config.items())}".encode()))


def drawn_once(ctx, config, *shapes, scale=1.0):
    """One float32 tensor per shape, drawn (in order) from ``generator_for(ctx, config)`` and
    times ``scale``: the grader's own inputs for that configuration, the same for every
    submission, so drawn once per process (keyed by what seeds them: the check and the
    configuration); each caller gets copies."""
    def draw():
        generator = generator_for(ctx, config)
        drawn = tuple(randn_float32(generator, *shape) for shape in shapes)
        return drawn if scale == 1.0 else tuple(t * scale for t in drawn)
    return ctx.once(("drawn", ctx.check.id, tuple(sorted(config.items())), tuple(shapes), scale), draw)


def randn_float32(generator, *shape):
    return torch.randn(*shape, generator=generator, dtype=torch.float64).float()


def hidden_numbers(ctx):
    """Every number of course.toml's hidden sizes (d_k included). No configuration here holds
    one anywhere (1 excepted: an edge every list has), so no message can show one, in any role."""
    h = ctx.avoid
    return frozenset(numbers_of(h).values()) | {h.d_model // h.num_heads}


def numbers_of(sizes):
    """A ``config.Sizes`` (or the grader's watched view of one) as {name: number}."""
    return {f.name: getattr(sizes, f.name) for f in fields(Sizes)}


def clear(ctx, config, fields, derived=()):
    """Every number of ``config[fields]`` (and the ``derived`` products of fields, e.g. d_model =
    heads * dk) is 1 or not a hidden size."""
    hidden = hidden_numbers(ctx)
    numbers = [config[f] for f in fields] + [config[a] * config[b] for a, b in derived]
    return all(n == 1 or n not in hidden for n in numbers)


def repaired_edges(ctx, edges, valid, fields, step=None):
    """The edge configurations, each number that is a hidden size (or d_model = heads * dk
    that is one) moved up past it; the mandated 1s stay, a long sequence stays long."""
    hidden, step, repaired = hidden_numbers(ctx), step or {}, []
    for edge in map(dict, edges):
        for _ in range(16):
            if valid(edge):
                break
            bad = next((f for f in fields if edge[f] != 1 and edge[f] in hidden), None)
            if bad is None and "dk" in edge and edge["heads"] * edge["dk"] in hidden:
                bad = "dk" if edge["dk"] != 1 else "heads"
            if bad is None:
                break
            edge[bad] += step.get(bad, 1)
        if valid(edge):
            repaired.append(edge)
    return repaired


def search_sizes(ctx, space, prepare, show, requests=lambda config: 1):
    """Search ``space`` (a ``targets.SizeSpace``) with ``prepare(config) -> Probe``; fails with
    the smallest failing configuration, ``show(config)`` written for the student.
    ``requests(config)``: the worker requests a configuration costs (budget of the search)."""
    from hypothesis import strategies as st

    def valid(config):
        return ((space.constraint is None or space.constraint(config))
                and clear(ctx, config, space.numbers, derived=space.derived))

    search = Search.of_probes(ctx, dict(space.fields), prepare, valid, show, requests)
    search.run(repaired_edges(ctx, space.edges, valid, space.numbers, step=dict(space.step)),
               space.strategy(st), seed_of(ctx), examples=space.examples)
