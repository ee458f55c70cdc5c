"""Lesson 7's real-chip roofline: the two figures, the ridge they give, and where they come
from on a machine without an accelerator."""

import pytest

from grader.lessons import roofline


def test_the_ridge_is_the_matmul_rate_over_the_memory_bandwidth():
    """Is the ridge FLOP/s over bytes/s, and does the line give all three with the source?"""
    chip = roofline.Chip("a chip", 400e12, 2e12, "stated")
    assert chip.ridge == 200
    assert str(chip) == ("a chip (stated): bf16 matmul 400 TFLOP/s, memory 2.00 TB/s, "
                         "ridge 200 FLOP/byte")


def test_without_an_accelerator_the_h200_figures_are_shown_as_measured_elsewhere(monkeypatch):
    """On this CPU-only machine, does measure() give the stored H200 figures, marked as
    measured on another machine, instead of timing the CPU?"""
    monkeypatch.delenv("COURSE_ACCELERATORS", raising=False)
    chip = roofline.measure()
    assert chip is roofline.H200
    assert "another machine" in chip.source


@pytest.mark.parametrize("size", [128, 256])
def test_measuring_here_times_a_matmul_and_an_elementwise_op(size):
    """Does measure_here() (run on the accelerator where there is one) give positive rates for
    the device it ran on, here the CPU at toy sizes?"""
    chip = roofline.measure_here(size=size, elements=2**14, repeats=2)
    assert chip.name == "cpu" and chip.matmul_flops > 0 and chip.bandwidth > 0
    assert chip.source.startswith("measured here")


def test_a_measurement_that_fails_falls_back_to_the_stored_figures_and_says_why(monkeypatch):
    """An accelerator found, but its measuring process fails (out of memory, say): does the
    lesson get the H200 figures with the reason, instead of an error?"""
    found = '{"platform": "gpu", "count": 1, "kind": "Tesla T4", "problem": ""}'
    monkeypatch.setenv("COURSE_ACCELERATORS", found)
    monkeypatch.setattr(roofline.sys, "executable", "/bin/false")
    chip = roofline.measure()
    assert (chip.matmul_flops, chip.bandwidth) == (roofline.H200.matmul_flops,
                                                   roofline.H200.bandwidth)
    assert chip.source.startswith(roofline.H200.source + ": measuring here failed (")
