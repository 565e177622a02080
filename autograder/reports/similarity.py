"""Similarity between the submissions of one batch, for the instructor's class report.

Only the student's own work is compared: the definitions of the assignment's targets (the
functions and classes its checks grade), read with the grader's loader (definitions only).
Each definition is normalised so that renaming changes nothing: docstrings go, every variable,
argument and local name becomes ``V``, string constants become ``S``; attribute names
(``wq``, ``transpose``), keyword names (``dim=``) and numbers stay, since they are the API.

Two measures come from the normalised token streams:

- the **score** of a pair: the Jaccard index of their sets of k-grams (``kgram`` tokens in a
  row), after removing the k-grams of the released stub (signatures, ``super().__init__()``,
  ``raise NotImplementedError()``), of the code the notebook gives (from solutions/, e.g. the
  ``MultiHeadAttention`` an encoder notebook hands out) and, in a batch of at least
  ``COMMON_MIN_STUDENTS``, of k-grams that more than ``common_fraction`` of the students share
  (what everyone writes, e.g. ``torch.triu(torch.ones(t, t), diagonal=1)``);
- the **shared fragments**: whole statements (at least ``min_fragment_tokens`` tokens) whose
  normalised form both students wrote, under the same filters, with each one's own text.

Pairs whose score reaches ``threshold`` are listed. A high score is a reason to look, not a
verdict: short assignments leave little room to differ. The settings come from course.toml:

    [similarity]
    threshold = 0.7            # list pairs with a score >= this (0..1)
    kgram = 12                 # tokens per k-gram
    min_fragment_tokens = 12   # shortest statement shown as a shared fragment
    common_fraction = 0.5      # ignore k-grams more than this fraction of the students share
"""

import ast
import functools
import hashlib
import itertools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder.loading import parse_python, read_notebook_file

DEFAULTS = {"threshold": 0.7, "kgram": 12, "min_fragment_tokens": 12, "common_fraction": 0.5}
COMMON_MIN_STUDENTS = 5  # below this, "what most students write" means nothing
MAX_FRAGMENTS = 8  # per pair, longest first
SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"
_SOLUTION_REGION = re.compile(r"(?m)^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION[ \t]*$", re.S)


class SettingsError(ValueError):
    """course.toml's [similarity] table holds a wrong value."""


@dataclass(frozen=True)
class Settings:
    threshold: float = DEFAULTS["threshold"]
    kgram: int = DEFAULTS["kgram"]
    min_fragment_tokens: int = DEFAULTS["min_fragment_tokens"]
    common_fraction: float = DEFAULTS["common_fraction"]

    def to_json(self):
        return dict(vars(self))


def settings(course_path=None):
    """The [similarity] settings of a course.toml (defaults for what it leaves out)."""
    data = {}
    if course_path is not None and Path(course_path).is_file():
        with open(course_path, "rb") as handle:
            data = tomllib.load(handle).get("similarity", {})
    if not isinstance(data, dict):
        raise SettingsError("[similarity] must be a table")
    unknown = set(data) - set(DEFAULTS)
    if unknown:
        raise SettingsError(f"[similarity] has unknown keys: {', '.join(sorted(unknown))}")
    values = {**DEFAULTS, **data}
    for key in ("threshold", "common_fraction"):
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise SettingsError(f"similarity.{key} must be a number from 0 to 1, not {value!r}")
    for key in ("kgram", "min_fragment_tokens"):
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise SettingsError(f"similarity.{key} must be an integer >= 2, not {value!r}")
    return Settings(float(values["threshold"]), values["kgram"], values["min_fragment_tokens"],
                    float(values["common_fraction"]))


# -- normalising ------------------------------------------------------------------------------
_RENAMED = {"Name": "id", "arg": "arg"}


def tokens(node, spans=None):
    """The node's normalised token stream, in source order. With ``spans`` (a dict), each node
    below gets its (start, end) in the stream: its own stream is that slice, found in one pass
    instead of once per level of nesting."""
    out = []
    _tokens(node, out, spans)
    return out


def _tokens(node, out, spans):
    start = len(out)
    kind = type(node).__name__
    out.append(kind)
    for name, value in ast.iter_fields(node):
        if name in ("ctx", "type_comment", "kind", "type_params"):
            continue
        if isinstance(value, ast.AST):
            _tokens(value, out, spans)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    _tokens(item, out, spans)
                elif item is not None:
                    out.append(_scalar(kind, name, item))
        elif value is not None:
            out.append(_scalar(kind, name, value))
    if spans is not None:
        spans[node] = (start, len(out))


def _scalar(kind, field_name, value):
    if _RENAMED.get(kind) == field_name:
        return "V"
    if kind == "Constant":
        if isinstance(value, str):
            return "S"
        return repr(value)
    if kind in ("FunctionDef", "AsyncFunctionDef") and field_name == "name":
        return value if value.startswith("__") or value in ("forward",) else "F"
    return str(value)


def without_docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text):
    """``text`` split into lines as the parser counts them (keeping their endings), once:
    ``ast.get_source_segment`` splits the whole text again on every call."""
    return _LINE.findall(text)


def segment(lines, node):
    """The source of ``node`` (``ast.get_source_segment``) from ``source_lines``, or its
    unparsed text when positions are missing."""
    end, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if end is None or end_col is None or end > len(lines):
        return ast.unparse(node)
    start, col = node.lineno - 1, node.col_offset
    if start == end - 1:
        return lines[start].encode()[col:end_col].decode()
    return (lines[start].encode()[col:].decode() + "".join(lines[start + 1:end - 1])
            + lines[end - 1].encode()[:end_col].decode())


def _hash(items):
    return hashlib.blake2b("\x1f".join(items).encode(), digest_size=8).digest()


def kgrams(stream, k):
    if len(stream) < k:
        return {_hash(stream)} if stream else set()
    return {_hash(stream[i:i + k]) for i in range(len(stream) - k + 1)}


@dataclass
class Code:
    """One student's targets, parsed and normalised."""

    student: str
    sources: dict = field(default_factory=dict)  # target -> source text
    grams: set = field(default_factory=set)  # (target, k-gram hash)
    statements: dict = field(default_factory=dict)  # (target, hash) -> (tokens, source text)


def definitions(text, names):
    """{name: last top-level definition of it} in ``text`` (a module's source)."""
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return {}
    return {node.name: node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names}


def analyse(student, sources, settings_):
    """``sources``: target -> source text of its definition."""
    code = Code(student, dict(sources))
    for target, text in sources.items():
        try:
            tree = without_docstrings(parse_python(text))
        except (SyntaxError, ValueError):
            continue
        spans = {}
        whole = tokens(tree, spans)
        code.grams |= {(target, g) for g in kgrams(whole, settings_.kgram)}
        lines = source_lines(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                start, end = spans[node]
                stream = whole[start:end]
                if len(stream) >= settings_.min_fragment_tokens:
                    code.statements.setdefault((target, _hash(stream)),
                                               (len(stream), segment(lines, node) or ast.unparse(node)))
    return code


def sources_of(path, targets):
    """target -> source of its last definition in one submission (read by the grader's
    loader: definitions only, syntax errors skipped); {} when nothing can be read."""
    from autograder import loading

    loaded = loading.load(path)
    found = {}
    for chunk in loaded.chunks:
        text = chunk.get("code", "") if isinstance(chunk, dict) else ""
        lines = source_lines(text)
        for name, node in definitions(text, targets).items():
            found[name] = segment(lines, node) or ast.unparse(node)
    return found


def starter_code(targets, source_notebook=None):
    """target -> (stub source) and the given definitions, as one list of source texts: what
    every student received. From the nbgrader source notebook (solution regions replaced by
    ``raise NotImplementedError()``, as nbgrader releases them, and its read-only cells),
    else from solutions/ with every function body emptied."""
    texts = []
    if source_notebook is not None and Path(source_notebook).is_file():
        notebook = read_notebook_file(source_notebook)
        for cell in notebook.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.cell_type != "code" or (meta.get("grade") and not meta.get("solution")):
                continue
            texts.append(_SOLUTION_REGION.sub(lambda m: f"{m.group(1)}raise NotImplementedError()",
                                              cell.source))
        return texts
    for path in sorted(SOLUTIONS.glob("*.py")):
        tree = parse_python(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                if node.name in targets:
                    _empty_bodies(node)
                texts.append(ast.unparse(node))
    return texts


def _empty_bodies(node):
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
            keep = [s for s in sub.body[:2] if isinstance(s, ast.Expr) and (
                isinstance(s.value, ast.Constant) or ast.unparse(s) == "super().__init__()")]
            sub.body = keep + [parse_python("raise NotImplementedError()").body[0]]


def baseline(targets, settings_, source_notebook=None):
    """The k-grams and statements of the starter code, under every target's name (a stub or
    given snippet may turn up in any of them)."""
    grams, statements = set(), set()
    for text in starter_code(targets, source_notebook):
        try:
            tree = without_docstrings(parse_python(text))
        except SyntaxError:
            continue
        for node in tree.body:
            stream = tokens(node)
            for target in targets:
                grams |= {(target, g) for g in kgrams(stream, settings_.kgram)}
            for sub in ast.walk(node):
                if isinstance(sub, ast.stmt):
                    statements |= {(target, _hash(tokens(sub))) for target in targets}
    return grams, statements


# -- comparing ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float  # Jaccard index of the filtered k-gram sets
    per_target: dict  # target -> Jaccard index on that target alone
    fragments: tuple  # (target, text of a, text of b), longest first

    def to_json(self):
        return {"a": self.a, "b": self.b, "score": round(self.score, 4),
                "per_target": {t: round(s, 4) for t, s in self.per_target.items()},
                "fragments": [{"target": t, "a": x, "b": y} for t, x, y in self.fragments]}


@dataclass(frozen=True)
class Report:
    settings: Settings
    compared: tuple  # students whose code could be read
    pairs: tuple  # every Pair at or above the threshold, highest first
    ignored_common: int  # k-grams dropped as "what most students write"

    def to_json(self):
        return {"settings": self.settings.to_json(), "compared": list(self.compared),
                "ignored_common_kgrams": self.ignored_common,
                "pairs": [p.to_json() for p in self.pairs]}


def compare(codes, settings_, starter=(set(), set())):
    """Every pair of ``codes`` (Code) scoring at least the threshold, highest first."""
    codes = list(codes)
    return compare_loaded([lambda code=code: code for code in codes], settings_, starter)


def compare_loaded(loaders, settings_, starter=(set(), set())):
    """``compare`` of the Codes that ``loaders`` (callables, one per student, None for a
    student left out) give, loaded one at a time: a class's codes are read from a
    ``kept.Spool`` twice (the k-grams most of them share, then each one's others) and held
    only as the k-grams that count and, for a pair that is listed, the statements.
    ``starter``: the starter code's (k-grams, statements), or a callable that makes them,
    called only if there are two students to compare (a batch of one has no pair)."""
    present = []  # the loaders of the students whose code could be read
    gram_counts, statement_counts = {}, {}
    for load in loaders:
        code = load()
        if code is None or not code.sources:
            continue
        present.append(load)
        for gram in code.grams:
            gram_counts[gram] = gram_counts.get(gram, 0) + 1
        for key in code.statements:
            statement_counts[key] = statement_counts.get(key, 0) + 1
    common_grams, common_statements = set(), set()
    if len(present) >= COMMON_MIN_STUDENTS:
        limit = settings_.common_fraction * len(present)
        common_grams = {g for g, n in gram_counts.items() if n > limit}
        common_statements = {s for s, n in statement_counts.items() if n > limit}
    del gram_counts, statement_counts
    if callable(starter):
        starter = starter() if len(present) >= 2 else (set(), set())
    base_grams, base_statements = starter
    drop_grams = base_grams | common_grams
    drop_statements = base_statements | common_statements
    students, kept = [], []
    for load in present:
        code = load()
        students.append(code.student)
        kept.append(code.grams - drop_grams)
    statements = {}  # index -> Code.statements, read again for the pairs that are listed

    def statements_of(index):
        if index not in statements:
            statements[index] = present[index]().statements
        return statements[index]

    pairs = []
    for i, j in itertools.combinations(range(len(present)), 2):
        x, y = kept[i], kept[j]
        union = x | y
        score = len(x & y) / len(union) if union else 0.0
        if score < settings_.threshold or not (x & y):
            continue
        per_target = {}
        for target in sorted({t for t, _ in union}):
            xt = {g for g in x if g[0] == target}
            yt = {g for g in y if g[0] == target}
            if xt | yt:
                per_target[target] = len(xt & yt) / len(xt | yt)
        a_statements, b_statements = statements_of(i), statements_of(j)
        shared = [key for key in a_statements if key in b_statements and key not in drop_statements]
        shared.sort(key=lambda key: -a_statements[key][0])
        fragments, seen = [], []
        for key in shared:
            text_a = a_statements[key][1]
            if any(text_a in bigger for bigger in seen):
                continue  # already shown inside a larger shared statement
            seen.append(text_a)
            fragments.append((key[0], text_a, b_statements[key][1]))
            if len(fragments) == MAX_FRAGMENTS:
                break
        pairs.append(Pair(students[i], students[j], score, per_target, tuple(fragments)))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return Report(settings_, tuple(students), tuple(pairs), len(common_grams))


def code_of(result, targets, settings_):
    """One record's ``Code`` (``result.source`` read again), or None when there is nothing to
    read (unreadable, or vanished since grading: that student is left out)."""
    if not result.source:
        return None
    try:
        sources = sources_of(result.source, targets)
    except Exception:
        return None
    return analyse(result.student, sources, settings_)


def batch_similarity(results, targets, settings_, source_notebook=None, known=None):
    """A ``Report`` over the records of one batch. ``known``: {(student, source): Code or
    None} already made by ``code_of`` (a ``kept.Spool``: the batch does it as each student is
    graded, while the others are still being graded); the other records are read here, and
    spooled too, so that no more than one student's code is held at a time."""
    from autograder.reports.kept import Spool

    known = known if known is not None else {}
    with Spool() as read_here:
        loaders = []
        for result in results:
            key = (result.student, result.source)
            if key not in known:
                read_here.put(key, code_of(result, targets, settings_))
            loaders.append(functools.partial((known if key in known else read_here).__getitem__, key))
        return compare_loaded(loaders, settings_,
                              functools.partial(baseline, targets, settings_, source_notebook))
