"""The test framework that ``check()`` in a notebook and the grader share.

- :mod:`~grader.framework.cases`: the registry of tests (``@case``), public and hidden;
- :mod:`~grader.framework.probes`: what a test measures of a function and of its program;
- :mod:`~grader.framework.judge`: how a measurement is judged against the reference's;
- :mod:`~grader.framework.hlo`: the one reader of program text (compiled HLO, StableHLO);
- :mod:`~grader.framework.placement`: the one description of where an array lives;
- :mod:`~grader.framework.footprint`: the bytes a program holds and receives per device;
- :mod:`~grader.framework.plain`, :mod:`~grader.framework.results`,
  :mod:`~grader.framework.expected`: plain data, results, the stored expected values.
"""
