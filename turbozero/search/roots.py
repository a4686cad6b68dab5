"""Root policies of the tree kernel: how the root's children are chosen during the search and
how the searched action and policy target come out of the root's statistics.

* `PUCTRoot` — the selection formula of the interior also at the root, with the prior mixed
  with Dirichlet noise over the legal actions only (docs/search.md); the policy target
  is the visit distribution; the action is drawn from visits^(1/tau) (tau = 0: most visited).
* `GumbelRoot` — Gumbel MuZero's root (Danihelka et al. 2022): Gumbel-top-k sampling of the
  considered actions, sequential halving of the simulation budget among them, and the improved
  policy `softmax(logits + sigma(completed Q))` as the policy target, where completed Q fills
  unvisited children with the prior-weighted mixed value and is min-max normalised. Q is the
  root mover's component of the value vectors. Interior nodes keep the configured selection.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.search.noise import mix_legal_noise
from turbozero.search.selection import NodeStats
from turbozero.validation import check_int, check_real


class RootExtra(NamedTuple):
    """Per-search data of the root policy (batched: leading axis B)."""

    gumbel: jax.Array  # float32[B, K] Gumbel draws (zeros for PUCT roots)
    logits: jax.Array  # float32[B, K] log prior of the root slots (-inf on padding)


def _log_prior(prior: jax.Array, valid: jax.Array) -> jax.Array:
    return jnp.where(valid, jnp.log(jnp.maximum(prior, jnp.finfo(prior.dtype).tiny)), -jnp.inf)


@dataclasses.dataclass(frozen=True)
class PUCTRoot:
    """dirichlet_alpha, dirichlet_fraction: root prior `(1 - eps) P + eps Dir(alpha)` over the
    legal actions (`turbozero.search.noise.mix_legal_noise`; docs/search.md: 0.3, 0.25);
    fraction 0 turns the noise off."""

    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25

    def for_evaluation(self) -> "PUCTRoot":
        """The root without Dirichlet noise (evaluation searches deterministically)."""
        return dataclasses.replace(self, dirichlet_fraction=0.0)

    def __post_init__(self) -> None:
        check_real("dirichlet_alpha", self.dirichlet_alpha, above=0)
        check_real("dirichlet_fraction", self.dirichlet_fraction, minimum=0, maximum=1)

    def prepare(self, key, prior: jax.Array, valid: jax.Array, num_simulations: int):
        """(root prior float32[B, K], RootExtra) before the first simulation."""
        del num_simulations
        prior = mix_legal_noise(key, prior, valid, self.dirichlet_alpha,
                                self.dirichlet_fraction)
        return prior, RootExtra(gumbel=jnp.zeros_like(prior), logits=_log_prior(prior, valid))

    def scores(self, selection, stats: NodeStats, extra: RootExtra, raw_value,
               num_simulations: int, risk_beta=None) -> jax.Array:
        """float32[K] root scores of one tree (unbatched `extra`): the interior formula."""
        del extra, raw_value, num_simulations
        return selection.scores(stats, risk_beta)


def considered_visits_schedule(max_considered: int, num_simulations: int) -> tuple[int, ...]:
    """Sequential halving as a sequence: entry i is the visit count a root child must have to
    be eligible for simulation i. Phases give every remaining action
    `max(1, floor(n / (ceil(log2 m) * m_phase)))` more visits, then halve the set (not below 2).
    """
    if max_considered <= 1:
        return tuple(range(num_simulations))
    phases = math.ceil(math.log2(max_considered))
    out: list[int] = []
    m = max_considered
    level = 0  # visits each remaining action has so far
    while len(out) < num_simulations:
        for _ in range(max(1, num_simulations // (phases * m))):
            out.extend([level] * m)
            level += 1
        m = max(2, m // 2)
    return tuple(out[:num_simulations])


@dataclasses.dataclass(frozen=True)
class GumbelRoot:
    """max_considered: actions sampled without replacement (Gumbel-top-k) at the root.
    c_visit, c_scale: sigma(q) = (c_visit + max visits) * c_scale * q (mctx's defaults 50, 0.1).
    gumbel_scale: scale of the Gumbel draws (0: deterministic, the top-k of the prior)."""

    max_considered: int = 16
    c_visit: float = 50.0
    c_scale: float = 0.1
    gumbel_scale: float = 1.0

    def for_evaluation(self) -> "GumbelRoot":
        """The root without Gumbel draws: the top-k of the prior (deterministic)."""
        return dataclasses.replace(self, gumbel_scale=0.0)

    def __post_init__(self) -> None:
        check_int("max_considered", self.max_considered, minimum=1)
        check_real("c_visit", self.c_visit, minimum=0)
        check_real("c_scale", self.c_scale, above=0)
        check_real("gumbel_scale", self.gumbel_scale, minimum=0)

    def prepare(self, key, prior: jax.Array, valid: jax.Array, num_simulations: int):
        g = self.gumbel_scale * jax.random.gumbel(key, prior.shape)
        return prior, RootExtra(gumbel=jnp.where(valid, g, 0.0), logits=_log_prior(prior, valid))

    def table(self, num_simulations: int) -> np.ndarray:
        """int32[max_considered + 1, num_simulations]: row m is the schedule with m actions."""
        rows = [considered_visits_schedule(m, num_simulations)
                for m in range(self.max_considered + 1)]
        return np.asarray(rows, np.int32)

    def completed_q(self, stats: NodeStats, raw_value: jax.Array) -> jax.Array:
        """float32[K] sigma(completed Q) of one root (Gumbel MuZero, Appendix D)."""
        visited = stats.visits > 0
        n_total = stats.visits.sum()
        p = jnp.maximum(stats.prior, jnp.finfo(jnp.float32).tiny)
        p_visited = jnp.sum(jnp.where(visited, p, 0.0))
        weighted_q = jnp.sum(jnp.where(visited, p * stats.q_mean, 0.0)) / jnp.where(
            p_visited > 0, p_visited, 1.0)
        mixed = (raw_value + n_total * weighted_q) / (n_total + 1)
        q = jnp.where(visited, stats.q_mean, mixed)
        lo = jnp.min(jnp.where(stats.valid, q, jnp.inf))
        hi = jnp.max(jnp.where(stats.valid, q, -jnp.inf))
        q = (q - lo) / jnp.maximum(hi - lo, 1e-8)
        return (self.c_visit + stats.visits.max()) * self.c_scale * q

    def scores(self, selection, stats: NodeStats, extra: RootExtra, raw_value,
               num_simulations: int, risk_beta=None) -> jax.Array:
        """float32[K] root scores of one tree: the best considered child of sequential halving
        (`risk_beta` is for the interior's selection; the Gumbel root does not use it).

        Children in flight (virtual loss, L > 1) count as visited, so the leaves of one step
        follow the schedule as L sequential simulations would."""
        del selection, risk_beta
        table = jnp.asarray(self.table(num_simulations))  # [m + 1, S]
        visits_now = stats.visits + stats.virtual_loss  # [K]
        sim = jnp.minimum(visits_now.sum(), num_simulations - 1)
        m = jnp.minimum(self.max_considered, stats.valid.sum())
        considered = table[m, sim]
        return self.considered_score(visits_now, considered, extra,
                                     self.completed_q(stats, raw_value))

    def considered_score(self, visits_now, considered_visit, extra: RootExtra, sigma_q):
        """float32[K]: Gumbel + logits + sigma(Q) where the child has the considered visit count,
        -inf elsewhere."""
        logits = extra.logits - jnp.max(extra.logits)
        score = jnp.maximum(-1e9, extra.gumbel + logits + sigma_q)
        return jnp.where(visits_now == considered_visit, score, -jnp.inf)
