# Two entry points for users (report, test); each does its own setup (scripts/bootstrap.sh creates .venv on first use).
.PHONY: setup report test test-slow test-all lint lab clean demo-capture demo-loop

INPUT ?= data/example_trials.jsonl
# K: the report's k values ('1,2,4', '1..8'); empty: the one default rule (agentstats.intervals.default_ks)
K ?=
PYTEST = PYTHONPATH=tests .venv/bin/python -m pytest -p pytest_startup --nbval-lax -p no:cacheprovider

# Python may write bytecode (and pytest its rewritten test modules) even where the environment says not to: without
# it every worker, kernel and CLI subprocess of the suite compiles the package and the tests again (about 15 s each).
unexport PYTHONDONTWRITEBYTECODE

setup:
	@bash scripts/bootstrap.sh

report: setup
	.venv/bin/agentstats report $(INPUT) $(if $(K),--k $(K)) --out-dir reports/

# The everyday suite (unit tests and the report notebook under nbval), about two minutes on 2 idle cores:
# two workers, each file on one worker (nbval runs the notebook's cells in order in one kernel).
test: setup
	$(PYTEST) -m "not slow" -n 2 --dist loadfile

# Real PyMC fits and end-to-end reports (marked `slow`); CI runs them too (.ci/run). Two workers as well: most of
# their time is single-threaded compilation (numba, C), so the second core halves the wall time.
test-slow: setup
	$(PYTEST) -m slow -n 2 --dist loadfile --durations=15

test-all: setup
	$(PYTEST)

lint: setup
	.venv/bin/ruff check .
	.venv/bin/mypy

# The README's live-capture example against a local OpenAI-compatible stand-in (no network, no key).
demo-capture: setup
	.venv/bin/python scripts/demo_capture.py --loopback

# The evaluator-optimizer loop on data/example_loop against a local stand-in (agent, judge, optimizer; no key).
# Ends undecided (exit 75), as the example is built to; the report and store land in reports/demo-loop/.
demo-loop: setup
	.venv/bin/python scripts/demo_loop.py --loopback || [ $$? -eq 75 ]

lab: setup
	.venv/bin/jupyter lab notebooks/ $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

clean:
	rm -rf .venv reports/*.html reports/*.ipynb
