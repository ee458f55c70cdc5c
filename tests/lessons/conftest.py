"""Fixtures of the lesson helpers' tests."""

import pytest
from figures import ring_mesh


@pytest.fixture(scope="module")
def ring():
    """A ring of figures.N devices, axis "i"."""
    return ring_mesh()
