"""Statistics the bench scripts share (imported by their inline Python)."""
import math


def median_ci(v):
    """Distribution-free CI of the median of sorted v: the j-th and (m+1-j)-th order
    statistics, with j the largest such that P(Binomial(m, 1/2) < j) <= 2.5 %.
    Returns (low, high, coverage), or None when there are too few values."""
    cdf, j = 0.0, 0
    for k in range(len(v) + 1):
        p = math.comb(len(v), k) / 2 ** len(v)
        if cdf + p > 0.025:
            break
        cdf += p
        j = k + 1
    if j < 1:
        return None
    return v[j - 1], v[len(v) - j], 1 - 2 * cdf
