"""Distributed JAX course: exercise checks for students and a grader for instructors.

In a notebook: ``from grader import check`` then ``check(your_function)``.
On the command line: ``python -m grader --help``.
"""

from grader.check import check

__all__ = ["check"]
