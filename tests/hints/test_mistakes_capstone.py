"""The usual mistakes of lesson 11 (the capstone), each written as a student would: does
check() fail it with the hint of that mistake, and no other hint? And does a correct
function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import pytest
from mistakes import Mistakes, assert_hidden_hint, lesson_tests

from grader.hints import capstone as hints

mistake = Mistakes()


# --- correct functions ----------------------------------------------------------------------
def fsdp_gather_bytes(d_model, d_hidden, layers, data, model, remat, itemsize):
    per_weight = d_model * d_hidden * itemsize / (data * model)  # one device's block
    uses = 2 if remat else 1
    return layers * uses * 2 * per_weight * (data - 1)


CORRECT = {"fsdp_gather_bytes": fsdp_gather_bytes}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- fsdp_gather_bytes ----------------------------------------------------------------------
@mistake("fsdp_gather_bytes", hints.HINT_GATHER_REMAT)
def gathered_once_whatever_the_remat(d_model, d_hidden, layers, data, model, remat, itemsize):
    return layers * 2 * d_model * d_hidden * itemsize / (data * model) * (data - 1)


@mistake("fsdp_gather_bytes", hints.HINT_GATHER_REMAT)
def remat_read_the_wrong_way_round(d_model, d_hidden, layers, data, model, remat, itemsize):
    uses = 1 if remat else 2
    return layers * uses * 2 * d_model * d_hidden * itemsize / (data * model) * (data - 1)


@mistake("fsdp_gather_bytes", hints.HINT_GATHER_MODEL_BLOCK)
def the_model_split_forgotten(d_model, d_hidden, layers, data, model, remat, itemsize):
    uses = 2 if remat else 1
    return layers * uses * 2 * d_model * d_hidden * itemsize / data * (data - 1)


@mistake("fsdp_gather_bytes", hints.HINT_GATHER_RING)
def each_block_sent_once(d_model, d_hidden, layers, data, model, remat, itemsize):
    uses = 2 if remat else 1
    return layers * uses * 2 * d_model * d_hidden * itemsize / (data * model)


@mistake("fsdp_gather_bytes", hints.HINT_GATHER_RING)
def the_gathered_weight(d_model, d_hidden, layers, data, model, remat, itemsize):
    uses = 2 if remat else 1
    return layers * uses * 2 * d_model * d_hidden * itemsize / model


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "11_capstone")


@pytest.mark.parametrize("case_id, wrong, hint", [
    ("fsdp_gather_bytes:kept_on_four_by_two", remat_read_the_wrong_way_round,
     hints.HINT_GATHER_REMAT),
    ("fsdp_gather_bytes:rematerialised_on_two_by_two", the_model_split_forgotten,
     hints.HINT_GATHER_MODEL_BLOCK),
], ids=["remat_the_wrong_way_round", "model_split_forgotten"])
def test_the_graders_hidden_tests_give_their_hints(case_id, wrong, hint):
    """A prediction compared with what a compiled gradient gathers over 'data': does the
    grader's hidden test fail each mistake with its hint, and pass the correct function?"""
    assert_hidden_hint(case_id, wrong, hint, CORRECT)
