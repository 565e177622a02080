#!/usr/bin/env bash
# Set up the kit on a fresh machine and grade the bundled examples.
#
#   bash scripts/setup.sh                 # venv + dependencies + built files + grade examples/submissions/
#   bash scripts/setup.sh --install-only  # venv + dependencies + built files only (what .ci/run uses)
#
# Creates .venv/ in the repository root with the machine's python3 (3.11 or newer),
# installs the pinned requirements.txt and this project (editable, --no-deps), and builds
# the files nbgrader releases that git does not hold (assignments/source/*/cek_mandiri.py), and
# compiles the kit's bytecode (autograder/, solutions/).
# Re-running reuses the venv and skips pip when requirements.txt, pyproject.toml and the
# repository path are unchanged since the last successful install.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

install_only=0
case "${1:-}" in
  "") ;;
  --install-only) install_only=1 ;;
  -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--install-only]" >&2; exit 2 ;;
esac

if [ ! -x "$PY" ]; then
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "setup: python3 >= 3.11 is needed, found $(python3 --version 2>&1)" >&2; exit 1; }
  echo "setup: creating $VENV with $(python3 --version 2>&1)"
  python3 -m venv "$VENV"
fi

stamp="$VENV/.kit-installed"
wanted=$(cat requirements.txt pyproject.toml <(echo "$ROOT") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ] && [ -x "$VENV/bin/autograder" ]; then
  echo "setup: $VENV is up to date"
else
  echo "setup: installing requirements.txt into $VENV (torch is pinned; this takes a minute)"
  rm -f "$stamp"
  "$PY" -m pip install --disable-pip-version-check -q -r requirements.txt
  "$PY" -m pip install --disable-pip-version-check -q --no-deps -e .
  echo "$wanted" > "$stamp"
fi

# The generated files nbgrader releases from assignments/source/ and git does not hold: each
# assignment's cek_mandiri.py (the students' self-check), built beside its notebook. The same
# build rewrites a committed notebook only where it is stale (after editing its text form).
echo "setup: building assignments/source/ (assignments/build_notebooks.py)"
"$PY" assignments/build_notebooks.py | sed 's/^/setup:   /'

# The kit's own bytecode. With PYTHONDONTWRITEBYTECODE=1 (set in many CI and container images)
# Python caches none, and every `autograder grade` compiles the grader's ~90 modules from source
# again: 0.3-0.9 s of CPU per cold start. Python still reads the .pyc files it finds (and
# recompiles, in memory, any whose source changed since). The zygote's copies of the sandbox
# scripts in its neutral tree (isolation.restart_in_neutral_tree) are compiled there, as before.
echo "setup: compiling the kit's bytecode (autograder/, solutions/)"
"$PY" -m compileall -q autograder solutions

# Headless Chromium for the class report's browser test (tests/test_class_report.py), from
# Debian's packages; only when it is missing and apt-get can run. Without it that test is skipped.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "setup: installing chromium with apt-get (for the class report's browser test)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
    || echo "setup: could not install chromium; tests/test_class_report.py skips its browser test" >&2
fi

[ "$install_only" = 1 ] && exit 0

# Grade the bundled examples, one batch per assignment that has both examples and checks.
assignments=$("$PY" - <<'PY'
from pathlib import Path
from autograder.checks.registry import all_assignments
found = {p.parent.name for p in Path("examples/submissions").glob("*/*/*.ipynb")}
print(" ".join(a for a in all_assignments() if a in found))
PY
)
if [ -z "$assignments" ]; then
  echo "setup: no examples to grade" >&2
  exit 1
fi
for assignment in $assignments; do
  out="reports/examples/$assignment"
  echo
  echo "setup: grading examples/submissions/ for '$assignment' into $out/"
  "$VENV/bin/autograder" grade examples/submissions --assignment "$assignment" --out "$out"
done
echo
echo "setup: done. Reports are in reports/examples/<assignment>/ (open report.html; each file is"
echo "described in docs/reports.md). Run the tests with:"
echo "  .venv/bin/python -m pytest -q"
