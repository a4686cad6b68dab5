"""Complete-move players: value every complete move's result (its afterstate) and play the
best, optionally looking ahead over the chance events as expectimax (the classic recipe for
dice games: value afterstates, search over the rolls).

    config = AfterstatePlayerConfig(plies=0)          # or 1, 2
    out = search(env, evaluator, variables, states, key, config)

Needs an env with complete moves (`envs.afterstates.AfterstateEnv`) and chance events. Values
are the search's (docs/search.md): the network's value for the player to move at a state,
negated for the other player; a finished game is valued by its exact reward.

* 0-ply: the afterstate whose value is best for the mover.
* n-ply: the `candidates` best afterstates at 0-ply, those within `threshold` of the best
  (a move filter; a game's presets choose it) are looked at again: each is averaged over every chance outcome
  (`env.chance_outcome_probs`) of the opponent's (n-1)-ply value there, negated. 1-ply is the
  average over the chance outcomes of the opponent's best 0-ply reply. Each (candidate,
  outcome)'s complete moves are listed once, and only for the candidates the filter keeps:
  those are packed across the batch and looked at a chunk at a time (`_lookahead_live`), so
  a position with two moves worth a look costs two, not `candidates`.

The action returned is the first micro-action of the chosen complete move, and
`SearchResult.plan` the whole move: a caller that plays the move through (an evaluation match,
`turbozero play`) chooses once a turn. Called again mid-turn, the player lists the rest of the
move and the same complete move is still the best at 0 plies (deeper, a new look). The policy
target is one-hot on that micro-action.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Optional

import jax
import jax.numpy as jnp

from envs.afterstates import NO_ACTION, AfterstateEnv, Afterstates
from envs.core import Env, State, require_protocol
from turbozero.validation import check_int, check_real
from turbozero.search.api import (
    NetworkEvaluator, SearchResult, register_family, two_player_values)


@dataclasses.dataclass(frozen=True)
class AfterstatePlayerConfig:
    """A complete-move player (module docstring).

    plies: 0, 1 or 2 chance layers of look-ahead. candidates and threshold: the move filter of
    the look-ahead (ignored at 0 plies): it re-values at most `candidates` of the best 0-ply
    moves, those within `threshold` (in the network's value units) of the best; None (the
    default) keeps all `candidates`. A game's presets set the filter its field uses (its
    page in docs/ says which). max_afterstates: M,
    complete moves listed per position (None: the env's default). objective: None for the
    network's value in reward units (money points), or an object with
    `values(value_out, is_root_mover)` and `terminal(points, is_root_mover)` mapping network
    outputs and finished games to a zero-sum scalar for the player it is for (e.g.
    a match-winning-chance objective; a match score is the chooser's).
    exact: None, or an object with `value_out(states) -> (known bool[...], value_out)` whose
    outputs replace the network's where known (e.g. an endgame database's exact
    values); afterstate TD also takes its targets from them."""

    plies: int = 0
    candidates: int = 8
    threshold: Optional[float] = None
    max_afterstates: Optional[int] = None
    objective: Any = None
    exact: Any = None
    family: ClassVar[str] = "afterstate"

    def for_evaluation(self) -> "AfterstatePlayerConfig":
        """Itself: a complete-move player is deterministic (its best move, no noise)."""
        return self

    def tree_shapes(self, env: Env, states: State, with_wdl: bool = False) -> Any:
        """What a choice for the batch `states` (arrays or shape structs) holds at once in
        place of a tree, as shape structs (the memory bound's count, turbozero/memory.py): at
        each ply level the complete moves listed (`Afterstates` [b, M]) and the observations of
        every listed slot (the valuer's largest share, `PACK_DIVS`' last). Level 0 lists the
        B roots; each look-ahead level lists the moves after one chance outcome (the outcomes
        go one after another) of one trip's share of the level above's kept candidates,
        `_trip_slots(b x min(candidates, M))`. The listing's states are the env's own states
        without their observation (the `AfterstateEnv` protocol): their shapes are the
        roots' (an env's states keep one structure), so no listing is traced here, where
        tracing one took seconds (tests/search/test_search_memory_bound.py checks the
        shapes against the listings a real player makes). `with_wdl`: unused."""
        del with_wdl
        check_env(env)
        states = jax.tree_util.tree_map(
            lambda x: jax.ShapeDtypeStruct(tuple(x.shape), x.dtype), states)
        bare = states.replace(observation=None)
        observation = states.observation
        if observation is None:
            observation = jax.eval_shape(jax.vmap(env.observe), bare)
        m = self.num_afterstates(env)
        k = min(self.candidates, m)

        def slots(tree, b):  # [b, m, ...] of one root's leaves
            return jax.tree_util.tree_map(
                lambda x: jax.ShapeDtypeStruct((b, m) + tuple(x.shape[1:]), x.dtype), tree)

        levels = []
        b = int(states.current_player.shape[0])
        for _ in range(self.plies + 1):
            listed = Afterstates(
                states=slots(bare, b), valid=jax.ShapeDtypeStruct((b, m), jnp.bool_),
                actions=jax.ShapeDtypeStruct((b, m, env.max_move_length), jnp.int32),
                overflow=jax.ShapeDtypeStruct((b,), jnp.bool_))
            levels.append({"listed": listed, "observed": slots(observation, b)})
            b = _trip_slots(b * k)
        return tuple(levels)

    def num_afterstates(self, env: Env) -> int:
        """M, the complete moves listed per position: `max_afterstates`, else the env's."""
        return int(self.max_afterstates if self.max_afterstates is not None
                   else env.max_afterstates)

    def tree_settings(self, batch: str, env: Env) -> str:
        """The settings the memory bound names (`batch`: the positions, e.g. num_envs=64)."""
        m = self.num_afterstates(env)
        said = (f"{batch} x max_afterstates={m} complete moves"
                + (" (the game's default)" if self.max_afterstates is None else ""))
        if self.plies:
            said += (f", at each of plies={self.plies} look-ahead levels for candidates="
                     f"{self.candidates} a position, 1/{LOOKAHEAD_DIV} of them a trip")
        return said

    def __post_init__(self) -> None:
        if isinstance(self.plies, bool) or self.plies not in (0, 1, 2):
            raise ValueError(f"plies must be 0, 1 or 2, got {self.plies!r}")
        check_int("candidates", self.candidates, minimum=1)
        check_real("threshold", self.threshold, minimum=0.0, optional=True)
        # a width of the afterstate list: -1 or 2**40 reached JAX as a shape
        check_int("max_afterstates", self.max_afterstates, minimum=1, optional=True)
        if self.objective is not None and not (callable(getattr(self.objective, "values", None))
                                               and callable(getattr(self.objective, "terminal",
                                                                    None))):
            raise ValueError("objective must be None or an object with values(value_out, "
                             f"is_root_mover) and terminal(points, is_root_mover), got "
                             f"{self.objective!r}")
        if self.exact is not None and not callable(getattr(self.exact, "value_out", None)):
            raise ValueError("exact must be None or an object with value_out(states), got "
                             f"{self.exact!r}")


# The valid afterstates are valued packed into the smallest of these shares of the slots that
# holds them (`AfterstateValuer.valid_values`; the last, 1, is every slot). Measured (docs/
# learning.md, "Lookahead that is cheap"): a listing fills about 24 of its 256 slots, and with
# one share of 1/4 the network and observation took 880 ms of a 1-ply look-ahead's 1,003
PACK_DIVS = (32, 16, 8, 4, 2, 1)

# The look-ahead takes the candidates its move filter keeps this share of the batch's
# (position, candidate) slots at a time (`_lookahead_live`): trips are as many as what is kept
# needs, so a batch where few moves pass the filter lists few chance outcomes' moves
LOOKAHEAD_DIV = 8


def _trip_slots(n: int) -> int:
    """The slots one look-ahead trip takes of `n` (position, candidate) slots."""
    return -(-n // LOOKAHEAD_DIV)


def check_env(env: Env) -> None:
    """ValueError unless `env` lists complete moves and has chance events."""
    require_protocol(env, AfterstateEnv, "a complete-move player")
    if not env.is_stochastic or env.num_players != 2:
        raise ValueError(f"complete-move players need a two-player game with chance events; "
                         f"{env.id} is not one")


class AfterstateValuer:
    """Values of states for the player to move there, through the network or the objective.
    `root` (int32, broadcast against each call's leading shape) is the player the search
    chooses for: an objective reads the match score from its side."""

    def __init__(self, env, evaluator: NetworkEvaluator, variables, config):
        self.env, self.evaluator, self.variables, self.config = env, evaluator, variables, config

    def value_out(self, states: State) -> jax.Array:
        """The network's outputs at each state ([..., R]), the exact evaluator's where it
        knows the state."""
        shape = states.current_player.shape
        if states.observation is None:  # listed afterstates carry none: observed here, for
            # the slots valued (envs.afterstates, "observations on demand")
            flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[len(shape):]),
                                          states)
            obs = jax.vmap(self.env.observe)(flat)
        else:
            obs = states.observation.reshape((-1,) + states.observation.shape[len(shape):])
        _, out = self.evaluator.apply_fn(self.variables, obs)
        out = out.reshape(shape + out.shape[1:])
        if self.config.exact is not None:
            known, exact = self.config.exact.value_out(states)
            out = jnp.where(known[..., None], exact.astype(out.dtype), out)
        return out

    def state_values(self, states: State, root: jax.Array) -> jax.Array:
        """float32[...]: value of each (live, not finished) state for its player to move."""
        out = self.value_out(states)
        if self.config.objective is None:
            return self.evaluator.value_format.to_scalar(out)
        return self.config.objective.values(out, states.current_player == root)

    def terminal_values(self, rewards: jax.Array, player: jax.Array,
                        root: jax.Array) -> jax.Array:
        """float32[...]: a finished game's value for `player` (rewards float32[..., 2])."""
        r = jnp.take_along_axis(rewards, player[..., None], axis=-1)[..., 0]
        if self.config.objective is None:
            return r
        return self.config.objective.terminal(r, player == root)

    def valid_values(self, after: State, valid: jax.Array, mover: jax.Array,
                     root: jax.Array) -> jax.Array:
        """`afterstate_values` where `valid`, -inf elsewhere (same leading shape). The network
        runs on the valid slots only, packed into the smallest share of the slots in
        `PACK_DIVS` that holds them (`lax.switch`: one evaluation of that size): complete moves
        usually fill few of the M slots (about 20 of 256 in the listings measured in
        docs/learning.md, where valuing the empty ones was most of the players' time)."""
        shape = valid.shape
        n = valid.size
        flat = jax.tree_util.tree_map(lambda x: x.reshape((n,) + x.shape[len(shape):]), after)
        mover_f = jnp.broadcast_to(mover, shape).reshape(n)
        root_f = jnp.broadcast_to(root, shape).reshape(n)
        ok = valid.reshape(n)
        count = jnp.sum(ok)
        caps = sorted({max(1, n // d) for d in PACK_DIVS} | {n})  # ascending, ends with n

        def packed(cap):
            def run():
                (idx,) = jnp.nonzero(ok, size=cap, fill_value=0)
                sub = jax.tree_util.tree_map(lambda x: x[idx], flat)
                v = self.afterstate_values(sub, mover_f[idx], root_f[idx])
                dest = jnp.where(jnp.arange(cap) < count, idx, n)
                return jnp.full(n, -jnp.inf, v.dtype).at[dest].set(v, mode="drop")
            return run

        def every():
            return self.afterstate_values(flat, mover_f, root_f)

        branches = [packed(c) for c in caps[:-1]] + [every]
        if len(branches) == 1:
            q = every()
        else:  # the smallest capacity >= count
            which = jnp.sum(count > jnp.asarray(caps[:-1], jnp.int32))
            q = jax.lax.switch(which, branches)
        return jnp.where(valid, q.reshape(shape), -jnp.inf)

    def afterstate_values(self, after: State, mover: jax.Array, root: jax.Array) -> jax.Array:
        """float32[...]: each afterstate's value for `mover` (same leading shape)."""
        done = after.terminated | after.truncated
        v = self.state_values(after, root)  # for the player to move there
        v = jnp.where(after.current_player == mover, v, -v)
        return jnp.where(done, self.terminal_values(after.rewards, mover, root), v)


def _afterstates(env, states: State, m: Optional[int]):
    """`env.afterstates` of a batch of any leading shape, through one vmap over the flattened
    batch (an env may pool work across that axis, e.g. list its costly cases together)."""
    shape = states.current_player.shape
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[len(shape):]), states)
    out = jax.vmap(lambda s: env.afterstates(s, m))(flat)
    return jax.tree_util.tree_map(lambda x: x.reshape(shape + x.shape[1:]), out)


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


def _value(valuer: AfterstateValuer, states: State, plies: int, root: jax.Array) -> jax.Array:
    """float32[...]: the `plies`-deep expectimax value of live decision states for their
    player to move (finished states: their exact reward). `root` int32[...]: the chooser."""
    env, cfg = valuer.env, valuer.config
    moves = _afterstates(env, states, cfg.max_afterstates)
    mover = states.current_player[..., None]
    q = valuer.valid_values(moves.states, moves.valid, mover, root[..., None])  # [..., M]
    if plies > 0:
        q, _ = _filtered_lookahead(valuer, moves.states, q, mover, plies, root[..., None])
    best = jnp.max(q, axis=-1)
    done = states.terminated | states.truncated
    return jnp.where(done, valuer.terminal_values(states.rewards, states.current_player, root),
                     best)


def _filtered_lookahead(valuer: AfterstateValuer, after: State, q: jax.Array, mover: jax.Array,
                        plies: int, root: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(values float32[..., K], slots int32[..., K]): the move filter's candidates among the
    afterstates `after` [..., M] valued `q` at 0 plies (-inf: no move), each re-valued by the
    look-ahead; -inf where the filter drops it. `mover` and `root` broadcast against [..., 1]."""
    cfg = valuer.config
    k = min(cfg.candidates, q.shape[-1])
    q_top, idx = jax.lax.top_k(q, k)  # [..., K], best first
    keep = jnp.isfinite(q_top)
    if cfg.threshold is not None:
        keep &= q_top >= q_top[..., :1] - cfg.threshold
    top = _take(after, idx, axis=q.ndim - 1)
    shape = keep.shape
    values = _lookahead_live(valuer, top, keep, jnp.broadcast_to(mover, shape), plies,
                             jnp.broadcast_to(root, shape))
    return values, idx


def _lookahead_live(valuer: AfterstateValuer, after: State, keep: jax.Array, mover: jax.Array,
                    plies: int, root: jax.Array) -> jax.Array:
    """`_lookahead` of the afterstates where `keep` (bool, any leading shape; `mover` and
    `root` int32 of that shape), -inf elsewhere. The kept slots are packed and looked at
    `ceil(slots / LOOKAHEAD_DIV)` at a time, in a loop of as many trips as the kept count
    needs: a move filter drops many slots (a position with one or two moves worth a look, or
    fewer listed moves than candidates), and the look-ahead is the player's whole cost."""
    shape = keep.shape
    n = keep.size
    chunk = _trip_slots(n)
    flat = jax.tree_util.tree_map(lambda x: x.reshape((n,) + x.shape[len(shape):]), after)
    mover_f, root_f, ok = mover.reshape(n), root.reshape(n), keep.reshape(n)
    count = jnp.sum(ok)
    (slots,) = jnp.nonzero(ok, size=chunk * LOOKAHEAD_DIV, fill_value=n)  # n: no slot

    def trip(carry):
        i, out = carry
        sel = jax.lax.dynamic_slice(slots, (i * chunk,), (chunk,))
        safe = jnp.minimum(sel, n - 1)
        sub = jax.tree_util.tree_map(lambda x: x[safe], flat)
        v = _lookahead(valuer, sub, mover_f[safe], plies, root_f[safe])
        return i + 1, out.at[sel].set(v, mode="drop")

    _, out = jax.lax.while_loop(lambda c: c[0] * chunk < count, trip,
                                (jnp.int32(0), jnp.full(n, -jnp.inf, jnp.float32)))
    return out.reshape(shape)


def _lookahead(valuer: AfterstateValuer, after: State, mover: jax.Array, plies: int,
               root: jax.Array) -> jax.Array:
    """float32[...]: afterstates valued for `mover` by averaging the opponent's
    (plies-1)-ply value over the chance outcomes (finished games: exact).

    The outcomes are taken one after another (`lax.map`), not side by side: each holds the
    complete moves of every candidate, and all outcomes at once took 12.6 GB to compile for
    one position at 2 plies."""
    env = valuer.env
    step = env.step_chance
    for _ in range(after.current_player.ndim):
        step = jax.vmap(step, in_axes=(0, None))

    def outcome_value(o):
        rolled = step(after, o)  # [...]
        v_next = _value(valuer, rolled, plies - 1, root)  # for the player to move after it
        return jnp.where(rolled.current_player == mover, v_next, -v_next)

    values = jax.lax.map(outcome_value, jnp.arange(env.num_chance_outcomes))  # [C, ...]
    expected = jnp.sum(jnp.moveaxis(_probs(env, after), -1, 0) * values, axis=0)
    done = after.terminated | after.truncated
    return jnp.where(done, valuer.terminal_values(after.rewards, mover, root), expected)


def choose_afterstates(env: Env, evaluator: NetworkEvaluator, variables: Any, states: State,
                       config: AfterstatePlayerConfig):
    """(complete moves [B, M], the chosen slot int32[B], its value float32[B] for the mover)
    for a batch of decision states (leading axis B)."""
    check_env(env)
    valuer = AfterstateValuer(env, evaluator, variables, config)
    if states.observation is None:
        states = states.replace(observation=jax.vmap(env.observe)(states))
    moves = _afterstates(env, states, config.max_afterstates)  # [B, M]
    mover = states.current_player[:, None]
    root = jnp.broadcast_to(mover, moves.valid.shape)  # [B, M]
    q = valuer.valid_values(moves.states, moves.valid, mover, root)
    idx = jnp.broadcast_to(jnp.arange(q.shape[1])[None, :], q.shape)
    if config.plies > 0:
        q, idx = _filtered_lookahead(valuer, moves.states, q, mover, config.plies, mover)
    best = jnp.argmax(q, axis=-1)  # [B]; ties: the first in slot order
    chosen = jnp.take_along_axis(idx, best[:, None], axis=1)[:, 0]
    live = jnp.any(moves.valid, axis=1)
    value = jnp.where(live, jnp.max(q, axis=-1), 0.0)
    return moves, chosen, value


def afterstate_search(env: Env, evaluator: NetworkEvaluator, variables: Any, states: State,
                      config: AfterstatePlayerConfig) -> SearchResult:
    """The complete-move player's choice for a batch of decision states (leading axis B):
    the first micro-action of the chosen complete move, one-hot as the policy, and the whole
    move as the plan (int32[B, L], NO_ACTION-padded; all NO_ACTION where no move is listed)."""
    moves, chosen, value = choose_afterstates(env, evaluator, variables, states, config)
    live = jnp.any(moves.valid, axis=1)
    plan = jnp.take_along_axis(moves.actions, chosen[:, None, None], axis=1)[:, 0]  # [B, L]
    plan = jnp.where(live[:, None], plan, NO_ACTION).astype(jnp.int32)
    action = jnp.where(live, plan[:, 0], 0)
    policy = jax.nn.one_hot(action, env.num_actions, dtype=jnp.float32)
    return SearchResult(action=action, policy=policy, root_value=value,
                        root_values=two_player_values(value, states.current_player, 2),
                        plan=plan)


def _run(env, evaluator, variables, states, key, config, risk_beta=None) -> SearchResult:
    del key, risk_beta  # deterministic; no risk term
    return afterstate_search(env, evaluator, variables, states, config)


register_family("afterstate", AfterstatePlayerConfig, _run)

__all__ = ["AfterstatePlayerConfig", "AfterstateValuer", "afterstate_search", "check_env",
           "choose_afterstates"]
