"""Any deterministic pgx game under the library's protocol: `envs.make("pgx/<pgx id>")`.

Useful for small test games (tic_tac_toe, connect_four) and for comparing against pgx. pgx's
own state is kept inside ours; pgx's illegal-action and terminal conventions are the same as
the protocol's, so its `step` is used as is.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import jax
import jax.numpy as jnp
import pgx
from flax import struct

from envs.core import Env, State

_STOCHASTIC = {"backgammon", "2048", "kuhn_poker", "leduc_holdem", "bridge_bidding"}


@struct.dataclass
class PgxAdapterState(State):
    inner: Any  # the pgx State

    def _svg(self) -> str:
        return self.inner.to_svg()  # pgx's own picture (what its `_repr_html_` shows)


class PgxAdapter(Env):
    """Wraps `pgx.make(pgx_id)` for deterministic, turn-based pgx games.

    Actions are written as their index (the Env defaults); pgx games keep their own step caps
    (`max_episode_steps` None here) and their `truncated` passes through.
    """

    def __init__(self, pgx_id: str):
        if pgx_id in _STOCHASTIC or pgx_id.startswith("minatar"):
            raise ValueError(f"pgx game {pgx_id!r} is not a deterministic board game")
        if pgx_id not in pgx.available_envs():
            raise ValueError(f"unknown pgx game {pgx_id!r}")
        self._env = pgx.make(pgx_id)
        self.pgx_id = pgx_id
        self.id = f"pgx/{pgx_id}"
        self.num_players = self._env.num_players
        self.num_actions = self._env.num_actions

    def _wrap(self, inner, step_count) -> PgxAdapterState:
        return PgxAdapterState(
            current_player=inner.current_player.astype(jnp.int32),
            observation=inner.observation,
            rewards=inner.rewards.astype(jnp.float32),
            terminated=inner.terminated,
            truncated=inner.truncated,
            legal_action_mask=inner.legal_action_mask,
            step_count=jnp.asarray(step_count, jnp.int32),
            inner=inner,
        )

    def _init(self, key: jax.Array) -> PgxAdapterState:
        return self._wrap(self._env.init(key), 0)

    def _step(self, state: PgxAdapterState, action: jax.Array, key: Optional[jax.Array]):
        inner = self._env.step(state.inner, action, key)
        return self._wrap(inner, state.step_count)

    def _observe(self, state: PgxAdapterState, player_id: jax.Array) -> jax.Array:
        # pgx observes from any player's side (the inner field is the mover's view only); pgx
        # 2.x marks the player argument deprecated with a DeprecationWarning, which must not
        # reach users (or a test run that treats warnings as errors) on every observation
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"\[Pgx\] `player_id`",
                                    category=DeprecationWarning)
            return self._env.observe(state.inner, player_id)
