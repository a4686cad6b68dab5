"""Self-play acting: which move a game plays, given the search's policy target.

`TemperatureSchedule` lives in `turbozero.search.acting` (with `act` and `random_argmax`, the
one definition of acting: docs/search.md, "Formulas, once"); it is re-exported here because
stored run directories name it `turbozero.training.acting:TemperatureSchedule`.

As in AlphaZero self-play (docs/training.md): for a game's first T moves the move is sampled
from the visit distribution at temperature tau, afterwards the most visited move is played. The
policy target written to replay is the visit distribution itself in both phases; only acting
changes.
"""

from __future__ import annotations

from turbozero.search.acting import TemperatureSchedule

__all__ = ["TemperatureSchedule"]
