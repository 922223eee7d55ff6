"""How many grid nodes per side a grid model lays over its task's square: torch-free, for the methods' ``build``."""
from __future__ import annotations


def nodes_per_side(domain: tuple[float, float], spacing: float, multiple: int, model: str) -> int:
    """The nodes per side of a grid ``spacing`` apart over [low, high] (the width over the spacing, rounded); a
    ValueError when that is not a multiple of ``multiple`` (a Swin window must divide the grid) or not near a whole
    number (the grid would not span the square)."""
    width = float(domain[1] - domain[0])
    nodes = round(width / spacing)
    if nodes < 1 or abs(nodes * spacing - width) > 1e-6 * width:
        raise ValueError(f"{model}: spacing {spacing:g} does not divide the square's width {width:g} "
                         f"(domain {list(domain)}); choose a spacing that does")
    if nodes % multiple:
        raise ValueError(f"{model}: {nodes} nodes per side (width {width:g} / spacing {spacing:g}) is not a multiple "
                         f"of the Swin window {multiple}; choose a spacing or domain that gives one")
    return nodes
