"""The seal on a worker's measuring code: each kind of change is put back and named."""

from __future__ import annotations

import builtins
import json
import sys
from types import SimpleNamespace

import jax
import pytest

import grader.framework.cases
import grader.framework.placement
import grader.framework.probes
import grader.workers.seal
from grader.workers.seal import Seal


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
    code = grader.framework.placement.layout.__code__
    grader.framework.placement.layout.__code__ = (lambda x: {}).__code__
    assert seal.restore() == ["grader.framework.placement.layout.__code__"]
    assert grader.framework.placement.layout.__code__ is code


def test_a_module_replaced_in_sys_modules_is_put_back(seal):
    real = sys.modules["grader.framework.plain"]
    sys.modules["grader.framework.plain"] = json
    assert seal.restore() == ["sys.modules['grader.framework.plain']"]
    assert sys.modules["grader.framework.plain"] is real


def test_a_name_added_to_the_grader_is_removed_but_imports_stay(seal):
    grader.framework.probes.isinstance = lambda *args: True  # would shadow the built-in there
    grader.framework.probes.some_module = json
    assert seal.restore() == ["grader.framework.probes.isinstance"]
    assert "isinstance" not in vars(grader.framework.probes)
    del grader.framework.probes.some_module


def test_a_deleted_function_comes_back(seal):
    real = grader.framework.placement.layout
    del grader.framework.placement.layout
    assert seal.restore() == ["grader.framework.placement.layout"]
    assert grader.framework.placement.layout is real


def test_data_of_a_sealed_module_is_put_back(seal):
    """json.dumps writes with json._default_encoder: replacing that object is undone too."""
    real = json._default_encoder
    json._default_encoder = json.JSONEncoder(indent=4)
    assert seal.restore() == ["json._default_encoder"]
    assert json._default_encoder is real


def test_changed_defaults_are_put_back(seal):
    real = grader.framework.cases.changes.__defaults__
    grader.framework.cases.changes.__defaults__ = (0,)
    assert seal.restore() == ["grader.framework.cases.changes.__defaults__"]
    assert grader.framework.cases.changes.__defaults__ is real


def test_sealed_objects_and_tables_are_put_back():
    table = {"a": 1}
    item = SimpleNamespace(probe=len)
    sealed = Seal([("table", table), ("case", item)])
    table["a"] = 2
    item.probe = str
    item.measure = print  # a name added to a sealed object, say a method shadowed on it
    assert sealed.restore() == ["table['a']", "case['probe']", "case.measure"]
    assert table == {"a": 1} and item.probe is len and not hasattr(item, "measure")


def test_restoring_needs_nothing_a_submission_can_rebind(seal):
    """With the seal's module globals and the built-ins it would use replaced, does restoring
    still put everything back, those included?"""
    real_types, real_isinstance = grader.workers.seal.types, builtins.isinstance
    grader.workers.seal.types = SimpleNamespace(ModuleType=object, MappingProxyType=object)
    grader.workers.seal._MISSING = None
    builtins.isinstance = lambda *args: True
    json.dumps = lambda *args, **kwargs: "{}"
    changed = seal.restore()
    assert builtins.isinstance is real_isinstance and grader.workers.seal.types is real_types
    assert sorted(changed) == ["builtins.isinstance", "grader.workers.seal._MISSING",
                               "grader.workers.seal.types", "json.dumps"]
