"""Complete-move players: value every complete move's result (its afterstate) and play the
best, optionally looking ahead over the chance events as expectimax (the TD-Gammon / gnubg
recipe for dice games).

    config = AfterstatePlayerConfig(plies=0)          # or 1, 2
    out = search(env, evaluator, variables, states, key, config)

Needs an env with complete moves (`envs.afterstates.AfterstateEnv`) and chance events. Values
are the search's (docs/search.md): the network's value for the player to move at a state,
negated for the other player; a finished game is valued by its exact reward.

* 0-ply: the afterstate whose value is best for the mover.
* n-ply: the `candidates` best afterstates at 0-ply are looked at again: each is averaged over
  every chance outcome (`env.chance_outcome_probs`) of the opponent's (n-1)-ply value there,
  negated. 1-ply is the average over the 21 rolls of the opponent's best 0-ply reply.

The action returned is the first micro-action of the chosen complete move; the env's own
micro-steps follow it (called again mid-turn, the player lists the rest of the move, and the
same complete move is still the best). The policy target is one-hot on that micro-action.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import jax
import jax.numpy as jnp

from envs.afterstates import AfterstateEnv
from envs.core import Env, State, require_protocol
from turbozero.search.mctx_policies import NetworkEvaluator, SearchOutput


@dataclasses.dataclass(frozen=True)
class AfterstatePlayerConfig:
    """A complete-move player (module docstring).

    plies: 0, 1 or 2 chance layers of look-ahead. candidates: how many of the best 0-ply moves
    the look-ahead re-values (gnubg's move filter; ignored at 0 plies). max_afterstates: M,
    complete moves listed per position (None: the env's default). objective: None for the
    network's value in reward units (money points), or an object with `values(value_out)` and
    `terminal(rewards)` mapping network outputs and finished games to a zero-sum scalar for the
    player to move (e.g. `equity.MatchObjective(score)`, match winning chances)."""

    plies: int = 0
    candidates: int = 8
    max_afterstates: Optional[int] = None
    objective: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.plies, bool) or self.plies not in (0, 1, 2):
            raise ValueError(f"plies must be 0, 1 or 2, got {self.plies!r}")
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int) \
                or self.candidates < 1:
            raise ValueError(f"candidates must be an int >= 1, got {self.candidates!r}")
        if self.max_afterstates is not None and (
                isinstance(self.max_afterstates, bool)
                or not isinstance(self.max_afterstates, int)):
            raise ValueError(f"max_afterstates must be None or an int, got "
                             f"{self.max_afterstates!r}")
        if self.objective is not None and not (callable(getattr(self.objective, "values", None))
                                               and callable(getattr(self.objective, "terminal",
                                                                    None))):
            raise ValueError("objective must be None or an object with values(value_out) and "
                             f"terminal(rewards), got {self.objective!r}")


def check_env(env: Env) -> None:
    """ValueError unless `env` lists complete moves and has chance events."""
    require_protocol(env, AfterstateEnv, "a complete-move player")
    if not env.is_stochastic or env.num_players != 2:
        raise ValueError(f"complete-move players need a two-player game with chance events; "
                         f"{env.id} is not one")


class _Valuer:
    """Values of states for the player to move there, through the network or the objective."""

    def __init__(self, env, evaluator: NetworkEvaluator, variables, config):
        self.env, self.evaluator, self.variables, self.config = env, evaluator, variables, config

    def state_values(self, states: State) -> jax.Array:
        """float32[...]: value of each (live, not finished) state for its player to move."""
        shape = states.current_player.shape
        flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[len(shape):]), states)
        obs = flat.observation
        if self.config.objective is None:
            _, v = self.evaluator(self.variables, obs)
        else:
            _, out = self.evaluator.apply_fn(self.variables, obs)
            v = self.config.objective.values(out)
        return v.reshape(shape)

    def terminal_values(self, rewards: jax.Array, player: jax.Array) -> jax.Array:
        """float32[...]: a finished game's value for `player` (rewards float32[..., 2])."""
        r = jnp.take_along_axis(rewards, player[..., None], axis=-1)[..., 0]
        return r if self.config.objective is None else self.config.objective.terminal(r)

    def afterstate_values(self, after: State, mover: jax.Array) -> jax.Array:
        """float32[...]: each afterstate's value for `mover` (same leading shape)."""
        done = after.terminated | after.truncated
        v = self.state_values(after)  # for the player to move there
        v = jnp.where(after.current_player == mover, v, -v)
        return jnp.where(done, self.terminal_values(after.rewards, mover), v)


def _afterstates(env, states: State, m: Optional[int]):
    """`env.afterstates` of a batch of any leading shape."""
    fn = lambda s: env.afterstates(s, m)  # noqa: E731
    for _ in range(states.current_player.ndim):
        fn = jax.vmap(fn)
    return fn(states)


def _rolled(env, after: State) -> State:
    """[...] afterstates -> [..., C] the state after each chance outcome."""
    n = env.num_chance_outcomes
    fn = lambda s: jax.vmap(lambda o: env.step_chance(s, o))(jnp.arange(n))  # noqa: E731
    for _ in range(after.current_player.ndim):
        fn = jax.vmap(fn)
    return fn(after)


def _probs(env, after: State) -> jax.Array:
    fn = env.chance_outcome_probs
    for _ in range(after.current_player.ndim):
        fn = jax.vmap(fn)
    return fn(after)


def _take(tree: Any, idx: jax.Array, axis: int) -> Any:
    """Gather `idx` ([..., K]) along `axis` of every leaf (leading shape `idx.shape[:-1]`)."""
    def one(x):
        i = idx.reshape(idx.shape + (1,) * (x.ndim - idx.ndim))
        return jnp.take_along_axis(x, i, axis=axis)
    return jax.tree_util.tree_map(one, tree)


def _value(valuer: _Valuer, states: State, plies: int) -> jax.Array:
    """float32[...]: the `plies`-deep expectimax value of live decision states for their
    player to move (finished states: their exact reward)."""
    env, cfg = valuer.env, valuer.config
    moves = _afterstates(env, states, cfg.max_afterstates)
    mover = states.current_player[..., None]
    q = valuer.afterstate_values(moves.states, mover)  # [..., M]
    q = jnp.where(moves.valid, q, -jnp.inf)
    if plies > 0:
        k = min(cfg.candidates, q.shape[-1])
        q_top, idx = jax.lax.top_k(q, k)  # [..., K]
        top = _take(moves.states, idx, axis=q.ndim - 1)
        q = jnp.where(jnp.isfinite(q_top), _lookahead(valuer, top, mover, plies), -jnp.inf)
    best = jnp.max(q, axis=-1)
    done = states.terminated | states.truncated
    return jnp.where(done, valuer.terminal_values(states.rewards, states.current_player), best)


def _lookahead(valuer: _Valuer, after: State, mover: jax.Array, plies: int) -> jax.Array:
    """float32[...]: afterstates valued for `mover` by averaging the opponent's
    (plies-1)-ply value over the chance outcomes (finished games: exact)."""
    rolled = _rolled(valuer.env, after)  # [..., C]
    v_next = _value(valuer, rolled, plies - 1)  # for the player to move after the roll
    same = rolled.current_player == mover[..., None]
    v_mover = jnp.where(same, v_next, -v_next)
    expected = jnp.sum(_probs(valuer.env, after) * v_mover, axis=-1)
    done = after.terminated | after.truncated
    return jnp.where(done, valuer.terminal_values(after.rewards, mover), expected)


def choose_afterstates(env: Env, evaluator: NetworkEvaluator, variables: Any, states: State,
                       config: AfterstatePlayerConfig):
    """(complete moves [B, M], the chosen slot int32[B], its value float32[B] for the mover)
    for a batch of decision states (leading axis B)."""
    check_env(env)
    valuer = _Valuer(env, evaluator, variables, config)
    if states.observation is None:
        states = states.replace(observation=jax.vmap(env.observe)(states))
    moves = _afterstates(env, states, config.max_afterstates)  # [B, M]
    mover = states.current_player[:, None]
    q = jnp.where(moves.valid, valuer.afterstate_values(moves.states, mover), -jnp.inf)
    idx = jnp.broadcast_to(jnp.arange(q.shape[1])[None, :], q.shape)
    if config.plies > 0:
        k = min(config.candidates, q.shape[-1])
        q_top, idx = jax.lax.top_k(q, k)
        top = _take(moves.states, idx, axis=1)
        q = jnp.where(jnp.isfinite(q_top), _lookahead(valuer, top, mover, config.plies),
                      -jnp.inf)
    best = jnp.argmax(q, axis=-1)  # [B]; ties: the first in slot order
    chosen = jnp.take_along_axis(idx, best[:, None], axis=1)[:, 0]
    live = jnp.any(moves.valid, axis=1)
    value = jnp.where(live, jnp.max(q, axis=-1), 0.0)
    return moves, chosen, value


def afterstate_search(env: Env, evaluator: NetworkEvaluator, variables: Any, states: State,
                      config: AfterstatePlayerConfig) -> SearchOutput:
    """The complete-move player's choice for a batch of decision states (leading axis B):
    the first micro-action of the chosen complete move, one-hot as the policy."""
    moves, chosen, value = choose_afterstates(env, evaluator, variables, states, config)
    first = jnp.take_along_axis(moves.actions[:, :, 0], chosen[:, None], axis=1)[:, 0]
    live = jnp.any(moves.valid, axis=1)
    action = jnp.where(live, first, 0).astype(jnp.int32)
    policy = jax.nn.one_hot(action, env.num_actions, dtype=jnp.float32)
    return SearchOutput(action=action, policy=policy, root_value=value)


__all__ = ["AfterstatePlayerConfig", "afterstate_search", "check_env", "choose_afterstates"]
