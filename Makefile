# One command each: `make lab`, `make test`, `make grade`. Each creates .venv/ and installs what
# is missing first, exactly the versions in uv.lock, so a fresh machine needs only make and
# Python 3.11, 3.12 or 3.13.

EXTRAS := --extra grade --extra test
include setup.mk

SANITIZE := tests/nbval_sanitize.cfg

.PHONY: test grade exercises exercise lessons expected lock bench bench-nbgrader container clean

## The whole test suite: grader unit tests, solutions vs hidden tests, stubs score zero,
## exercises/ in sync, every notebook executed, and nbval over the lessons. TEST_JOBS tests at
## a time (pytest-xdist), a file's tests in one process, in order: `make test TEST_JOBS=1`
## runs them one by one.
TEST_JOBS ?= 2
test: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest tests notebooks start_here.ipynb -n $(TEST_JOBS) --dist loadfile \
		--nbval --nbval-sanitize-with $(SANITIZE) --nbval-current-env --durations=40

## Grade the example submissions shipped in examples/submissions (lesson 3's assignment) and
## print the gradebook.
grade: $(INSTALLED)
	$(BIN)/python -m grader grade examples/submissions --out build/example-grades --assignment 03_collectives

## Regenerate exercises/, start_here.ipynb's table and docs/students.md's from grader/course.py.
exercises: $(INSTALLED)
	$(BIN)/python -m grader generate

## Run lessons top to bottom and save them executed, after changing them:
## `make lessons` (all ten) or `make lessons NOTEBOOKS=notebooks/07_cost.ipynb`.
NOTEBOOKS ?= $(wildcard notebooks/*.ipynb)
lessons: $(INSTALLED)
	$(BIN)/python -m grader.authoring.execute $(NOTEBOOKS)

## Recompute the public tests' expected values from solutions/.
expected: $(INSTALLED)
	$(BIN)/python -m grader refresh-expected

## One exercise, after adding or changing it: `make exercise NAME=device_keys` writes the
## student copies, stores its public tests' expected values, validates it alone (its solution,
## its stub, its tests, its stored values) and runs its hint and mistake tests, with the rules
## every exercise keeps (two mistakes each, every hint given to one).
exercise: $(INSTALLED)
	@[ -n "$(NAME)" ] || { echo "make exercise needs NAME=, an exercise of grader/course.py" >&2; exit 2; }
	$(BIN)/python -m grader generate
	$(BIN)/python -m grader refresh-expected $(NAME)
	$(BIN)/python -m grader validate $(NAME)
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/hints \
		-k "$(NAME) or two_mistakes or test_hints"

## After changing the dependencies in pyproject.toml: lock them again, for every supported
## Python, and export the lock for the conda route (requirements.txt).
lock: | $(UV)
	$(UV) lock
	$(UV) export --quiet --frozen --no-hashes --no-emit-project --output-file requirements.txt

## Grading speed, in seconds per submission and per exercise.
bench: $(INSTALLED)
	$(BIN)/python benchmarks/grading.py

## The same class graded by nbgrader and by this grader, side by side: adds the lock's nbgrader
## extra to .venv/ (make's next install of the lock takes it out). ARGS="--students 6 --ours PY".
bench-nbgrader: $(INSTALLED)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --quiet --locked --inexact --compile-bytecode \
		$(EXTRAS) --extra nbgrader
	$(BIN)/python benchmarks/against_nbgrader.py $(ARGS)

## The grader in a container image with its sandbox inside (Containerfile), for machines
## without bubblewrap; podman or docker builds it.
CONTAINER ?= $(shell command -v podman || command -v docker)
container:
	@[ -n "$(CONTAINER)" ] || { echo "make: container needs podman or docker" >&2; exit 1; }
	$(CONTAINER) build --tag jax-course-grader --file Containerfile .

clean:
	rm -rf $(VENV) build .pytest_cache
