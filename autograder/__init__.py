"""The hidden autograder of the Transformer course (see README.md)."""

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
