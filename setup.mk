# How the course is installed and opened, shared by the course's Makefile and the one of a
# student bundle (`python -m grader release`): find a supported Python, fetch uv, install
# exactly uv.lock into $(VENV)/, open JupyterLab. Set EXTRAS before including this file to
# install extras of pyproject.toml (the course installs its grade and test extras; a student
# bundle none: what a kernel needs).

#: The Pythons the course runs on, newest first: pyproject.toml's requires-python, said for
#: make (tests/test_environment.py checks that the two agree).
SUPPORTED := 3.13 3.12 3.11
#: The uv that installs from the lock, fetched into build/uv/ the first time (pyproject.toml's
#: test extra pins the same version).
UV_VERSION := 0.13.8
UV := build/uv/bin/uv
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
#: `make lab PORT=8890 IP=0.0.0.0 ARGS=...`: empty means JupyterLab's own default.
PORT ?=
IP ?=
ARGS ?=
#: What `make lab` tells grader.lab besides (a student bundle: --match-kernel).
LAB_FLAGS ?=

#: What `uv sync` installs besides the dependencies (e.g. --extra grade).
EXTRAS ?=

.DEFAULT_GOAL := lab
.PHONY: lab python

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
	&& PYTHONWARNINGS=ignore build/uv/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# Installed with its bytecode: the grader's workers run read-only and a kernel may be told not
# to write any (PYTHONDONTWRITEBYTECODE), so whatever is not compiled here is compiled again by
# every process that imports it (about 1.2 s of CPU for JAX and the grader's worker).
$(INSTALLED): pyproject.toml uv.lock setup.mk | $(UV)
	@python=$$( $(find_python) ) && echo "make: installing uv.lock into $(VENV)/ for $$python ($$($$python -V))" \
	&& UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --quiet --locked \
		--compile-bytecode $(EXTRAS) --python "$$python"
	@touch $@

## Which Python `make` builds .venv/ with (and why not, if none will do).
python:
	@$(find_python)

## JupyterLab on the course's landing page, start_here.ipynb; every notebook's first cell gives
## its kernel 8 CPU devices. No browser is opened where there is no display.
lab: $(INSTALLED)
	@$(BIN)/python -m grader.lab $(LAB_FLAGS) $(if $(PORT),--port $(PORT)) $(if $(IP),--ip $(IP)) \
		-- $(ARGS)
