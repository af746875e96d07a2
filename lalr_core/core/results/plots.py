"""Plots shared by chapters: the thesis's Tufte box plot (listing B.1, fig 1.2), used for figs 5.10,
5.11, I.1 and I.2.
"""

from __future__ import annotations

import numpy as np


# ----------------------------------------------------------------------------- Tufte box plot
def bplot(ax, pos: float, data, offset: float = 0, s: float = 1, **plot_kwargs):
    """Tufte box plot of ``data`` at x = ``pos + offset`` (seed 004 listing B.1, Fig 1.2).

    Draws a whisker from the minimum to the first quartile and one from the third
    quartile to the maximum (no box; the gap between them is the inter-quartile range),
    and a dot at the median. Quartiles are numpy's default (linear) percentiles.

    Args:
        ax: matplotlib ``Axes``.
        pos: x position.
        data: array-like of finite numbers, any shape (flattened).
        offset: added to ``pos`` (to put several series side by side).
        s: size: whisker line width ``s/2`` points, median dot area ``3*s`` points^2.
        **plot_kwargs: passed to both ``ax.plot`` calls and ``ax.scatter``; without
            ``color`` all three take the colour of the first line. ``label`` goes on
            the first whisker only, so a legend lists the series once.

    Returns:
        ``(lower_line, upper_line, median_dots)``: two ``Line2D`` and a ``PathCollection``.

    Raises:
        ValueError: if ``data`` is empty or contains non-finite values.
    """
    x = np.asarray(data, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("bplot: data is empty")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"bplot: data has {int(np.sum(~np.isfinite(x)))} non-finite values")
    return bplot_stats(ax, pos, np.percentile(x, [0, 25, 50, 75, 100]), offset, s, **plot_kwargs)


def bplot_stats(ax, pos: float, five, offset: float = 0, s: float = 1, **plot_kwargs):
    """`bplot` from a precomputed five-number summary ``(min, q1, median, q3, max)``.

    For probes that keep only the summary per training batch (figs 5.10, 5.11, I.1, I.2).
    """
    lo, q1, med, q3, hi = (float(v) for v in five)
    xpos = pos + offset
    kwargs = dict(plot_kwargs)
    label = kwargs.pop("label", None)
    (lower,) = ax.plot([xpos, xpos], [lo, q1], linewidth=s / 2, label=label, **kwargs)
    kwargs.setdefault("color", lower.get_color())
    (upper,) = ax.plot([xpos, xpos], [q3, hi], linewidth=s / 2, **kwargs)
    dots = ax.scatter([xpos], [med], s=s * 3, **kwargs)
    return lower, upper, dots
