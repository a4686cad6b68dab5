"""Issue 18: why the Paco Sako agent played worse on the tree kernel than on mctx.

With 8 simulations over ~20 legal moves most root children end with one visit, so "the most
visited child" at temperature 0 is a tie in most positions (440 of 640 in
benchmarks/experiments/pacosako_kernel_agent.py's comparison). mctx breaks such ties uniformly at random
(`_apply_temperature` then a categorical draw); the kernel took the lowest action id every time.
The tests pin the kernel to mctx: same visits, and a temperature-0 action drawn uniformly among
the most visited children.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.search import MctxPUCT, PUCTRoot, TreeSearchConfig
from turbozero.search import search
from turbozero.search.mctx_policies import MinMaxQ, MctxConfig

ENV = envs.make("pacosako")
BATCH = 64  # copies of one root: each row breaks its tie with its own draw
SIMS = 8


def _flat_apply(variables, obs):
    """An untrained network's extreme: value 0 everywhere and nearly uniform logits, so every
    child looks alike. The logits differ by a little (<= 0.01), never exactly: mctx breaks exact
    ties in selection with 1e-7 random noise, the kernel by the lowest slot, and the trees
    would differ for that reason alone."""
    del variables
    ids = jnp.arange(ENV.num_actions, dtype=jnp.float32)
    logits = 0.01 * jnp.sin(ids * 0.731 + 0.3)
    return jnp.broadcast_to(logits, (obs.shape[0], ENV.num_actions)), jnp.zeros(obs.shape[:1])


@pytest.fixture(scope="module")
def searched():
    """(root visits int[BATCH, A] and actions int[BATCH]) of the kernel (mctx's formulas, no
    noise, temperature 0) and of mctx, from BATCH copies of a Paco Sako position."""
    state = ENV.init(jax.random.PRNGKey(0))
    roots = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (BATCH,) + x.shape), state)
    kernel = TreeSearchConfig(num_simulations=SIMS, selection=MctxPUCT(),
                              root=PUCTRoot(dirichlet_fraction=0.0))
    mctx_cfg = MctxConfig(num_simulations=SIMS, dirichlet_fraction=0.0,
                            q_transform=MinMaxQ())
    run = jax.jit(lambda s, k, c: search(ENV, _flat_apply, None, s, k, c), static_argnums=2)
    k = run(roots, jax.random.PRNGKey(1), kernel)
    m = run(roots, jax.random.PRNGKey(1), mctx_cfg)
    mctx_visits = np.rint(np.asarray(m.policy) * SIMS).astype(int)  # mctx's policy: visits / S
    return (np.asarray(k.stats["root_visits"]), np.asarray(k.action), mctx_visits,
            np.asarray(m.action))


def test_kernel_and_mctx_visit_the_same_children(searched):
    k_visits, _, m_visits, _ = searched
    np.testing.assert_array_equal(k_visits, m_visits)
    # the premise: a tie at the top (8 simulations over more than 8 legal moves)
    assert (k_visits[0] == k_visits[0].max()).sum() > 1


def test_temperature_zero_breaks_ties_at_random_among_the_most_visited(searched):
    k_visits, k_action, _, m_action = searched
    top = np.flatnonzero(k_visits[0] == k_visits[0].max())  # plain reference: the tied set
    for actions in (k_action, m_action):
        assert set(actions.tolist()) <= set(top.tolist())  # always a most visited child
    # the old kernel played top[0] in every row; a uniform draw over len(top) >= 2 children
    # leaves each with BATCH / len(top) expected rows (8 children: 8 each; below 2 has
    # probability ~1e-2 per child under the binomial, so the bound is loose on purpose)
    counts = np.bincount(k_action, minlength=ENV.num_actions)[top]
    assert len(top) >= 2 and counts.min() >= 1, counts
    assert counts.max() <= BATCH // 2, counts
