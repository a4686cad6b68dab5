"""Search and acting settings that several games' presets share (each game's presets are in
`turbozero/games/<game>/presets.py`)."""

from __future__ import annotations

from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.roots import PUCTRoot
from turbozero.search.selection import SpecPUCT
from turbozero.training.acting import TemperatureSchedule

# Self-play acting schedules (docs/training.md: tau = 1 for the first 30 moves, then
# argmax); backgammon's own schedule is in its presets.
OPENING_ACTING = TemperatureSchedule(temperature=1.0, moves=30)


def kernel_search(num_simulations: int) -> TreeSearchConfig:
    """The library's tree kernel (docs/search.md) with the settings mctx had here: dynamic FPU
    with fpu_base 0 (measured best at few simulations, docs/search.md "Selection Q") and
    Dirichlet(0.3) noise on 25% of the root prior, over the legal moves."""
    return TreeSearchConfig(num_simulations=num_simulations, selection=SpecPUCT(fpu_base=0.0),
                            root=PUCTRoot(dirichlet_alpha=0.3, dirichlet_fraction=0.25))
