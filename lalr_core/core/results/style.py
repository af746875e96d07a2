"""The house plotting style every chapter's figures share (matplotlib rc settings).
"""

from __future__ import annotations

import matplotlib as mpl

_TAB10 = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # matplotlib's default cycle: C0 (blue) = baseline, C1 (orange) = ours (the thesis's colours)


# ----------------------------------------------------------------------------- style
def style_rc() -> dict:
    """The house rcParams: no top/right spines (the thesis's style), readable sizes, 150 dpi."""
    return {
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": mpl.cycler(color=list(_TAB10)),
        "axes.grid": False,
        "axes.titlesize": 11,
        "axes.labelsize": 10,
        "font.size": 10,
        "xtick.labelsize": 9,
        "ytick.labelsize": 9,
        "legend.fontsize": 9,
        "legend.frameon": False,
        "lines.linewidth": 1.5,
        "figure.figsize": (5.0, 3.5),  # inches
        "figure.dpi": 150,
        "savefig.dpi": 150,
        "savefig.bbox": "tight",
        "pdf.fonttype": 42,  # embed TrueType: text stays editable in the PDF
        "image.cmap": "viridis",
    }


def set_style() -> None:
    """Apply :func:`style_rc` to the global rcParams (call once per notebook)."""
    mpl.rcParams.update(style_rc())


def house_style():
    """Context manager applying :func:`style_rc` only inside a ``with`` block."""
    return mpl.rc_context(style_rc())
