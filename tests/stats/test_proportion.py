"""The Wilson interval against scipy's (an independent implementation) and at the edges."""
import numpy as np
import pytest
from scipy.stats import binomtest

from qlb.stats.proportion import wilson


@pytest.mark.parametrize("k,n", [(0, 10), (1, 10), (913, 1440), (1440, 1440), (7, 288), (144, 288)])
def test_wilson_matches_scipy(k, n):
    lo, hi = wilson(k, n)
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert float(lo) == pytest.approx(ref.low, abs=1e-12)
    assert float(hi) == pytest.approx(ref.high, abs=1e-12)


def test_wilson_on_arrays_and_an_empty_group():
    lo, hi = wilson(np.array([5, 0]), np.array([10, 0]))
    assert lo[0] < 0.5 < hi[0]
    assert np.isnan(lo[1]) and np.isnan(hi[1])
