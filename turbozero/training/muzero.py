"""MuZero with vector values: search on a learned model, K-step unroll, n-step targets
(docs/training.md, "Algorithms"; the set-up of a game that trains with it is on its page).

* Search: the `learned` family of `turbozero.search.search` (the tree kernel on
  `LearnedModel`; Gumbel root with sequential halving, mctx's
  interior selection, Q = r + gamma V(s') per player); the policy target is the improved policy.
* Replay: the library's per-game rings (`turbozero.training.replay`) hold every position, and
  MuZero's replay alone keeps the action played, the search's root values and the write
  counter (`replay_fields`: `replay.trajectory_fields`); `sample` reads windows of K + n + 1
  consecutive positions of one game (`replay.consecutive`) and builds the targets in jit.
* Targets (`value_targets`): n-step TD vectors in seat order, then rotated to the order of the
  player at each position ((me, next, prev): the spec's `np.roll`); rewards per step; past the
  end of the game the value and reward targets are 0 (an absorbing state) and the policy is
  not trained.
* Loss (`muzero_loss`): value and reward MSE, policy cross-entropy to the improved policy,
  EfficientZero's consistency 2 - 2 cos, the unroll steps weighted 1/K and the hidden state's
  gradient halved at each dynamics step (MuZero, Appendix G).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from envs.core import Env, State
from turbozero.networks.muzero import MuZeroNet
from turbozero.networks.value_formats import MoverRelativeValues
from turbozero.search.api import search
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.learned import LearnedModelSearch
from turbozero.search.roots import GumbelRoot
from turbozero.search.selection import MctxPUCT
from turbozero.training import replay
from turbozero.training.algorithms import Algorithm
from turbozero.training.types import SelfPlayTargets


@dataclasses.dataclass(frozen=True)
class MuZeroConfig:
    """The self-play search config of MuZero; its type selects the MuZero algorithm.

    search: the kernel's settings on the learned model (its `discount` is the gamma of the
        search and of the n-step targets alike).
    unroll_steps: K, dynamics steps unrolled in the loss.
    td_steps: n of the n-step value targets.
    value_weight, reward_weight, policy_weight, consistency_weight: loss weights.
    """

    search: TreeSearchConfig = TreeSearchConfig(
        num_simulations=16, root=GumbelRoot(max_considered=8), selection=MctxPUCT())
    unroll_steps: int = 5
    td_steps: int = 10
    value_weight: float = 1.0
    reward_weight: float = 1.0
    policy_weight: float = 1.0
    consistency_weight: float = 2.0  # EfficientZero's lambda_3

    def for_evaluation(self) -> "MuZeroConfig":
        """The learned model's search made deterministic (`search.for_evaluation()`)."""
        return dataclasses.replace(self, search=self.search.for_evaluation())

    def __post_init__(self) -> None:
        if not isinstance(self.search, TreeSearchConfig):
            raise ValueError(f"MuZeroConfig.search must be a TreeSearchConfig, got "
                             f"{type(self.search).__name__}")
        if self.unroll_steps < 1:
            raise ValueError(f"unroll_steps must be >= 1, got {self.unroll_steps}")
        if self.td_steps < 1:
            raise ValueError(f"td_steps must be >= 1, got {self.td_steps}")
        for name in ("value_weight", "reward_weight", "policy_weight", "consistency_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    @property
    def discount(self) -> float:
        return self.search.discount

    def tree_shapes(self, env: Env, states: State, with_wdl: bool = False, *,
                    network=None):
        """The tree the learned model's search of `states` holds (`LearnedModelSearch`'s:
        the memory bound's count); network: `(apply_fn, variables)`."""
        return LearnedModelSearch(self.search).tree_shapes(env, states, with_wdl,
                                                           network=network)


@struct.dataclass
class MuZeroBatch:
    """A training batch of B windows (targets in the mover-relative order of each position)."""

    observation: jax.Array  # [B, K + 1, *obs] positions t .. t + K (consistency targets)
    action: jax.Array  # int32[B, K] actions played from t .. t + K - 1
    policy: jax.Array  # float32[B, K + 1, A] improved-policy targets
    value: jax.Array  # float32[B, K + 1, P] n-step value targets
    reward: jax.Array  # float32[B, K, P] reward of the action from t + k
    valid: jax.Array  # bool[B, K + 1] the position is in the game (not past its end)


def value_targets(rewards: jax.Array, search_values: jax.Array, valid: jax.Array,
                  discount: float, td_steps: int, num_targets: int) -> jax.Array:
    """n-step TD value targets in seat order: float32[B, num_targets, P].

    rewards: float32[B, W - 1, P] reward of the move from window position j (0 past the end).
    search_values: float32[B, W, P] the search's root values; valid: bool[B, W]; W must be at
    least num_targets + td_steps. Target j is
    `sum_{i < n} gamma^i r_{j+i} + gamma^n v_{j+n}` (the bootstrap only where position j + n is
    still in the game; a game that ends before it leaves just the rewards to the end)."""
    n = td_steps
    z = jnp.zeros(rewards.shape[:1] + (num_targets,) + rewards.shape[2:], jnp.float32)
    for i in range(n):
        z = z + (discount ** i) * rewards[:, i:i + num_targets]
    boot = jnp.where(valid[:, n:n + num_targets, None], search_values[:, n:n + num_targets], 0.0)
    return z + (discount ** n) * boot


def step_rewards(returns: jax.Array, valid: jax.Array) -> jax.Array:
    """float32[B, W - 1, P]: the reward of each move from the returns-to-go of a window
    (`returns[j] - returns[j + 1]`, or `returns[j]` for the last move of the game)."""
    after = jnp.where(valid[:, 1:, None], returns[:, 1:], 0.0)
    return jnp.where(valid[:, :-1, None], returns[:, :-1] - after, 0.0)


def make_batch(buffer: replay.ReplayBuffer, key: jax.Array, batch_size: int,
               config: MuZeroConfig, value_format: MoverRelativeValues) -> MuZeroBatch:
    """Sample B positions with a target and build their K-step windows (jittable)."""
    k, n = config.unroll_steps, config.td_steps
    rows, cols = replay.sample_slots(buffer, key, batch_size)
    wcols, valid = replay.consecutive(buffer, rows, cols, k + n + 1)  # [B, W]
    r = rows[:, None]
    rewards = step_rewards(buffer.returns[r, wcols], valid)  # [B, W - 1, P]
    z = value_targets(rewards, buffer.search_values[r, wcols], valid, config.discount, n, k + 1)
    num_players = value_format.num_players
    # players move in fixed rotation, also past the end (where the targets are 0 anyway)
    player = (buffer.current_player[rows, cols][:, None] + jnp.arange(k + 1)) % num_players
    own_valid = valid[:, :k + 1]
    own_rows = jnp.broadcast_to(r, (batch_size, k + 1))
    policy, _ = replay.policy_targets(buffer, own_rows, wcols[:, :k + 1])  # [B, K + 1, A]
    return MuZeroBatch(
        observation=replay.observations(buffer, own_rows, wcols[:, :k + 1]),
        action=jnp.where(valid[:, :k], buffer.action[r, wcols[:, :k]], 0),
        policy=jnp.where(own_valid[..., None], policy, 0.0),
        value=value_format.from_seat_values(z, player),
        reward=value_format.from_seat_values(rewards[:, :k], player[:, :k]),
        valid=own_valid,
    )


def _cosine_loss(pred: jax.Array, target: jax.Array) -> jax.Array:
    """float32[B]: 2 - 2 cos(pred, target), SimSiam / EfficientZero."""
    p = pred / jnp.maximum(jnp.linalg.norm(pred, axis=-1, keepdims=True), 1e-8)
    t = target / jnp.maximum(jnp.linalg.norm(target, axis=-1, keepdims=True), 1e-8)
    return 2.0 - 2.0 * jnp.sum(p * t, axis=-1)


def _scale_gradient(x: jax.Array, scale: float) -> jax.Array:
    return x * scale + jax.lax.stop_gradient(x) * (1.0 - scale)


def muzero_loss(params, train_state, batch: MuZeroBatch, l2_reg_lambda: float = 0.0, *,
                config: MuZeroConfig):
    """`(loss, (metrics, {}))` of a K-step unroll (the `updates.train` signature)."""
    variables = {"params": params}
    apply = train_state.apply_fn
    k_steps = config.unroll_steps
    hidden = apply(variables, batch.observation[:, 0], method="represent")
    totals = {"policy_loss": 0.0, "value_loss": 0.0, "reward_loss": 0.0,
              "consistency_loss": 0.0}
    mask = batch.valid.astype(jnp.float32)  # [B, K + 1]
    for k in range(k_steps + 1):
        weight = 1.0 if k == 0 else 1.0 / k_steps
        logits, value = apply(variables, hidden, method="predict")
        ce = -jnp.sum(batch.policy[:, k] * jax.nn.log_softmax(logits, axis=-1), axis=-1)
        totals["policy_loss"] += weight * jnp.mean(ce * mask[:, k])
        target_v = jnp.clip(batch.value[:, k], -1.0, 1.0)
        totals["value_loss"] += weight * jnp.mean(jnp.sum((value - target_v) ** 2, axis=-1))
        if k == k_steps:
            break
        hidden, reward = apply(variables, hidden, batch.action[:, k], method="dynamics")
        hidden = _scale_gradient(hidden, 0.5)
        w_next = 1.0 / k_steps
        target_r = jnp.clip(batch.reward[:, k], -1.0, 1.0)
        totals["reward_loss"] += w_next * jnp.mean(jnp.sum((reward - target_r) ** 2, axis=-1))
        online = apply(variables, hidden, True, method="project")
        real = apply(variables, batch.observation[:, k + 1], method="represent")
        target = jax.lax.stop_gradient(apply(variables, real, False, method="project"))
        totals["consistency_loss"] += w_next * jnp.mean(
            _cosine_loss(online, target) * mask[:, k + 1])
    loss = (config.policy_weight * totals["policy_loss"]
            + config.value_weight * totals["value_loss"]
            + config.reward_weight * totals["reward_loss"]
            + config.consistency_weight * totals["consistency_loss"])
    l2 = sum(jnp.sum(p ** 2) for p in jax.tree_util.tree_leaves(params))
    loss = loss + l2_reg_lambda * l2
    metrics = {name: jnp.asarray(v, jnp.float32) for name, v in totals.items()}
    metrics["l2_reg"] = l2
    return loss, (metrics, {})


def muzero_network(env: Env, network_config: dict) -> MuZeroNet:
    """MuZero's representation / dynamics / prediction / projection model for `env`, sized by
    `network_config` (the `MuZero` algorithm config's network)."""
    obs = jax.eval_shape(env.observe, env.init(jax.random.PRNGKey(0)))
    cfg = dict(network_config)
    # the sizes a config may set: MuZeroNet's fields but those fixed by the env below (a
    # wrong key is then one line naming the valid ones, not a TypeError from flax)
    fixed = ("num_actions", "num_players", "hidden_shape", "parent", "name")
    options = [f.name for f in dataclasses.fields(MuZeroNet) if f.init and f.name not in fixed]
    unknown = sorted(set(cfg) - set(options))
    if unknown:
        raise ValueError(f"network: the MuZero network has no option {unknown[0]!r}; its "
                         f"options: {', '.join(options)}")
    return MuZeroNet(num_actions=env.num_actions, num_players=env.num_players,
                     hidden_shape=tuple(obs.shape[:2]), **cfg)


class MuZeroAlgorithm(Algorithm):
    """MuZero (Gumbel root) on a learned model with one value per player."""

    def __init__(self, env, apply_fn, value_format, search_config, eval_search_config=None,
                 acting=None):
        if not isinstance(value_format, MoverRelativeValues):
            raise ValueError("MuZero's heads are mover-relative: the game's value format must be "
                             f"MoverRelativeValues, got {value_format!r}")
        if value_format.num_players != env.num_players:
            raise ValueError(f"the value format has {value_format.num_players} players, "
                             f"{env.id} has {env.num_players}")
        super().__init__(env, apply_fn, value_format, search_config, eval_search_config, acting)
        # the trajectory (action played, root values, write order): what the windows read
        self.replay_fields = replay.trajectory_fields(env.num_players)

    def check(self, config=None) -> None:
        if self.env.is_simultaneous or self.env.is_stochastic:
            raise ValueError(f"{self.env.id}: MuZero here searches turn-based deterministic "
                             "games")
        if not getattr(self.env, "fixed_turn_order", False):
            raise ValueError(f"{self.env.id} does not declare fixed_turn_order: the learned "
                             "model moves players in rotation (p + 1) mod P below the root")
        super().check(config)

    def self_play(self, variables, states, key, risk_beta=None):
        result = search(self.env, self.evaluator, variables, states, key,
                        LearnedModelSearch(self.search_config.search), risk_beta)
        return SelfPlayTargets(policy=result.policy, search_values=result.root_values)

    def act(self, variables, states, key, player=None):
        config = self.eval_search_config if player is None else player
        return search(self.env, self.evaluator, variables, states, key,
                      LearnedModelSearch(config.search))

    def sample(self, buffer, key, batch_size):
        return make_batch(buffer, key, batch_size, self.search_config, self.value_format)

    def loss_fn(self, params, train_state, experience):
        return muzero_loss(params, train_state, experience, 0.0,  # Algorithm.loss_fn: no L2
                           config=self.search_config)


__all__ = ["MuZeroConfig", "MuZeroBatch", "MuZeroAlgorithm", "make_batch", "muzero_network",
           "value_targets", "step_rewards", "muzero_loss"]
