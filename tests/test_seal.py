"""The seal on a worker's measuring code: each kind of change is put back and named."""

from __future__ import annotations

import json
import sys

import jax
import pytest

import grader.probes
from grader.seal import Seal


@pytest.fixture
def seal():
    made = Seal()
    yield made
    made.restore()  # whatever a failing test left changed


def test_nothing_changed_means_nothing_restored(seal):
    assert seal.restore() == []


def test_a_rebound_function_is_put_back(seal):
    real = json.dumps
    json.dumps = lambda *args, **kwargs: "{}"
    assert seal.restore() == ["json.dumps"]
    assert json.dumps is real


def test_a_method_of_a_class_is_put_back(seal):
    real = jax.stages.Compiled.as_text
    jax.stages.Compiled.as_text = lambda self: "all-reduce("
    assert seal.restore() == ["jax.stages.Compiled.as_text"]
    assert jax.stages.Compiled.as_text is real


def test_swapped_code_is_put_back(seal):
    code = grader.probes.compiled_hlo.__code__
    grader.probes.compiled_hlo.__code__ = (lambda fn, *args: "").__code__
    assert seal.restore() == ["grader.probes.compiled_hlo.__code__"]
    assert grader.probes.compiled_hlo.__code__ is code


def test_a_module_replaced_in_sys_modules_is_put_back(seal):
    real = sys.modules["grader.plain"]
    sys.modules["grader.plain"] = json
    assert seal.restore() == ["sys.modules['grader.plain']"]
    assert sys.modules["grader.plain"] is real


def test_a_name_added_to_the_grader_is_removed_but_imports_stay(seal):
    grader.probes.isinstance = lambda *args: True  # would shadow the built-in there
    grader.probes.some_module = json
    assert seal.restore() == ["grader.probes.isinstance"]
    assert "isinstance" not in vars(grader.probes)
    del grader.probes.some_module


def test_a_deleted_function_comes_back(seal):
    real = grader.probes.layout
    del grader.probes.layout
    assert seal.restore() == ["grader.probes.layout"]
    assert grader.probes.layout is real
