# One command each: `make lab`, `make test`, `make grade`. Each creates .venv/ and installs what
# is missing first, exactly the versions in uv.lock, so a fresh machine needs only make and
# Python 3.11, 3.12 or 3.13.

#: The Pythons the course runs on, newest first: pyproject.toml's requires-python, said for
#: make (tests/test_environment.py checks that the two agree).
SUPPORTED := 3.13 3.12 3.11
#: The uv that installs from the lock, fetched into build/uv/ the first time (pyproject.toml's
#: dev extra pins the same version).
UV_VERSION := 0.13.8
UV := build/uv/bin/uv
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
SANITIZE := tests/nbval_sanitize.cfg
#: `make lab PORT=8890 IP=0.0.0.0 ARGS=...`: empty means JupyterLab's own default.
PORT ?=
IP ?=
ARGS ?=

.PHONY: lab test grade exercises expected lock python bench clean

# The Python .venv/ is built with, printed as a path: PYTHON if given (it must be a supported
# one), else the environment's own, else the first of python3.13, python3.12 and python3.11
# that runs. Anything else is one line on stderr and a failure.
comma := ,
space := $() $()
VERSIONS := $(subst $(space),$(comma) ,$(SUPPORTED))
define find_python
( if [ -n "$(PYTHON)" ]; then set -- "$(PYTHON)"; \
  else set -- $(BIN)/python $(SUPPORTED:%=python%); fi; \
  for candidate; do \
    found=$$("$$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2], sys._base_executable)' 2>/dev/null) || continue; \
    case " $(SUPPORTED) " in *" $${found%% *} "*) echo "$${found#* }"; exit 0;; esac; \
    [ -z "$(PYTHON)" ] || { echo "make: PYTHON=$(PYTHON) is Python $${found%% *}; the course runs on Python $(VERSIONS)" >&2; exit 1; }; \
  done; \
  if [ -n "$(PYTHON)" ]; then echo "make: PYTHON=$(PYTHON) does not run" >&2; \
  else echo "make: no Python $(VERSIONS) found: install one, or name it: make PYTHON=/path/to/python3.13" >&2; fi; \
  exit 1 )
endef

$(UV):
	@python=$$( $(find_python) ) && $$python -m venv build/uv \
	&& build/uv/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(INSTALLED): pyproject.toml uv.lock | $(UV)
	@python=$$( $(find_python) ) && echo "make: installing uv.lock into $(VENV)/ for $$python ($$($$python -V))" \
	&& UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --quiet --locked --extra dev --python "$$python"
	@touch $@

## Which Python `make` builds .venv/ with (and why not, if none will do).
python:
	@$(find_python)

## JupyterLab on the course's landing page, start_here.ipynb; every notebook's first cell gives
## its kernel 8 CPU devices. No browser is opened where there is no display.
lab: $(INSTALLED)
	@$(BIN)/python -m grader.lab $(if $(PORT),--port $(PORT)) $(if $(IP),--ip $(IP)) -- $(ARGS)

## The whole test suite: grader unit tests, solutions vs hidden tests, stubs score zero,
## exercises/ in sync, every notebook executed, and nbval over the lessons.
test: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest tests notebooks start_here.ipynb \
		--nbval --nbval-sanitize-with $(SANITIZE) --nbval-current-env --durations=15

## Grade the example submissions shipped in examples/submissions and print the gradebook.
grade: $(INSTALLED)
	$(BIN)/python -m grader grade examples/submissions --out build/example-grades

## Regenerate exercises/, start_here.ipynb's table and the README's from grader/course.py.
exercises: $(INSTALLED)
	$(BIN)/python -m grader generate

## Recompute the public tests' expected values from solutions/.
expected: $(INSTALLED)
	$(BIN)/python -m grader refresh-expected

## After changing the dependencies in pyproject.toml: lock them again, for every supported
## Python, and export the lock for the conda route (requirements.txt).
lock: | $(UV)
	$(UV) lock
	$(UV) export --quiet --frozen --no-hashes --no-emit-project --output-file requirements.txt

## Grading speed, in seconds per submission and per exercise.
bench: $(INSTALLED)
	$(BIN)/python benchmarks/grading.py

clean:
	rm -rf $(VENV) build .pytest_cache
