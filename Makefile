# Two entry points; each does its own setup (scripts/bootstrap.sh creates .venv on first use).
.PHONY: setup report test lab clean

INPUT ?= data/example_trials.jsonl
K ?= 1,2,3,4,5

setup:
	@bash scripts/bootstrap.sh

report: setup
	.venv/bin/agentstats report $(INPUT) --k $(K) --out reports/

test: setup
	.venv/bin/python -m pytest --nbval-lax -p no:cacheprovider

lab: setup
	.venv/bin/jupyter lab notebooks/

clean:
	rm -rf .venv reports/*.html reports/*.ipynb
