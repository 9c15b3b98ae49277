"""pass@k the way the papers compute it, with a bootstrap interval over tasks.

``pass_at_k(n, c, k) = 1 − C(n−c, k) / C(n, k)``: the probability that at least one of k samples
drawn without replacement from the n generated (c of them correct) is correct — the unbiased
estimator of Chen et al. (2021, *Evaluating Large Language Models Trained on Code*), computed as a
running product so large n does not overflow. A task with fewer than k scored samples has no
estimate for that k (it is left out of the mean, and counted).
"""

from __future__ import annotations

import math
import random


def pass_at_k(n: int, c: int, k: int) -> float:
    """Raises ValueError unless 0 <= c <= n and 1 <= k <= n."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(counts: list[tuple[int, int]], k: int) -> float | None:
    """The mean over tasks (n, c) with n >= k; None when there is none."""
    values = [pass_at_k(n, c, k) for n, c in counts if n >= k]
    return sum(values) / len(values) if values else None


def bootstrap_ci(counts: list[tuple[int, int]], k: int, *, resamples: int = 1000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float] | None:
    """Percentile interval of the mean pass@k over tasks resampled with replacement."""
    values = [pass_at_k(n, c, k) for n, c in counts if n >= k]
    if not values:
        return None
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(resamples))
    lo = means[int((1 - level) / 2 * (resamples - 1))]
    hi = means[int((1 + level) / 2 * (resamples - 1))]
    return lo, hi
