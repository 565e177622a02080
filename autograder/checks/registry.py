"""The check registry: every check is declared once, beside the code that decides it.

    @check("mha.shape", assignment="attention", target="MultiHeadAttention",
           category="shape", points=2, needs=("mha.construct", "mha.sensitivity"),
           title=bilingual("...", "..."), hint=bilingual("...", "..."))
    def mha_shape(ctx): ...

The rule a check follows:

- It is about one declared target (``targets.py``: the contract's function or class, its
  reference, sub-modules, parameters and sizes), and its id is ``<the target's prefix>.<what>``.
- It is a function of one ``Context`` (context.py) and nothing else: the student's code is
  reached only through ``ctx`` (``ctx.new``, ``ctx.call``, ``ctx.session``), sizes and
  tolerances only through ``ctx.chapter``, ``ctx.hidden`` and ``ctx.tolerance(name)``.
- It decides in the trusted process: inputs are made here (``ctx.randn``, seeded by the
  check's id, so a check sees the same inputs every time), the worker only computes.
- It passes by returning and fails by calling ``fail(bilingual(indonesian, english))``: the
  message says what is wrong; the declared ``hint`` (where to look) goes with it to the
  student. An error raised by the student's code fails the check with that error; any other
  exception is a fault of the grader, reported to the instructor.
- It runs only when every check in ``needs`` passed; those are declared before it. A check
  whose failure says nothing about the others (code that raises only at some configurations,
  e.g. an attention that raises only when Tq != Tk) fails with ``only_here(error)``: the checks
  that need it still run, where the code works.
- A check that sends the course's hidden sizes to the worker declares ``reads_hidden=True``: the
  grader runs those after the others, and shows nothing the student's code wrote while they ran
  (``grading.grader``), so the hidden sizes never reach a report. A check that reads them only to
  keep its inputs away from them reads ``ctx.avoid`` instead of ``ctx.hidden``.
- Points go to code that computes (the gate). Every target has exactly one check of category
  ``sensitivity``, its *gate*, declared right after the checks that only read the definition
  (``*.present``, ``*.construct``), which it needs. The gate *measures* against the reference
  (``GATE_SHARE``): on the gate's inputs, with the reference's weights copied in wherever they fit,
  whatever must respond to an input moves, under the gate's change of that input, by at least
  ``GATE_SHARE`` of what the reference's output moves (mean absolute change): an attention's
  output or weights for each of q, k and v; a feed-forward or encoder block's output for x; a
  decoder block's for x or the memory (ignoring only the memory is one bug, ``dec.memory_path``'s).
  ``out - x`` must move by that share of the reference's ``out - x`` (not the input plus
  something fixed or tiny); a causal mask's or positional encoding's values must spread over
  the positions by that share of the reference's spread; and an output must not be NaN or inf
  everywhere. So degenerate code plus a small term that depends on the input (1e-3·q) fails the
  gate like the degenerate code itself. It never compares values with the reference, so a
  submission with one real bug (a missing scale, ReLU for GELU, an inverted mask, a sub-layer's
  NaN row) passes it and is charged once, by the check that names the bug; an error raised by
  the student's code passes it too (the checks after it name the error). Every other check of
  the target needs the gate, directly or through another check, except those the budget allows:
  the points a degenerate target can still earn (its checks that do not need the gate, plus the
  gate's own) are at most ``DEGENERATE_SHARE`` of the target's points.
  ``tests/test_corpus.py`` computes this budget from the registry for every target, and grades
  degenerate submissions (``tests/corpus/*/degenerate``, ``tests/hostile/gate_*``) against it.
- A check whose verdict compares the student's own calls with each other (``COMPARES_CALLS``:
  a gate's movement, masking, causality, equivariance, batch independence, the memory path,
  float64 against float32) counts only once a fresh worker, asked the same calls in the reverse
  order, gives the same answers (``checks.verification``): state kept from one call to the next
  cannot make two calls agree. A check that compares each output with the reference alone needs
  no such replay (state cannot make a wrong module compute the reference's numbers).
- Its points are the registry's unless course.toml overrides them (``autograder.plan``).
- A check module imports from ``registry``, ``context``, ``recorded``, ``verdicts``,
  ``attention_calls`` (``assembly`` and ``steps`` for assignment 4) and ``autograder.texts``,
  never from another check module: what more than one module uses lives in those. The modules are listed, in declaration order, in
  ``autograder/checks/__init__.py``.
- It never asks the grader to compute for the worker: a student's module always runs with
  its own sub-layers. A check that grades a module apart from its sub-layers *records* them
  (``ctx.record``: each call's arguments and result come back with the output) and recomputes
  the module's own part here from the recorded results. Block and MHA checks use:
  wiring from records (``enc.postln_wiring``, ``enc.preln_wiring``, ``enc.hidden_config``,
  ``enc.float64``, ``dec.wiring``, ``dec.cross_weights``, ``dec.hidden_config``, ``dec.float64``,
  ``mha.numeric``, ``mha.float64``, ``mha.hidden_config`` around the student's own
  scaled_dot_product_attention); the whole module against the reference (``*.integration``);
  the module as written (every property check, with recorded sub-layers for
  ``enc.masking`` and the gradient checks). Each module's docstring has the details.
"""

from dataclasses import dataclass, fields, replace
from typing import Callable

from autograder.checks import targets
from autograder.texts import Bilingual, bilingual

CATEGORIES = (
    "api", "shape", "param_count", "numeric_vs_reference", "masking", "mask_convention",
    "permutation_equivariance", "causality", "memory_path", "layernorm_stats",
    "rows_sum_to_one", "hidden_config", "gradient_flow", "batch_independence", "dtype",
    "device_agnostic", "inputs_untouched", "sensitivity",
)
GATE = "sensitivity"  # the category of every target's gate (see the rule above)
DEGENERATE_SHARE = 0.20  # the most a degenerate target can earn, as a share of its points
GATE_SHARE = 0.10  # what a gate asks: this share of the reference's movement (see the rule above)
# Categories whose verdicts compare the student's calls with each other (see the rule above).
COMPARES_CALLS = frozenset({
    "sensitivity", "masking", "mask_convention", "permutation_equivariance", "causality",
    "memory_path", "batch_independence", "dtype",
})

def label(what):
    """(Indonesian, English) names of a thing: a Bilingual or a code identifier."""
    return (what.id, what.en) if isinstance(what, Bilingual) else (what, what)


OUTPUT = bilingual("Keluaran", "The output")
WEIGHTS = bilingual("Bobot attention", "The attention weights")


@dataclass(frozen=True)
class CheckInfo:
    """What is known about a check without running it; plain data, serializable."""

    id: str
    assignment: str
    target: str  # the student's function or class the check is about
    category: str
    points: float
    title: Bilingual
    hint: Bilingual

    def to_json(self):
        return {"id": self.id, "assignment": self.assignment, "target": self.target,
                "category": self.category, "points": self.points,
                "title": self.title.to_json(), "hint": self.hint.to_json()}

    @classmethod
    def from_json(cls, data):
        """A ``CheckInfo`` (also when called on ``Check``: code does not travel as JSON)."""
        return CheckInfo(str(data["id"]), str(data["assignment"]), str(data["target"]),
                         str(data["category"]), float(data["points"]),
                         Bilingual.from_json(data["title"]), Bilingual.from_json(data["hint"]))


@dataclass(frozen=True)
class Check(CheckInfo):
    """A declared check: its record plus what it depends on and the code that decides it."""

    needs: tuple  # ids of checks that must pass first
    run: Callable  # run(ctx): returns to pass, fail(...) to fail
    reads_hidden: bool = False  # it sends the hidden sizes to the worker (run after the others)

    @property
    def info(self):
        """The plain, serializable record of this check."""
        return CheckInfo(**{f.name: getattr(self, f.name) for f in fields(CheckInfo)})

    def __reduce__(self):
        # Pickled by id and points (e.g. a plan sent to a Dask worker): the other side loads the
        # registry in its declared order instead of importing one check module on its own.
        return _declared_check, (self.id, self.points)


def _declared_check(check_id, points):
    _load_all()
    found = REGISTRY[check_id]
    return found if found.points == points else with_points(found, points)


class CheckFailed(Exception):
    def __init__(self, message):
        super().__init__(message["en"])
        self.message = message


def only_here(error):
    """Mark a failure (a ``CheckFailed`` or the student's error) as this check's alone: the
    checks that need this one still run. For code that raises only at some configurations
    (an attention that raises when Tq != Tk): the property checks run where it works, and the
    failures of the same error are read as one (``checks.consequences``)."""
    error.blocks = False
    return error


def fail(message):
    """Fail the running check; ``message`` is a Bilingual saying what is wrong."""
    if not isinstance(message, Bilingual):
        raise TypeError(f"fail() takes a Bilingual (texts.bilingual), not {type(message).__name__}")
    raise CheckFailed(message)


REGISTRY: dict = {}


def check(check_id, *, assignment, target, category, points, title, hint, needs=(), reads_hidden=False):
    declared_target = targets.TARGETS.get(target)
    if declared_target is None:
        raise ValueError(f"{check_id}: its target {target!r} is not declared (checks/targets.py)")
    if not check_id.startswith(declared_target.prefix + "."):
        raise ValueError(f"{check_id}: the checks of {target} are named {declared_target.prefix}.<what>")
    if category not in CATEGORIES:
        raise ValueError(f"{check_id}: unknown category {category!r}")
    if check_id in REGISTRY:
        raise ValueError(f"check {check_id} is declared twice")
    for need in needs:
        if need not in REGISTRY:
            raise ValueError(f"{check_id} needs {need}, which must be declared before it")

    def register(function):
        REGISTRY[check_id] = Check(check_id, assignment, target, category, float(points),
                                   title, hint, tuple(needs), function, reads_hidden)
        return function

    return register


def declared(assignment):
    """The checks of one assignment in declaration order, with the registry's points."""
    _load_all()
    return [c for c in REGISTRY.values() if c.assignment == assignment]


def with_points(check_, points):
    """The same check (or record) worth ``points``."""
    return replace(check_, points=float(points))


def all_assignments():
    _load_all()
    return list(dict.fromkeys(c.assignment for c in REGISTRY.values()))


def _load_all():
    # Importing the check modules runs their @check decorators.
    import autograder.checks

    autograder.checks.load()


def gates(checks, target):
    """The gate(s) of ``target`` among ``checks`` (a list of Check, e.g. a plan's): its checks
    of category ``GATE``; the rule above wants exactly one."""
    return [c for c in checks if c.target == target and c.category == GATE]


def degenerate_points(checks, target):
    """(what degenerate code can still earn on ``target``, all of its points), from ``checks``
    (a list of Check with their points): the target's checks that do not need its gate, directly
    or through other checks, plus the gate's own points."""
    mine = [c for c in checks if c.target == target]
    by_id = {c.id: c for c in checks}
    gate_ids = {g.id for g in gates(checks, target)}
    gated = {}

    def behind_gate(check):
        if check.id not in gated:
            gated[check.id] = False  # the registry's order rules out cycles; this guards anyway
            gated[check.id] = any(n in gate_ids or (n in by_id and behind_gate(by_id[n]))
                                  for n in check.needs)
        return gated[check.id]

    free = sum(c.points for c in mine if c.id in gate_ids or not behind_gate(c))
    return free, sum(c.points for c in mine)
