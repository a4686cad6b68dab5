"""Complete moves: what an env with multi-step turns offers a player that picks a whole move.

Some games split a turn into several micro-actions (backgammon moves one checker per action,
up to four per roll). A player in the TD-Gammon tradition does not search the micro-actions: it
lists every distinct position its whole turn can reach (the afterstates), values each and plays
the best. An env offers that list through `AfterstateEnv.afterstates`:

    moves = env.afterstates(state)             # one state; jax.vmap it over a batch
    moves.states     # [M, ...] the result of each complete move (the env's own states,
                     # observation None: `env.observe` the slots you value)
    moves.valid      # bool[M]  which of the M slots hold a move
    moves.actions    # int32[M, L] the micro-actions that reach each, padded with NO_ACTION

M is a static count (`env.max_afterstates`, or the `max_afterstates=` argument); `overflow` says
a state had more complete moves than M (the kept ones are still legal moves). The players of
`turbozero.search.afterstate` and the TD algorithm read nothing else of the game.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax

Array = jax.Array

NO_ACTION = -1  # pads `Afterstates.actions` after a move's last micro-action


class Afterstates(NamedTuple):
    """The complete moves of one state (leading axes added by vmap)."""

    # State [M, ...]: each move's result, as `env.step_deterministic` leaves it but without its
    # observation (None, as `env.transition` leaves it): most consumers value a few slots or
    # read boards, and observing all M slots was most of the listing's time (issue 43)
    states: Any
    valid: Array  # bool[M]: slot holds a distinct complete move
    actions: Array  # int32[M, L]: micro-actions reaching it, NO_ACTION-padded
    overflow: Array  # bool: more distinct complete moves existed than M (some not listed)


@runtime_checkable
class AfterstateEnv(Protocol):
    """What a complete-move player or afterstate TD learning needs from an env."""

    max_afterstates: int  # the default M
    max_move_length: int  # L: the most micro-actions in one complete move

    def afterstates(self, state: Any, max_afterstates: int | None = None) -> Afterstates:
        """The complete moves of a live decision state (all slots invalid otherwise)."""


__all__ = ["AfterstateEnv", "Afterstates", "NO_ACTION"]
