"""The window planner of clkit.dask against scipy.ndimage, in 1-D and without a device.

Chains of ``scipy.ndimage.correlate1d`` with integer weights on integer data are exact in
float64, so running the plan's windows through them must give the whole line's result
bit for bit: every mode, origins, halos longer than the line, chunks of one element.
"""

import numpy as np
import pytest
import scipy.ndimage as ndi

from clkit._engine.stencil import fold
from clkit.dask._plan import Pass, pieces, plan_axis, row_length

MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_fold_extends_as_scipy(mode, n):
    """A shift by d through scipy's own extension, for shifts up to 4 lengths away."""
    line = np.arange(n, dtype=float) + 1
    for d in range(-4 * n - 3, 4 * n + 4):
        weights = np.zeros(2 * abs(d) + 1)
        weights[abs(d) + d] = 1  # output[i] = line[i + d] (extended)
        want = ndi.correlate1d(line, weights, mode=mode, cval=0.0)
        index = fold(np.arange(n) + d, n, mode)
        got = np.where(index >= 0, line[np.maximum(index, 0)], 0.0)
        np.testing.assert_array_equal(got, want)


def _chain(line, steps):
    for weights, origin, mode, cval in steps:
        line = ndi.correlate1d(line, weights, mode=mode, cval=cval, origin=origin)
    return line


@pytest.mark.parametrize("seed", range(6))
def test_plans_give_the_whole_line(seed):
    rng = np.random.default_rng(seed)
    for _ in range(150):
        n = int(rng.integers(1, 25))
        steps, passes = [], []
        for _ in range(int(rng.integers(1, 4))):
            m = int(rng.integers(1, 12))
            origin = int(rng.integers(-(m // 2), (m - 1) // 2 + 1))
            mode = MODES[rng.integers(len(MODES))]
            steps.append((rng.integers(-3, 4, m).astype(float), origin, mode,
                          float(rng.integers(-5, 5))))
            # scipy's correlate reads m // 2 + origin before and the rest after
            passes.append(Pass(m // 2 + origin, m - 1 - m // 2 - origin, mode))
        line = rng.integers(-9, 9, n).astype(float)
        whole = _chain(line, steps)
        cuts = sorted(set(rng.integers(1, n, int(rng.integers(0, n))).tolist())) if n > 1 else []
        bounds = [0] + cuts + [n]
        for start, stop in zip(bounds[:-1], bounds[1:]):
            plan = plan_axis(n, start, stop, passes)
            window = line[plan.source]
            for step, index in zip(steps, plan.gathers):
                if index is not None:
                    window = window[index]
                window = _chain(window, [step])
            np.testing.assert_array_equal(window[plan.crop], whole[start:stop],
                                          err_msg=f"n={n} block={start}:{stop} {passes}")


def test_an_inner_block_reads_its_neighbours_only():
    plan = plan_axis(100, 40, 50, [Pass(3, 2, "wrap"), Pass(1, 1, "reflect")])
    np.testing.assert_array_equal(plan.source, np.arange(36, 53))
    assert plan.gathers == (None, None) and plan.crop == slice(4, 14)
    assert pieces(plan.source, (30, 10, 10, 50)) == [(0, 4, 1, 6), (4, 14, 2, 0),
                                                     (14, 17, 3, 0)]


def test_wrap_reads_the_other_end():
    plan = plan_axis(20, 0, 5, [Pass(2, 2, "wrap")])
    np.testing.assert_array_equal(plan.source, [18, 19, 0, 1, 2, 3, 4, 5, 6])


def test_an_edge_block_ends_its_window_at_the_edge():
    """The filter's own border mode extends it there (exact for multi-pass filters)."""
    plan = plan_axis(20, 0, 5, [Pass(2, 2, "constant")])
    np.testing.assert_array_equal(plan.source, np.arange(0, 7))
    assert plan.crop == slice(0, 5)


def test_row_length_whole_runs_of_32_off_multiples_of_1024():
    assert [row_length(w) for w in (100, 255, 256, 1046, 1056, 1024, 2048, 2070, 1000)] == \
        [100, 255, 256, 1056, 1056, 1056, 2080, 2080, 1056]


@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap", "constant"])
def test_a_widened_window_still_computes_its_block(mode):
    """The block's plan inside a window widened with its neighbours (after it, or before it
    at the end of the axis) gives the block exactly, as the plain plan does."""
    n = 1400
    steps = [(np.array([1.0, -2, 3, 1, -1, 2]), 0, mode, 2.0),       # reads 3 before, 2 after
             (np.array([2.0, 1, -1, 3, 1, -2]), -2, "wrap", 0.0)]    # 1 before, 4 after
    passes = [Pass(3, 2, mode), Pass(1, 4, "wrap")]
    line = np.random.default_rng(1).integers(-9, 9, n).astype(float)
    whole = _chain(line, steps)
    for start, stop in [(0, 700), (700, 1400), (300, 1000)]:
        plan = plan_axis(n, start, stop, passes, rows=True)
        assert len(plan.source) % 32 == 0
        window = line[plan.source]
        for step, index in zip(steps, plan.gathers):
            if index is not None:
                window = window[index]
            window = _chain(window, [step])
        np.testing.assert_array_equal(window[plan.crop], whole[start:stop])
