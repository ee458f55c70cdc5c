import sys
import warnings

print("x" * 100_000)
print("Traceback (most recent call last): fake", file=sys.stderr)
warnings.warn("deprecated!", DeprecationWarning, stacklevel=1)
warnings.simplefilter("error")  # the grader's probes must not turn warnings into failures
