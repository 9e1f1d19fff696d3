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


def summarize_rates(label, a_runs, b_runs):
    """Lines comparing two sides' runs, each a (prefill, decode) tokens/s pair, run as
    interleaved pairs: per phase the median of paired ratios a/b with its interval, the
    ratio of the best runs (host noise only slows, so the best are the stable figure) and
    both medians."""
    import statistics
    lines = []
    for k, name in ((0, "prefill"), (1, "decode")):
        a = [x[k] for x in a_runs]
        b = [x[k] for x in b_runs]
        ratios = sorted(x / y for x, y in zip(a, b) if y > 0)
        ci = median_ci(ratios)
        ci_text = f"{100 * ci[2]:.1f} % CI {ci[0]:.4f} .. {ci[1]:.4f}" if ci else "too few pairs for an interval"
        lines.append(f"{name}: paired ratio {label}, median of {len(ratios)} pairs: {statistics.median(ratios):.4f}"
                     f"  ({ci_text}); ratio of best runs {max(a) / max(b):.4f};"
                     f" medians {statistics.median(a):.1f} vs {statistics.median(b):.1f} t/s")
    return lines


if __name__ == "__main__":
    # paired_stats.py rates LABEL N A1 .. AN B1 .. BN, each run "PREFILL DECODE" (t/s).
    import sys
    if len(sys.argv) < 4 or sys.argv[1] != "rates":
        sys.exit("usage: paired_stats.py rates LABEL N 'PP TG'... (N for side a, then N for side b)")
    n = int(sys.argv[3])
    runs = [tuple(map(float, v.split())) for v in sys.argv[4:4 + 2 * n]]
    print("\n".join(summarize_rates(sys.argv[2], runs[:n], runs[n:])))
