"""The hidden autograder of the Transformer course (see README.md)."""

import contextlib
import gc
import sys

# nbformat validates notebooks with jsonschema, which at import compiles the grammars of the
# optional rfc3987_syntax package (about 2 s of CPU per process, more than importing torch) for
# the "iri" string formats that no notebook schema uses. Marking it absent makes jsonschema skip
# those formats; every process of the kit (CLI, nbgrader plugin, workers' parent) imports this first.
sys.modules.setdefault("rfc3987_syntax", None)
# Likewise isoduration (the "duration" format; it imports arrow and dateutil): ~40 ms of the
# grader's start-up, before it can fork its grading processes.
sys.modules.setdefault("isoduration", None)
# And the other optional format checkers only jsonschema imports (no notebook schema has a
# "format" keyword, and nbformat validates without a format checker): ~60 ms of every start.
for _format_checker in ("rfc3986_validator", "rfc3339_validator", "webcolors", "uri_template"):
    sys.modules.setdefault(_format_checker, None)
del _format_checker


@contextlib.contextmanager
def imports_uncollected():
    """Import torch and the grader without the garbage collector running meanwhile, then freeze
    what they made (``gc.freeze``): their hundreds of thousands of long-lived objects would
    otherwise be walked by each full collection their own imports trigger (~0.1-0.2 s of CPU
    in every cold ``autograder grade``) and by every later one. The few thousand objects the
    imports leave as garbage cycles are kept for the process's life (about a megabyte)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
