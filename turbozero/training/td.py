"""Afterstate TD(lambda) for games with chance and complete moves, as an algorithm the Trainer
runs.

Self-play picks complete moves (`envs.afterstates`) with the complete-move player
(`turbozero.search.afterstate`, 0-ply by default), a uniformly random complete move with
probability `exploration`. The network learns the value of afterstates (the position after a
complete move, the opponent to roll), seen from the player to roll there, as the value format's
outcome distribution (`expected_outcome`: e.g. joint outcome probabilities).

Targets (the forward view of TD(lambda), computed from the estimates stored when each move was
chosen): for a game's afterstates a_1, a_2, ... each has a one-step target Y_t for the player
to roll at a_t (who moves next), and

    G_t = (1 - lambda) Y_t + lambda flip( G_{t+1} )
    G_t = Y_t                        when a_{t+1} has no return of its own (it ended the game,
                                     or it is the newest afterstate, or not yet played)

The one-step target is the config's `target` object:

* `SampledTargets()` (TD-Gammon's): the next afterstate played, Y_t = flip(V_{t+1}), its value
  V_{t+1} stored when it was chosen (the exact outcome when it ended the game). The chance
  outcome that came is one sample, so the target carries its noise.
* `ExpectedTargets()`: the expectation over the chance outcomes after a_t, Y_t =
  sum_o p(o) flip(V(best 0-ply move after o)), worked out when a_t is chosen (the exact
  outcome where a move ends the game). No chance noise; one complete-move listing per chance
  outcome per move played.

`lambda = 0` is one-step TD, `lambda = 1` (sampled) the game's outcome (Monte Carlo). The loss
is the value format's `outcome_loss` (e.g. a masked BCE with soft targets). The policy head is
not trained. docs/training.md, "Afterstate TD learning", has the choices and their
measurements.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from flax import struct

from envs.core import State
from turbozero.search.afterstate import (AfterstatePlayerConfig, AfterstateValuer, check_env,
                                         choose_afterstates)
from turbozero.training.collector import CollectStats
from turbozero.training import replay
from turbozero.training.algorithms import Algorithm
from turbozero.training.loss_fns import apply_in_training, total_loss
from turbozero.training.types import variables_of


@dataclasses.dataclass(frozen=True)
class SampledTargets:
    """One-step targets from play: the next afterstate played, its value stored when it was
    chosen (module docstring). Costs nothing beyond self-play."""

    looks_ahead: ClassVar[bool] = False  # the replay's `outcome` holds each move's own value

    def one_step(self, outcome, finished, written, flip):
        """(Y float32[T, R], defined bool[T]) for one game row, oldest move first."""
        del finished
        t_len = outcome.shape[0]
        t = jnp.arange(t_len)
        nxt = jnp.minimum(t + 1, t_len - 1)
        return flip(outcome[nxt]), (t + 1 < t_len) & written[nxt]


@dataclasses.dataclass(frozen=True)
class ExpectedTargets:
    """One-step targets that average over the chance outcomes after each afterstate: for each
    outcome the best complete move at 0 ply (the self-play player's M and exact values), its
    value for the player who made it, weighted by the outcome's probability (module
    docstring). Worked out when the move is played, by the network of that iteration."""

    looks_ahead: ClassVar[bool] = True  # the replay's `outcome` holds each move's expectation

    def one_step(self, outcome, finished, written, flip):
        del finished, written, flip
        return outcome, jnp.ones(outcome.shape[:1], jnp.bool_)


TD_TARGETS = (SampledTargets, ExpectedTargets)


@dataclasses.dataclass(frozen=True)
class TDConfig:
    """Self-play settings of afterstate TD learning (`TD(search=...)`; module docstring).

    player: the complete-move player of self-play (0-ply by default). td_lambda: the lambda of
    the targets, in [0, 1]. exploration: probability of a uniformly random complete move.
    target: the one-step targets, `SampledTargets()` (the move that came next) or
    `ExpectedTargets()` (the average over the chance outcomes)."""

    player: AfterstatePlayerConfig = AfterstatePlayerConfig()
    td_lambda: float = 0.7
    exploration: float = 0.02
    target: Any = SampledTargets()

    def for_evaluation(self) -> "TDConfig":
        """The same config: TD's evaluation plays its player's best move (`AfterstateTD.act`,
        no exploration), and the player has no noise (`player.for_evaluation()`)."""
        return dataclasses.replace(self, player=self.player.for_evaluation())

    def tree_shapes(self, env, states: State, with_wdl: bool = False) -> Any:
        """What one self-play turn of the batch `states` holds in place of a tree, as shape
        structs (the memory bound's count, turbozero/memory.py): the player's choice
        (`AfterstatePlayerConfig.tree_shapes`) and, with `ExpectedTargets`, the 0-ply choice
        after one chance outcome of every game's move (the outcomes go one after another). The
        replay (`TDReplay`) is part of the loop state, counted with it."""
        chosen = self.player.tree_shapes(env, states, with_wdl)
        if not self.target.looks_ahead:
            return chosen
        reply = dataclasses.replace(self.player, plies=0)
        return chosen, reply.tree_shapes(env, states, with_wdl)

    def tree_settings(self, batch: str, env) -> str:
        """The settings the memory bound names: the player's (`batch`: the games)."""
        return self.player.tree_settings(batch, env)

    def __post_init__(self) -> None:
        if not isinstance(self.player, AfterstatePlayerConfig):
            raise ValueError(f"player must be an AfterstatePlayerConfig, got {self.player!r}")
        if not isinstance(self.target, TD_TARGETS):
            raise ValueError("target must be SampledTargets() or ExpectedTargets() "
                             f"(turbozero.training.td), got {self.target!r}")
        for name in ("td_lambda", "exploration"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], got {v!r}")


@struct.dataclass
class TDReplay:
    """One row per game, one column per move, in the order played (ring of T columns)."""

    observation: jax.Array  # float32[E, T, *obs] the afterstate, from the player to roll
    # float32[E, T, R] for the player to roll: the afterstate's value when chosen (its
    # expectation over the chance outcomes with ExpectedTargets; exact when the game ended)
    outcome: jax.Array
    finished: jax.Array  # bool[E, T] the move ended the game
    written: jax.Array  # bool[E, T]
    target: jax.Array  # float32[E, T, R] lambda-return target (where has_target)
    has_target: jax.Array  # bool[E, T] trainable: written, not finished, target known
    ptr: jax.Array  # int32 next column
    num_writes: jax.Array  # int32 columns written so far


class TDExperience(struct.PyTreeNode):
    observation: jax.Array  # float32[B, *obs]
    target: jax.Array  # float32[B, R]


def lambda_targets(outcome: jax.Array, finished: jax.Array, written: jax.Array,
                   flip, td_lambda: float, target: Any = SampledTargets()
                   ) -> tuple[jax.Array, jax.Array]:
    """(target float32[T, R], has_target bool[T]) for one game row, oldest move first.

    `outcome[t]`: move t's estimate for the player to roll after it (exact if `finished[t]`;
    with `ExpectedTargets` its expectation over the chance outcomes); `flip` turns a
    distribution to the other player's view. A move has a target when it is written, did not
    end the game and its one-step target is defined (`target.one_step`: with sampled targets
    the next move is written, so the newest has none)."""
    outcome, finished, written = (jnp.asarray(x) for x in (outcome, finished, written))
    t_len = outcome.shape[0]
    y, y_ok = target.one_step(outcome, finished, written, flip)

    def back(carry, t):
        g_next, ok_next = carry  # G_{t+1} and whether it is defined
        # the next move has no return of its own (ended the game, newest, unplayed): Y alone
        g = jnp.where(ok_next, (1.0 - td_lambda) * y[t] + td_lambda * flip(g_next), y[t])
        ok = written[t] & ~finished[t] & y_ok[t]
        return (g, ok), (g, ok)

    init = (jnp.zeros_like(outcome[0]), jnp.asarray(False))
    _, (g, ok) = jax.lax.scan(back, init, jnp.arange(t_len), reverse=True)
    return g, ok


class AfterstateTD(Algorithm):
    """Afterstate TD(lambda) with complete-move self-play (module docstring). Its `collect`
    plays whole moves into its own replay and stores no per-position policy target: it does not
    call `self_play`."""

    def __init__(self, env, apply_fn, value_format, search_config, eval_search_config=None,
                 acting=None):
        del acting  # self-play explores by TDConfig.exploration
        if not isinstance(search_config, TDConfig):
            raise ValueError(f"AfterstateTD trains with a TDConfig, got {search_config!r}")
        if eval_search_config is None:
            eval_search_config = search_config.player
        if not isinstance(eval_search_config, AfterstatePlayerConfig):
            raise ValueError("a TD-trained network is evaluated by a complete-move player: "
                             "eval_search must be an AfterstatePlayerConfig, got "
                             f"{type(eval_search_config).__name__}")
        super().__init__(env, apply_fn, value_format, search_config, eval_search_config)
        if not value_format.has_outcomes:
            raise ValueError("afterstate TD needs a value format with outcome distributions "
                             f"(has_outcomes); {value_format.name} has none")
        self.greedy_player = AfterstatePlayerConfig(
            max_afterstates=search_config.player.max_afterstates)

    def check(self, config=None) -> None:
        check_env(self.env)
        if config is not None and (config.truncated_games is not None
                                   or config.max_self_play_steps is not None):
            raise ValueError("afterstate TD plays every game to its end: truncated_games and "
                             "max_self_play_steps must be None")
        super().check(config)

    # ------------------------------------------------------------------ self-play
    def init_replay(self, num_envs, capacity, states, form=None, policy_form=None):
        del form, policy_form  # afterstate observations, no policy targets
        obs = jax.vmap(self.env.observe)(states)
        r = self.value_format.outcome_size
        return TDReplay(
            observation=jnp.zeros((num_envs, capacity) + obs.shape[1:], obs.dtype),
            outcome=jnp.zeros((num_envs, capacity, r), jnp.float32),
            finished=jnp.zeros((num_envs, capacity), jnp.bool_),
            written=jnp.zeros((num_envs, capacity), jnp.bool_),
            target=jnp.zeros((num_envs, capacity, r), jnp.float32),
            has_target=jnp.zeros((num_envs, capacity), jnp.bool_),
            ptr=jnp.zeros((), jnp.int32),
            num_writes=jnp.zeros((), jnp.int32),
        )

    def _choose(self, variables, states: State, key):
        """Each game's complete move: the player's choice, or with probability `exploration`
        a uniformly random one. Returns (the afterstate [E], its estimate for the player to
        roll there [E, R] (the exact outcome if the move ended the game), finished bool[E])."""
        cfg = self.search_config
        moves, best, _ = choose_afterstates(self.env, self.evaluator, variables, states,
                                            cfg.player)
        e, m = moves.valid.shape
        k_explore, k_pick = jax.random.split(key)
        uniform = jax.random.uniform(k_pick, (e, m))
        random_pick = jnp.argmax(jnp.where(moves.valid, uniform, -1.0), axis=1)
        explore = jax.random.uniform(k_explore, (e,)) < cfg.exploration
        pick = jnp.where(explore, random_pick, best)
        chosen = jax.tree_util.tree_map(lambda x: x[jnp.arange(e), pick], moves.states)
        # the player to roll after the move: the loser where it ended the game, whose view
        # of it is the exact outcome stored
        roller = 1 - states.current_player
        if chosen.observation is None:  # listed afterstates carry none; the replay keeps it
            chosen = chosen.replace(observation=jax.vmap(self.env.observe)(chosen))
        if cfg.target.looks_ahead:
            joint = self._expectation(variables, chosen, roller)
        else:
            joint = self._outcome_for(variables, chosen, roller)
        return chosen, joint, chosen.terminated | chosen.truncated

    def _outcome_for(self, variables, after: State, player: jax.Array) -> jax.Array:
        """float32[E, R]: the outcome distribution of afterstates [E] for `player` int32[E]:
        the network's (or the exact evaluator's) for the player to roll there, flipped for the
        other; a finished game's exact outcome."""
        valuer = AfterstateValuer(self.env, self.evaluator, variables, self.search_config.player)
        fmt = self.value_format
        joint = fmt.expected_outcome(valuer.value_out(after))  # for the player to roll there
        joint = jnp.where((after.current_player == player)[:, None], joint,
                          fmt.flip_outcome(joint))
        reward = jnp.take_along_axis(after.rewards, player[:, None], axis=1)[:, 0]
        finished = after.terminated | after.truncated
        return jnp.where(finished[:, None], fmt.outcome_of(reward), joint)

    def _expectation(self, variables, after: State, roller: jax.Array) -> jax.Array:
        """float32[E, R]: for `roller` (int32[E], the player to roll at each afterstate [E]),
        the outcome distribution averaged over the chance outcomes (`env.chance_outcome_probs`)
        of the best 0-ply complete move after each (ExpectedTargets); a finished game's exact
        outcome. The outcomes go one after another (`lax.map`): each lists the complete moves
        of the whole batch, the shapes of self-play's own choice."""
        env = self.env
        player = dataclasses.replace(self.search_config.player, plies=0)

        def one_outcome(o):
            rolled = jax.vmap(env.step_chance, in_axes=(0, None))(after, o)
            moves, best, _ = choose_afterstates(env, self.evaluator, variables, rolled, player)
            e = best.shape[0]
            reply = jax.tree_util.tree_map(lambda x: x[jnp.arange(e), best], moves.states)
            return self._outcome_for(variables, reply, roller)  # [E, R]

        joints = jax.lax.map(one_outcome, jnp.arange(env.num_chance_outcomes))  # [C, E, R]
        probs = jax.vmap(env.chance_outcome_probs)(after)  # [E, C]
        expected = jnp.einsum("ec,cer->er", probs, joints)
        reward = jnp.take_along_axis(after.rewards, roller[:, None], axis=1)[:, 0]
        finished = (after.terminated | after.truncated)[:, None]
        return jnp.where(finished, self.value_format.outcome_of(reward), expected)

    def collect(self, state, config):
        """`config.collect_steps` complete moves in every game (lax.scan), each afterstate
        written to the replay; the lambda-return targets are computed again over the whole
        replay after. Acting is `TDConfig.exploration` (`_choose`), not a schedule."""
        env, num_envs = self.env, state.collector.episode_id.shape[0]
        variables = variables_of(state.train_state)
        key, k_collect = jax.random.split(state.key)

        def one_turn(carry, k):
            col, buf, stats = carry
            k_move, k_roll, k_reset = jax.random.split(k, 3)
            s = col.env_state
            after, outcome, finished = self._choose(variables, s, k_move)
            buf = replay.write(buf, {"observation": after.observation, "outcome": outcome,
                                     "finished": finished,
                                     "written": jnp.ones_like(finished)})
            ret = col.return_so_far + after.rewards
            rolled = jax.vmap(env.sample_chance)(after, jax.random.split(k_roll, num_envs))
            fresh = jax.vmap(env.init)(jax.random.split(k_reset, num_envs))
            nxt = jax.tree_util.tree_map(
                lambda a, b: jnp.where(finished.reshape((-1,) + (1,) * (a.ndim - 1)), a, b),
                fresh, rolled)
            col = col.replace(
                env_state=nxt,
                episode_id=jnp.where(finished, col.episode_id + num_envs, col.episode_id),
                return_so_far=jnp.where(finished[:, None], 0.0, ret))
            return (col, buf, stats.add(finished, ret)), None

        (col, buf, stats), _ = jax.lax.scan(
            one_turn, (state.collector, state.buffer, CollectStats.zero(env.num_players)),
            jax.random.split(k_collect, config.collect_steps))
        return state.replace(collector=col, buffer=self._with_targets(buf), key=key), stats

    def _with_targets(self, buf: TDReplay) -> TDReplay:
        """Every row's lambda-return targets, from its moves in the order played."""
        t_len = buf.written.shape[1]
        order = (buf.ptr + jnp.arange(t_len)) % t_len  # oldest first

        def row(outcome, finished, written):
            g, ok = lambda_targets(outcome[order], finished[order], written[order],
                                   self.value_format.flip_outcome,
                                   float(self.search_config.td_lambda),
                                   self.search_config.target)
            inv = jnp.zeros(t_len, jnp.int32).at[order].set(jnp.arange(t_len))
            return g[inv], ok[inv]

        target, has = jax.vmap(row)(buf.outcome, buf.finished, buf.written)
        return buf.replace(target=target, has_target=has)

    # ------------------------------------------------------------------ learning
    def sample(self, buffer: TDReplay, key, batch_size):
        e, t = buffer.has_target.shape
        w = buffer.has_target.reshape(-1).astype(jnp.float32)
        p = jnp.where(w.sum() > 0, w / jnp.maximum(w.sum(), 1.0), 1.0 / (e * t))
        idx = jax.random.choice(key, e * t, (batch_size,), p=p)
        obs = buffer.observation.reshape((e * t,) + buffer.observation.shape[2:])[idx]
        return TDExperience(observation=obs, target=buffer.target.reshape(e * t, -1)[idx])

    def loss_fn(self, params, train_state, experience: TDExperience):
        (_, value_out), updates = apply_in_training(params, train_state, experience.observation)
        value_loss, metrics = self.value_format.outcome_loss(value_out, experience.target)
        # no in-loss L2 (Algorithm.loss_fn): weight decay is the optimizer's
        return total_loss(params, jnp.zeros(()), value_loss, 0.0, metrics, updates)




__all__ = ["AfterstateTD", "ExpectedTargets", "SampledTargets", "TDConfig", "TDExperience",
           "TDReplay", "lambda_targets"]
