"""Dynamic first-play urgency (FPU): the selection Q of a child that has no visit yet.

The one definition of the formula (docs/search.md, "Formulas, once"): the tree kernel's
`SpecPUCT`, the mctx family's `DynamicFPU` and the graph search use it, and the C++ tree
(cpp/search.hpp) computes the same number (tests/test_formulas_once.py).
"""

from __future__ import annotations

# The library's one default. 0: an unvisited child scores its parent's value, so the exploration
# term alone orders the untried moves. A positive base makes low-prior moves look worse than the
# parent until visited; with 8-64 simulations and flat priors it kept every simulation on the
# first child (docs/search.md, "Selection Q", measured on Paco Sako and backgammon).
FPU_BASE: float = 0.0


def first_play_urgency(parent_value, prior, fpu_base=FPU_BASE):
    """`parent_value - fpu_base * (1 - prior)`: the Q an unvisited child is selected with.

    parent_value: the mover's mean value of the node (broadcasts against `prior`, e.g.
    float32[] against float32[K], or [B, 1] against [B, K]); prior: the children's priors.
    Works on JAX and NumPy arrays and Python floats alike."""
    return parent_value - fpu_base * (1.0 - prior)
