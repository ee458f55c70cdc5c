# One command each: `make lab`, `make test`, `make grade`. Each creates .venv/ and installs
# what is missing first, so a fresh machine needs only Python 3.11 and make.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
SANITIZE := tests/nbval_sanitize.cfg

.PHONY: lab test grade exercises expected bench clean

$(INSTALLED): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 (or run make PYTHON=/path/to/python3.11)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(INSTALLED)

## JupyterLab on the lessons; each notebook's first cell gives its kernel 8 CPU devices.
lab: $(INSTALLED)
	$(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks \
		$(if $(filter 0,$(shell id -u)),--allow-root)

## The whole test suite: grader unit tests, solutions vs hidden tests, stubs score zero,
## exercises/ in sync, every notebook executed, and nbval over the lessons.
test: $(INSTALLED)
	$(BIN)/ruff check .
	PYTHONWARNINGS=error::DeprecationWarning $(BIN)/python -m pytest tests notebooks \
		--nbval --nbval-sanitize-with $(SANITIZE) --nbval-current-env --durations=15

## Grade the example submissions shipped in examples/submissions and print the gradebook.
grade: $(INSTALLED)
	$(BIN)/python -m grader grade examples/submissions --out build/example-grades

## Regenerate exercises/ from solutions/ and the README exercise table from grader/course.py.
exercises: $(INSTALLED)
	$(BIN)/python -m grader generate

## Recompute the public tests' expected values from solutions/.
expected: $(INSTALLED)
	$(BIN)/python -m grader refresh-expected

## Grading speed, in seconds per submission and per exercise.
bench: $(INSTALLED)
	$(BIN)/python benchmarks/grading.py

clean:
	rm -rf $(VENV) build .pytest_cache
