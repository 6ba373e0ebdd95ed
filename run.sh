#!/usr/bin/env bash
# Set up a virtual environment with mlcir installed, then run the demo or the test suite.
#   bash run.sh demo   # the main job: import, compile, tune briefly, run (see README)
#   bash run.sh test   # the whole test suite: ruff, pytest and lit
# MLCIR_VENV chooses the environment's folder (default .venv); it is created when missing.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${MLCIR_VENV:-.venv}"
PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
fi
"$PY" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$PY" -m pip install --quiet --disable-pip-version-check -e ".[test]"

what="${1:-}"
shift || true
case "$what" in
    demo)
        exec "$PY" examples/demo.py "$@"
        ;;
    test)
        status=0
        # The linter first (pyproject.toml, [tool.ruff]); its failure fails the suite, but the
        # tests still run.
        "$VENV/bin/ruff" check . || status=$?
        # One worker per core, each taking whole test files (their module fixtures build once);
        # MLCIR_TEST_WORKERS=0 runs in this process.
        "$PY" -m pytest tests -q -p no:cacheprovider -n "${MLCIR_TEST_WORKERS:-auto}" \
            --dist loadfile "$@" || status=$?
        # pytest exits 5 when it collected nothing: that is a failure here, not a pass.
        "$VENV/bin/lit" lit_tests -s || status=$?
        if [ "$status" -ne 0 ]; then
            echo "run.sh: the test suite failed (exit $status)" >&2
        fi
        exit "$status"
        ;;
    *)
        echo "usage: bash run.sh demo|test [args]" >&2
        exit 2
        ;;
esac
