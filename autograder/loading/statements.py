"""Which top-level statements of a student's cell (or file) load; demo, training and test code
never runs:

* imports; a module that is not installed when grading is one loading problem naming it;
  ``from __future__ import annotations`` applies to every later cell, as in Jupyter;
* function and class definitions (with their decorators);
* assignments whose value only builds things: literals, names already defined, type
  expressions (``Optional[Tensor]``), lambdas, comprehensions and calls into the standard
  library's pure modules, ``torch`` and ``numpy`` (``math.log(10000.0)``, ``float("-inf")``,
  ``torch.tensor(2.0)``, ``TypeVar("T")``), or of a dataclass / NamedTuple / Enum defined in the
  submission; never a call of the student's own functions or modules (``model = MyBlock()``),
  printing, file or network I/O, seeding or training;
* ``Class.attribute = value`` for a class of the submission; ``__all__``;
* ``try:`` blocks that only define things (guarded imports; what their ``except`` branches do
  besides defining, e.g. a print, is dropped), ``if TYPE_CHECKING:`` and other ``if`` blocks
  that only define things.

Everything else is dropped and reported once (cell and line of each statement), as a note that
costs nothing. IPython magics and shell escapes are blanked. A cell with a syntax error is
reported and the other cells still load.
"""

import ast
import builtins
import copy
import functools
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder.loading.code import parse_python

# Modules whose functions only compute or build values: calling them at the top level is
# allowed (a denied attribute below still is not). Everything else importable stays importable.
PURE_MODULES = frozenset({
    "__future__", "abc", "cmath", "collections", "copy", "dataclasses", "decimal", "enum",
    "fractions", "functools", "itertools", "math", "numbers", "numpy", "operator", "re",
    "string", "torch", "types", "typing", "typing_extensions",
})
# Calls of these (the last attribute) are work, not definitions: I/O, state, training.
DENIED_CALLS = frozenset({
    "load", "loads", "save", "from_file", "fromfile", "loadtxt", "savetxt", "genfromtxt",
    "memmap", "tofile", "open", "download", "compile", "manual_seed", "seed", "backward",
    "step", "zero_grad", "fit", "train", "cuda", "system", "popen", "sleep", "print",
    "use_deterministic_algorithms", "run", "urlopen",
})
# Nothing reached through these namespaces runs at the top level.
DENIED_NAMESPACES = frozenset({
    "hub", "distributed", "multiprocessing", "onnx", "profiler", "export", "library", "utils",
    "optim", "testing", "random", "cuda_graphs", "jit",
})
# Builtins that only compute; every builtin class (int, float, tuple, ValueError, ...) too.
PURE_BUILTINS = frozenset(
    {name for name, value in vars(builtins).items() if isinstance(value, type)}
    | {"abs", "all", "any", "ascii", "bin", "callable", "chr", "divmod", "format", "getattr",
       "hasattr", "hash", "hex", "isinstance", "issubclass", "len", "max", "min", "oct", "ord",
       "pow", "repr", "round", "sorted", "sum"}) - {"memoryview"}
KNOWN_NAMES = frozenset(dir(builtins)) | {"__name__", "__builtins__"}
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
CONFIG_BASES = frozenset({"NamedTuple", "TypedDict", "Enum", "IntEnum", "StrEnum", "Flag",
                          "IntFlag"})
# Where a student's module would be found but the sandboxed worker cannot see it (the kit).
KIT_ROOT = Path(__file__).resolve().parents[2]


# -- one cell's statements ------------------------------------------------------------------------
def _strip_ipython(source):
    """Blank out magics and shell escapes, keeping line numbers; a cell magic drops the cell."""
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return ""
    kept = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#")):
            kept.append("")
        else:
            kept.append(line)
    return "\n".join(kept)


def _top_level_names(code):
    try:
        body = parse_python(_strip_ipython(code)).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    names = set()
    for node in body:
        names |= set(_statement_bindings(node))
    return names


def add_definitions(source, origin, loaded, report=True):
    """Append the definition statements of one cell (or file) to ``loaded``. ``report``: list
    what is dropped (the student's cells); the course's own cells are taken silently."""
    if not isinstance(source, str):
        loaded.problems.append({"code": "bad_cell", "detail": "", "places": [[origin, None]]})
        return
    source = _strip_ipython(source.replace("\r\n", "\n").replace("\r", "\n"))
    try:
        tree = parse_python(source)
    except SyntaxError as error:
        loaded.problems.append({"code": "syntax_error", "detail": str(error.msg),
                                "places": [[origin, error.lineno]]})
        return
    except (MemoryError, RecursionError, ValueError) as error:  # absurdly nested or null bytes
        loaded.problems.append({"code": "syntax_error", "detail": type(error).__name__,
                                "places": [[origin, None]]})
        return
    lines = source.split("\n")
    body = tree.body
    for index, node in enumerate(body):
        try:
            decision = _decide(node, loaded, guarded=False)
        except RecursionError:
            decision = Decision("drop")
        if decision.verdict == "silent":
            continue
        if decision.verdict == "unavailable":
            for module in decision.modules:
                loaded.missing_modules.setdefault(module, []).append([origin, node.lineno])
            for name in _statement_bindings(node):
                loaded.names[name] = "unavailable"
                loaded.unavailable[name] = decision.modules[0]
            continue
        if decision.verdict == "drop":
            if report and not decision.quiet:
                loaded.dropped.append([origin, node.lineno])
            continue
        if report:
            loaded.dropped.extend([origin, blank.lineno] for blank in decision.blanks)
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        alone = (index == 0 or body[index - 1].end_lineno < start) and (
            index == len(body) - 1 or body[index + 1].lineno > node.end_lineno)
        try:
            segment = _segment(node, lines, start, alone, decision.blanks, loaded.future_annotations)
        except (RecursionError, MemoryError, ValueError) as error:  # e.g. a 600-term expression
            loaded.problems.append({"code": "syntax_error", "detail": type(error).__name__,
                                    "places": [[origin, start]]})
            continue
        loaded.chunks.append({"code": "\n" * (start - 1) + segment, "origin": origin})
        loaded.names.update(decision.names)
        for name, module in decision.unavailable.items():
            loaded.unavailable.setdefault(name, module)
        if decision.future_annotations:
            loaded.future_annotations = True
        if decision.star:
            loaded.star_import = decision.star
        _note_stubs(node, origin, loaded)


# -- what a statement is ---------------------------------------------------------------------------
@dataclass
class Decision:
    verdict: str  # keep, drop, silent or unavailable
    names: dict = field(default_factory=dict)  # what it binds when kept: name -> kind
    blanks: list = field(default_factory=list)  # nested statements replaced by ``pass``
    modules: list = field(default_factory=list)  # unavailable modules
    unavailable: dict = field(default_factory=dict)  # name -> module (guarded imports)
    future_annotations: bool = False
    star: str | None = None
    quiet: bool = False  # dropped without a note (it only repeats a missing module)


class _Scope:
    """The names visible while deciding: the submission's so far plus a statement's own."""

    def __init__(self, loaded, names=None):
        self.loaded = loaded
        self.names = dict(names or {})

    def kind(self, name):
        if name in self.names:
            return self.names[name]
        if name in self.loaded.names:
            return self.loaded.names[name]
        if name in KNOWN_NAMES:
            return "builtin"
        return self.loaded.star_import


def _decide(node, loaded, guarded=False, scope=None):
    scope = scope or _Scope(loaded)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _decide_import(node, scope, guarded)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return Decision("keep", names={node.name: _definition_kind(node)})
    if isinstance(node, (ast.Pass, ast.Global, ast.Nonlocal)) or _is_docstring(node):
        return Decision("silent")
    if isinstance(node, ast.Expr) and _is_grader_call(node.value):
        return Decision("silent")
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return _decide_assignment(node, scope)
    if isinstance(node, ast.If):
        return _decide_if(node, scope, guarded)
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        return _decide_try(node, scope)
    return Decision("drop")


def _decide_import(node, scope, guarded):
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        root = module.split(".")[0]
        if node.level:  # a relative import: there is no package around a notebook
            return Decision("keep", names={a.asname or a.name: "foreign" for a in node.names})
        if root == "autograder":
            return Decision("silent")
        if root == "__future__":
            return Decision("keep", future_annotations=any(a.name == "annotations" for a in node.names))
        kind = _module_kind(module)
        if not guarded and not _available(root):
            return Decision("unavailable", modules=[root])
        names = {a.asname or a.name: kind for a in node.names if a.name != "*"}
        star = kind if any(a.name == "*" for a in node.names) else None
        decision = Decision("keep", names=names, star=star)
        if guarded and not _available(root):
            decision.unavailable = {name: root for name in names}
        return decision
    roots = [alias.name.split(".")[0] for alias in node.names]
    if "autograder" in roots:
        return Decision("silent")
    missing = [root for root in dict.fromkeys(roots) if not _available(root)]
    if missing and not guarded:
        return Decision("unavailable", modules=missing)
    names = {}
    for alias in node.names:
        bound = alias.name if alias.asname else alias.name.split(".")[0]
        names[alias.asname or bound] = _module_kind(bound)
    decision = Decision("keep", names=names)
    decision.unavailable = {alias.asname or alias.name.split(".")[0]: alias.name.split(".")[0]
                            for alias in node.names if alias.name.split(".")[0] in missing}
    return decision


def _module_kind(module):
    """"module" (calls into it build values) for a pure module outside the denied namespaces
    (``torch.utils.data``, ``torch.hub``...), else "foreign"."""
    parts = module.split(".")
    if parts[0] in PURE_MODULES and not any(part in DENIED_NAMESPACES for part in parts[1:]):
        return "module"
    return "foreign"


@functools.lru_cache(maxsize=512)
def _available(root):
    """Whether ``import root`` can work in the grading worker (same interpreter and venv; the
    kit's own checkout is hidden from it). Only finds the module, never runs it."""
    if not root.isidentifier():
        return False
    if root in sys.builtin_module_names or root in sys.stdlib_module_names:
        return True
    try:
        spec = importlib.util.find_spec(root)
    except (ImportError, ValueError, AttributeError):
        return False
    if spec is None:
        return False
    origin = spec.origin or (list(spec.submodule_search_locations or [None])[0])
    if not origin or origin in ("built-in", "frozen"):
        return True
    path = Path(origin).resolve()
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    if any(path.is_relative_to(prefix) for prefix in prefixes):
        return True
    return not path.is_relative_to(KIT_ROOT)


def _definition_kind(node):
    """"config" for a class whose instances are plain data (dataclass, NamedTuple, Enum,
    TypedDict): building one at the top level is a definition; else "student"."""
    if not isinstance(node, ast.ClassDef):
        return "student"
    if _is_dataclass(node) or any(_last_name(base) in CONFIG_BASES for base in node.bases):
        return "config"
    return "student"


def _is_dataclass(node):
    return any(_last_name(d.func if isinstance(d, ast.Call) else d) == "dataclass"
               for d in node.decorator_list)


def _last_name(expr):
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def _is_docstring(node):
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and (
        isinstance(node.value.value, str) or node.value.value is Ellipsis)


def _is_grader_call(expr):
    """``grade_target(...)``, the hidden cells' call, copied or run by a student."""
    return isinstance(expr, ast.Call) and _last_name(expr.func) == "grade_target"


def _decide_assignment(node, scope):
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if isinstance(node, ast.AugAssign):
        if not (isinstance(node.target, ast.Name)
                and scope.kind(node.target.id) in ("safe", "module", "config")):
            return Decision("drop")
    elif not all(_assignable(target, scope) for target in targets):
        return Decision("drop")
    parts = [node.value] if node.value is not None else []
    if isinstance(node, ast.AnnAssign) and not scope.loaded.future_annotations:
        parts.append(node.annotation)
    verdict = "keep"
    for part in parts:
        problem = _expression_problem(part, scope)
        if problem == "unavailable":
            return Decision("drop", quiet=True)
        if problem:
            verdict = "drop"
    if verdict == "drop":
        return Decision("drop")
    kind = "student" if any(_refers_to_code(part, scope) for part in parts) else "safe"
    return Decision("keep", names={name: kind for target in targets for name in _target_names(target)})


def _assignable(target, scope):
    """Names, tuples of names, or an attribute of a class the submission defines."""
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_assignable(element, scope) for element in target.elts)
    if isinstance(target, ast.Starred):
        return _assignable(target.value, scope)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return target.value.id in scope.loaded.classes
    return False


def _target_names(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _decide_if(node, scope, guarded):
    test = node.test
    if _is_type_checking(test):  # never true at run time: only the else branch runs
        return _decide_block(node.orelse, scope, guarded)
    if _is_main_guard(test):
        return Decision("drop")
    if _expression_problem(test, scope):
        return Decision("drop")
    body = _decide_block(node.body, scope, guarded)
    other = _decide_block(node.orelse, scope, guarded)
    for branch in (body, other):
        if branch.verdict == "unavailable":
            return branch
    if body.verdict != "keep" or other.verdict != "keep":
        return Decision("drop", quiet=body.quiet or other.quiet)
    return Decision("keep", names={**body.names, **other.names},
                    unavailable={**body.unavailable, **other.unavailable})


def _decide_block(statements, scope, guarded, blank_work=False):
    """Every statement of a nested block must define things (or, with ``blank_work``, the
    others are blanked); the names bound earlier in the block are visible to later ones."""
    inner = _Scope(scope.loaded, scope.names)
    result = Decision("keep")
    for statement in statements:
        decision = _decide(statement, scope.loaded, guarded, inner)
        if decision.verdict == "silent":
            continue
        if decision.verdict == "keep":
            inner.names.update(decision.names)
            result.names.update(decision.names)
            result.unavailable.update(decision.unavailable)
            result.blanks.extend(decision.blanks)
        elif blank_work and decision.verdict == "drop":
            result.blanks.append(statement)
        else:
            return Decision(decision.verdict if decision.verdict != "keep" else "drop",
                            modules=decision.modules, quiet=decision.quiet)
    return result


def _decide_try(node, scope):
    catches_import = any(_catches_import_error(handler) for handler in node.handlers)
    body = _decide_block(node.body, scope, guarded=catches_import)
    if body.verdict == "unavailable":
        return body
    if body.verdict != "keep":
        return Decision("drop", quiet=body.quiet)
    result = Decision("keep", names=dict(body.names), blanks=list(body.blanks),
                      unavailable=dict(body.unavailable))
    branches = [handler.body for handler in node.handlers] + [node.orelse, node.finalbody]
    for handler in node.handlers:
        if handler.type is not None and _expression_problem(handler.type, scope):
            return Decision("drop")
    for statements in branches:
        branch = _decide_block(statements, scope, guarded=False, blank_work=True)
        if branch.verdict != "keep":
            return Decision("drop", modules=branch.modules, quiet=branch.quiet)
        for name, kind in branch.names.items():
            result.names.setdefault(name, kind)
        result.blanks.extend(branch.blanks)
    # a name the guarded import binds is defined either way (the except branch binds it too)
    for name in list(result.unavailable):
        if any(name in _block_bindings(h.body) for h in node.handlers):
            del result.unavailable[name]
    return result


def _block_bindings(statements):
    return {name for statement in statements for name in _statement_bindings(statement)}


def _catches_import_error(handler):
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(_last_name(t) in IMPORT_ERRORS for t in types)


def _is_type_checking(test):
    return _last_name(test) == "TYPE_CHECKING"


def _is_main_guard(test):
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__")


def _statement_bindings(node):
    """Top-level names a statement binds (for reports and restored cells)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Import):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [alias.asname or alias.name for alias in node.names if alias.name != "*"]
    if isinstance(node, ast.Assign):
        return [name for target in node.targets for name in _target_names(target)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return _target_names(node.target)
    if isinstance(node, (ast.If, ast.Try)) or type(node).__name__ == "TryStar":
        nested = list(node.body) + list(node.orelse) + list(getattr(node, "finalbody", []))
        for handler in getattr(node, "handlers", []):
            nested += handler.body
        return [name for statement in nested for name in _statement_bindings(statement)]
    return []


# -- expressions -----------------------------------------------------------------------------------
def _expression_problem(expr, scope):
    """None when evaluating ``expr`` at the top level only builds a value from what is
    defined; else "unavailable" (it needs a missing module), "undefined" or "work"."""
    local = _local_names(expr)
    worst = None
    for node in _walk_evaluated(expr):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            kind = "local" if node.id in local else scope.kind(node.id)
            if kind == "unavailable":
                return "unavailable"
            if kind is None:
                worst = "undefined"
        elif isinstance(node, ast.Call):
            if not _pure_call(node.func, scope, local):
                worst = worst or "work"
        elif isinstance(node, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            worst = worst or "work"
    return worst


def _walk_evaluated(expr):
    """The nodes of ``expr`` that run now: a lambda's body runs later (its defaults now)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Lambda):
            stack.extend(node.args.defaults + [d for d in node.args.kw_defaults if d is not None])
            continue
        stack.extend(ast.iter_child_nodes(node))


def _local_names(expr):
    """Names bound inside the expression (comprehension variables, lambda parameters)."""
    local = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.comprehension):
            local |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Lambda):
            args = node.args
            local |= {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return local


def _pure_call(func, scope, local):
    if isinstance(func, ast.Name):
        kind = "local" if func.id in local else scope.kind(func.id)
        if kind == "builtin":
            return func.id in PURE_BUILTINS
        return kind in ("module", "safe", "config") and func.id not in DENIED_CALLS
    chain, root = [], func
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        if isinstance(root, ast.Attribute):
            chain.append(root.attr)
        root = root.value
    if chain and (chain[0] in DENIED_CALLS or chain[0].startswith("set_")):
        return False
    if any(attribute in DENIED_NAMESPACES for attribute in chain):
        return False
    if isinstance(root, ast.Name):
        kind = "local" if root.id in local else scope.kind(root.id)
        if kind == "builtin":
            return root.id in PURE_BUILTINS
        return kind in ("module", "safe", "config", "local")
    return not isinstance(root, ast.Lambda)  # a literal, a call's result, ...: checked itself


def _refers_to_code(expr, scope):
    """Whether a value refers to the student's own functions, classes or foreign modules:
    such a value is never called at the top level."""
    return any(isinstance(node, ast.Name) and scope.kind(node.id) in ("student", "foreign")
               for node in ast.walk(expr))


# -- the chunk's text -------------------------------------------------------------------------------
def _segment(node, lines, start, alone, blanks, future_annotations):
    """The statement's text on its own lines (so that tracebacks point at the student's
    lines); blanked statements become ``pass``; under ``from __future__ import annotations``
    the annotations become strings, as Python would leave them unevaluated."""
    edits = [(b.lineno, b.col_offset, b.end_lineno, b.end_col_offset, "pass") for b in blanks]
    if future_annotations:
        edits += [(a.lineno, a.col_offset, a.end_lineno, a.end_col_offset, None)
                  for a in _annotations(node)
                  if not any(_inside(a, b) for b in blanks)]
    if alone and not edits:
        return "\n".join(lines[start - 1:node.end_lineno])
    if alone:
        text = _apply_edits(lines, start, node.end_lineno, edits)
        if text is not None:
            return text
    return ast.unparse(_rewritten(node, blanks, future_annotations))


def _inside(inner, outer):
    return (inner.lineno, inner.col_offset) >= (outer.lineno, outer.col_offset) and (
        inner.end_lineno, inner.end_col_offset) <= (outer.end_lineno, outer.end_col_offset)


def _annotations(node):
    """The annotations Python leaves unevaluated under ``from __future__ import annotations``;
    a dataclass's fields keep theirs (with string annotations ``dataclasses`` looks the class's
    module up in ``sys.modules``, which the grading worker's namespace is not)."""
    found, config_fields = [], set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.ClassDef) and _is_dataclass(sub):
            config_fields |= {id(item) for item in sub.body if isinstance(item, ast.AnnAssign)}
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = sub.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    found.append(arg.annotation)
            if sub.returns is not None:
                found.append(sub.returns)
        elif isinstance(sub, ast.AnnAssign) and id(sub) not in config_fields:
            found.append(sub.annotation)
    return found


def _char_column(line, byte_offset):
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def _apply_edits(lines, start, end, edits):
    """Apply (line, col, end line, end col, text) edits to lines[start..end], last first,
    keeping the number of lines; None when the result no longer parses."""
    part = list(lines[start - 1:end])
    for l1, c1, l2, c2, replacement in sorted(edits, reverse=True):
        first, last = part[l1 - start], part[l2 - start]
        c1, c2 = _char_column(first, c1), _char_column(last, c2)
        if replacement is None:  # an annotation: its text as a string
            original = "\n".join([first[c1:]] + part[l1 - start + 1:l2 - start] + [last[:c2]]) \
                if l1 != l2 else first[c1:c2]
            replacement = repr(" ".join(original.split()))
        if l1 == l2:
            part[l1 - start] = first[:c1] + replacement + first[c2:]
            continue
        rest = last[c2:]
        if rest.strip() and not rest.strip().startswith("#"):
            return None
        part[l1 - start] = first[:c1] + replacement
        for index in range(l1 - start + 1, l2 - start + 1):
            part[index] = ""
    text = "\n".join(part)
    try:
        parse_python(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return text


def _rewritten(node, blanks, future_annotations):
    """A copy of ``node`` with the blanked statements as ``pass`` and, under future
    annotations, string annotations (when the text cannot be edited in place)."""
    blank_ids = {id(b) for b in blanks}
    node = _replace_blanks(node, blank_ids)
    node = copy.deepcopy(node)
    if future_annotations:
        wanted = {id(a) for a in _annotations(node)}
        for sub in ast.walk(node):
            for name, value in ast.iter_fields(sub):
                if id(value) in wanted:
                    setattr(sub, name, ast.Constant(ast.unparse(value)))
    return node


def _replace_blanks(node, blank_ids):
    if not blank_ids:
        return node
    clone = copy.copy(node)
    for name, value in ast.iter_fields(node):
        if isinstance(value, list):
            setattr(clone, name, [ast.Pass() if id(item) in blank_ids else
                                  _replace_blanks(item, blank_ids) if isinstance(item, ast.AST) else item
                                  for item in value])
        elif isinstance(value, ast.AST):
            setattr(clone, name, _replace_blanks(value, blank_ids))
    return clone


# -- stubs -----------------------------------------------------------------------------------------
# A class is graded through these methods: only they make it a stub when unfinished.
ENTRY_METHODS = ("__init__", "forward")


def _note_stubs(node, origin, loaded):
    """Record the stubs a kept statement defines: a graded name is a stub when its entry point
    still raises NotImplementedError; every unfinished function or method is a stub site, so
    that a call into an unfinished helper can be named."""
    if isinstance(node, ast.ClassDef):
        loaded.classes.add(node.name)
        entry = False
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                site = _stub_raise(item)
                if site is not None:
                    loaded.stub_sites[f"{origin}:{site}"] = f"{node.name}.{item.name}"
                    entry = entry or item.name in ENTRY_METHODS
        (loaded.stubs.add if entry else loaded.stubs.discard)(node.name)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        site = _stub_raise(node)
        if site is not None:
            loaded.stub_sites[f"{origin}:{site}"] = node.name
        (loaded.stubs.add if site is not None else loaded.stubs.discard)(node.name)
    elif isinstance(node, ast.Assign):  # Class.forward = a_function: no longer the stub's
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.attr in ENTRY_METHODS:
                loaded.stubs.discard(target.value.id)


def _stub_raise(node):
    """The line of the released assignment stub in a function's body, if it is one: a top-level
    ``raise NotImplementedError`` that every call reaches, i.e. no statement before it can
    return, raise or yield. A function that returns on every case it handles and raises
    NotImplementedError for the rest (``if mask.dtype == torch.bool: return ...`` then ``raise
    NotImplementedError("unsupported mask")``) is finished code. Decided from the source, not
    by running it."""
    for statement in node.body:
        if isinstance(statement, ast.Raise) and statement.exc is not None:
            raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
            if isinstance(raised, ast.Name) and raised.id == "NotImplementedError":
                return statement.lineno
        if _may_leave(statement):
            return None
    return None


def _may_leave(statement):
    """Whether a statement can end its function's call (a return, raise or yield in it, not
    counting those of functions, lambdas and classes it defines)."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    pending = [] if isinstance(statement, scopes) else [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom)):
            return True
        pending.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, scopes))
    return False
