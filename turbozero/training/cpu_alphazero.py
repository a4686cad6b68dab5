"""AlphaZero whose self-play runs on the C++ CPU path (docs/cpu_search.md, "Training").

`TrainConfig.search = CPUSelfPlayConfig(...)` selects `CPUAlphaZero`: each iteration plays
`num_games` whole games with the bundled C++ node pool, evaluation queue and worker threads
(`turbozero.search.cpu.cpu_self_play`; JAX steps the rules and runs the network on the batches
the queue collects), and writes them into the library's replay; training, checkpoints and the
loss are AlphaZero's. Evaluation searches with the JAX tree kernel under the same formulas
(`SpecPUCT` + `PUCTRoot` with the config's constants), which the C++ search equals visit for
visit with one worker (tests/test_cpu_search_jax.py), so evaluation stays jittable.
"""

from __future__ import annotations

import dataclasses
import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig, cpu_self_play, make_pool_evaluator
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.roots import PUCTRoot
from turbozero.search.selection import SpecPUCT
from turbozero.training.algorithms import AlphaZero, register_algorithm
from turbozero.training.collector import CollectStats


def kernel_config(config: CPUSelfPlayConfig) -> TreeSearchConfig:
    """The JAX kernel's search with the formulas and constants of the CPU path."""
    s = config.search
    return TreeSearchConfig(
        num_simulations=config.num_simulations,
        selection=SpecPUCT(c_puct=s.c_puct, fpu_base=s.fpu_base, risk_beta=s.risk_beta,
                           q_bounds=tuple(s.q_bounds)),
        root=PUCTRoot(dirichlet_alpha=s.dirichlet_alpha, dirichlet_fraction=s.dirichlet_fraction),
        temperature=config.temperature)


class CPUAlphaZero(AlphaZero):
    """AlphaZero with self-play on the C++ CPU path (whole games per iteration, outside jit)."""

    def __init__(self, env, apply_fn, value_format, search_config, eval_search_config=None):
        if not isinstance(search_config, CPUSelfPlayConfig):
            raise ValueError(f"CPUAlphaZero needs a CPUSelfPlayConfig, got {search_config!r}")
        evaluation = (search_config if eval_search_config is None else eval_search_config)
        if isinstance(evaluation, CPUSelfPlayConfig):
            evaluation = kernel_config(dataclasses.replace(
                evaluation, temperature=0.0,
                search=dataclasses.replace(evaluation.search, dirichlet_fraction=0.0)))
        super().__init__(env, apply_fn, value_format, kernel_config(search_config), evaluation)
        self.cpu_config = search_config
        # one pool evaluator for the whole run (its batch tiers compile once); the key only
        # seeds the games' starting states, which are fixed for the games this path plays
        self._games_key = jax.random.PRNGKey(search_config.seed)
        self._pool_evaluator = make_pool_evaluator(env, self.evaluator, self._games_key)

    @classmethod
    def check_env(cls, env: Env) -> None:
        from turbozero.search.cpu import require_extension

        require_extension()  # a clear error naming how to build it when it is missing
        if env.is_simultaneous or env.is_stochastic or env.num_players > 2:
            raise ValueError(f"{env.id}: the CPU path searches deterministic turn-based games "
                             "of at most two players")

    def check_truncated_games(self, truncated_games) -> None:
        if truncated_games is not None:
            raise ValueError("TrainConfig.truncated_games is not wired into the CPU path (its "
                             "games end by the rules or by max_moves as a draw)")

    def check_risk(self, risk) -> None:
        """Per-seat risk is searched by the C++ tree (seat betas per game); the evaluation
        search (the kernel) uses CPUSearchConfig.risk_beta."""

    def collect(self, state, jitted_collect, risk=None):
        """Play `num_games` whole games on the CPU path and write them into the replay rows
        (game g into row g mod num_envs, moves in order), instead of the jitted collector.
        With `risk` (TrainConfig.risk), every game draws its seats' betas at this iteration
        of the schedule, as the jitted collector's new games do."""
        del jitted_collect
        ts = state.train_state
        variables = {"params": ts.params}
        if ts.batch_stats is not None:
            variables["batch_stats"] = ts.batch_stats
        # the C++ search's noise and sampling are seeded per iteration: a resumed run plays
        # the games it would have played
        cfg = dataclasses.replace(
            self.cpu_config, seed=self.cpu_config.seed + int(state.iteration) * 7919)
        seat_betas = None
        if risk is not None:
            key = jax.random.fold_in(self._games_key, int(state.iteration))
            seat_betas = np.asarray(risk.draw(key, state.iteration, cfg.num_games,
                                              self.env.num_players))
        games = cpu_self_play(self.env, self.evaluator, variables, cfg, self._games_key,
                              self._pool_evaluator, seat_betas, state.buffer.form)
        buffer, stats = write_games(state.buffer, games, self.env.num_players)
        return state.replace(buffer=buffer), stats


def write_games(buffer, games, num_players: int):
    """The finished games of `cpu_self_play` into the per-game rings (host-side numpy; the CPU
    path's device is the host). Returns (buffer, CollectStats)."""
    host = jax.device_get(buffer)
    # the array fields; the policy targets and the search record are pytrees, written below
    arrays = {f.name: np.array(getattr(host, f.name)) for f in dataclasses.fields(host)
              if isinstance(getattr(host, f.name), np.ndarray)}
    # AlphaZero's record with a WDL head (algorithms.AlphaZero.search_record_like)
    record = (None if host.search_record is None else
              {k: np.array(v) for k, v in host.search_record.items()})
    # pytree fields, leaf by leaf: what the observation form keeps (the games hold it in that
    # form already) and the policy targets in the policy form
    obs_leaves, obs_def = jax.tree_util.tree_flatten(host.observation)
    obs_leaves = [np.array(x) for x in obs_leaves]
    game_obs = [np.asarray(x) for x in jax.tree_util.tree_leaves(games.observation)]
    target_leaves, target_def = jax.tree_util.tree_flatten(host.policy_target)
    target_leaves = [np.array(x) for x in target_leaves]
    encoded = [np.asarray(x) for x in jax.tree_util.tree_leaves(buffer.policy_form.encode(
        jnp.asarray(games.policy), jnp.asarray(games.legal_action_mask)))]
    num_envs, capacity = arrays["episode_id"].shape
    ptr, writes = int(arrays["ptr"]), int(arrays["num_writes"])
    num_games = len(games.terminated)
    longest = 0
    outcome_sum = np.zeros(num_players, np.float32)
    for g in range(num_games):
        idx = np.flatnonzero(games.game == g)
        row = g % num_envs
        first = ptr + sum(len(np.flatnonzero(games.game == h)) for h in range(row, g, num_envs))
        value = games.value[idx]  # outcome for the player to move
        player = games.player[idx]
        seats = np.arange(num_players)[None]
        returns = np.where(seats == player[:, None], value[:, None], -value[:, None])
        outcome_sum += returns[0]  # seat order: the game's final return of every seat
        for j, i in enumerate(idx):
            col = (first + j) % capacity
            for leaf, new_leaf in zip(obs_leaves, game_obs):
                leaf[row, col] = new_leaf[i]
            for leaf, new_leaf in zip(target_leaves, encoded):
                leaf[row, col] = new_leaf[i]
            if record is not None:
                record["root_wdl"][row, col] = games.root_wdl[i]
                record["soft_value"][row, col] = games.soft_value[i]
            arrays["current_player"][row, col] = player[j]
            arrays["action"][row, col] = games.action[i]
            # seat order, as the kernel's root_values: the mover's value and its negation
            arrays["search_values"][row, col] = np.where(
                seats[0] == player[j], games.root_value[i], -games.root_value[i])
            arrays["written_at"][row, col] = writes + (first - ptr) + j
            arrays["return_before"][row, col] = 0.0
            arrays["returns"][row, col] = returns[j]
            arrays["episode_id"][row, col] = writes * num_games + g
            arrays["written"][row, col] = True
            arrays["has_target"][row, col] = True
        longest = max(longest, first - ptr + len(idx))
    arrays["ptr"] = np.int32((ptr + longest) % capacity)
    arrays["num_writes"] = np.int32(writes + longest)
    arrays.pop("observation", None)
    new = host.replace(**{k: jnp.asarray(v) for k, v in arrays.items()},
                       observation=jax.tree_util.tree_unflatten(
                           obs_def, [jnp.asarray(x) for x in obs_leaves]),
                       policy_target=jax.tree_util.tree_unflatten(
                           target_def, [jnp.asarray(x) for x in target_leaves]),
                       search_record=None if record is None else
                       {k: jnp.asarray(v) for k, v in record.items()})
    new = jax.tree_util.tree_map(
        lambda n, old: jax.device_put(n, old.sharding) if hasattr(old, "sharding") else n,
        new, buffer)
    stats = CollectStats(episodes_finished=jnp.int32(num_games),
                         outcome_sum=jnp.asarray(outcome_sum),
                         positions=jnp.int32(len(games.game)))
    return new, stats


register_algorithm(CPUSelfPlayConfig, CPUAlphaZero)
