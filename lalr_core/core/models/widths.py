"""The one rule that scales a model's hidden widths by ``width``."""

from __future__ import annotations


def scaled_channels(channels: int, width: float) -> int:
    """``channels * width`` rounded: every model's hidden widths.

    Raises:
        ValueError: the layer would round to no channel at all (``channels * width < 0.5``):
            clamping it to one channel would silently train another net.

    Example:
        >>> scaled_channels(16, 0.25), scaled_channels(3, 0.5)
        (4, 2)
    """
    if round(channels * width) < 1:
        raise ValueError(f"width {width:g} leaves a layer of {channels} channels with "
                         f"{channels * width:.3g} channels, which rounds to none; use width > "
                         f"{0.5 / channels:g}")
    return round(channels * width)
