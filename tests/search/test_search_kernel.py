"""The tree kernel (turbozero/search/kernel.py) against a plain-Python search written here, and
against mctx.

The reference below transcribes the formulas of docs/search.md ("The tree kernel") on a Python
tree of dict-like nodes, one simulation path at a time, calling the same model with batches of
one; the kernel must agree with it visit for visit on every node of the tree.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import envs
from turbozero.search import SearchResult, mctx_policies, search
from turbozero.search.kernel import TreeSearchConfig, tree_search
from turbozero.search.model import EnvModel, ModelOutput
from turbozero.search.roots import GumbelRoot, PUCTRoot
from turbozero.search.selection import MctxPUCT, SpecPUCT
from turbozero.search.tree import compact_children

from kernel_reference import (_kernel_paths, _kernel_tree, _model_root, _row,
                              check_against_reference)

TTT = envs.make("pgx/tic_tac_toe")
CHESS = envs.make("chess")
QUIET = PUCTRoot(dirichlet_fraction=0.0)


# ----------------------------------------------------------------------------- evaluators
def _hash_apply(num_actions):
    """Deterministic stand-in for a network: logits and value are smooth hashes of the
    observation, so positions differ and exact ties are unlikely."""

    def apply(variables, obs):
        del variables
        flat = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        w1 = jnp.sin(jnp.arange(flat.shape[1], dtype=jnp.float32) * 1.618 + 0.3)
        w2 = jnp.cos(jnp.arange(flat.shape[1], dtype=jnp.float32) * 2.718 + 0.7)
        s1, s2 = flat @ w1, flat @ w2  # [M]
        ids = jnp.arange(num_actions, dtype=jnp.float32)
        logits = 1.5 * jnp.sin(ids[None] * 0.731 + s1[:, None])
        return logits, 0.8 * jnp.sin(3.0 * s2 + 0.1)

    return apply


TTT_EVAL = mctx_policies.NetworkEvaluator(_hash_apply(TTT.num_actions))
CHESS_EVAL = mctx_policies.NetworkEvaluator(_hash_apply(CHESS.num_actions))
TTT_MODEL = EnvModel(TTT, TTT_EVAL)
CHESS_MODEL = EnvModel(CHESS, CHESS_EVAL)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _kernel(model, states, key, config):
    return tree_search(model, None, states, key, config)


def _stack(states):
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)


def _play(env, actions, key=0):
    s = env.init(jax.random.PRNGKey(key))
    for a in actions:
        s = env.step(s, jnp.int32(a))
    return s


TTT_STATES = _stack([_play(TTT, []), _play(TTT, [4, 0]), _play(TTT, [0, 3, 1, 4])])

REFERENCE_CONFIGS = {
    "spec": TreeSearchConfig(num_simulations=40, root=QUIET),
    "fpu": TreeSearchConfig(num_simulations=40, root=QUIET,
                            selection=SpecPUCT(c_puct=1.0, fpu_base=0.6)),
    "risk+": TreeSearchConfig(num_simulations=40, root=QUIET,
                              selection=SpecPUCT(risk_beta=1.5, fpu_base=0.2)),
    "risk-": TreeSearchConfig(num_simulations=40, root=QUIET,
                              selection=SpecPUCT(risk_beta=-1.0)),
    "L4": TreeSearchConfig(num_simulations=42, leaves_per_step=4, root=QUIET,
                           selection=SpecPUCT(fpu_base=0.3)),
    "gumbel": TreeSearchConfig(num_simulations=40, root=GumbelRoot(max_considered=4)),
    "gumbel-L3": TreeSearchConfig(num_simulations=40, leaves_per_step=3,
                                  root=GumbelRoot(max_considered=8)),
    "mctx": TreeSearchConfig(num_simulations=40, root=QUIET, selection=MctxPUCT()),
    # several levels per loop trip (turbozero.search.loops): the same tree
    "spec-unroll2": TreeSearchConfig(num_simulations=40, root=QUIET, walk_unroll=2),
    "L4-unroll3": TreeSearchConfig(num_simulations=42, leaves_per_step=4, root=QUIET,
                                   selection=SpecPUCT(fpu_base=0.3), walk_unroll=3),
}


@pytest.mark.parametrize("name", sorted(REFERENCE_CONFIGS))
def test_kernel_matches_python_reference_on_tic_tac_toe(name):
    check_against_reference(TTT_MODEL, TTT_STATES, REFERENCE_CONFIGS[name])


# ------------------------------------------------------------------------ mctx golden check
@functools.partial(jax.jit, static_argnums=(0, 1, 3))
def _mctx_search(env, evaluator, states, num_simulations):
    out = mctx.muzero_policy(
        params=None, rng_key=jax.random.PRNGKey(0),
        root=mctx_policies.make_root(evaluator, None, states, None),
        recurrent_fn=mctx_policies.make_recurrent_fn(env, evaluator),
        num_simulations=num_simulations, invalid_actions=~states.legal_action_mask,
        qtransform=mctx.qtransform_by_parent_and_siblings, dirichlet_fraction=0.0)
    t = out.search_tree
    return t.node_visits, t.parents, t.action_from_parent, t.node_values[:, 0]


def _mctx_tree(visits, parents, actions, b):
    paths, out = {0: ()}, {(): int(visits[b, 0])}
    for n in range(1, visits.shape[1]):
        if visits[b, n] == 0:
            continue
        paths[n] = paths[int(parents[b, n])] + (int(actions[b, n]),)
        out[paths[n]] = int(visits[b, n])
    return out


def _check_against_mctx(env, evaluator, states, num_simulations):
    config = TreeSearchConfig(num_simulations=num_simulations, root=QUIET, selection=MctxPUCT())
    result, tree = _kernel(EnvModel(env, evaluator), states, jax.random.PRNGKey(0), config)
    visits, parents, actions, root_value = map(
        np.asarray, _mctx_search(env, evaluator, states, num_simulations))
    for b in range(visits.shape[0]):
        ours = _kernel_tree(tree, b)
        # mctx expands the (absorbing, zero-valued) children of terminal states; the kernel
        # revisits the terminal node instead. The visit counts of every other node agree.
        ends = [path for path, n in _kernel_paths(tree, b).items()
                if bool(tree.terminal[b, n])]
        theirs = {path: v for path, v in _mctx_tree(visits, parents, actions, b).items()
                  if not any(len(path) > len(e) and path[:len(e)] == e for e in ends)}
        assert ours == theirs, f"game {b}"
    np.testing.assert_allclose(np.asarray(result.root_value), root_value, rtol=1e-4, atol=1e-5)


def test_mctx_formulas_give_mctx_trees_on_tic_tac_toe():
    _check_against_mctx(TTT, TTT_EVAL, TTT_STATES, 48)


def test_walk_unroll_changes_the_loop_trips_not_the_search():
    """Levels per loop trip (issue 46: on a GPU each trip is a host round trip) leave every
    array of the tree and the result bit for bit as they are; the counted trips fall."""
    out = {}
    for unroll in (1, 3):
        config = TreeSearchConfig(num_simulations=40, root=QUIET, walk_unroll=unroll)
        out[unroll] = _kernel(TTT_MODEL, TTT_STATES, jax.random.PRNGKey(2), config)
    (r1, t1), (r3, t3) = out[1], out[3]
    for a, b in zip(jax.tree_util.tree_leaves(t1), jax.tree_util.tree_leaves(t3)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for name in ("action", "policy", "root_values"):
        np.testing.assert_array_equal(np.asarray(getattr(r1, name)), np.asarray(getattr(r3, name)))
    trips1, trips3 = (int(r.stats["loop_trips"][0]) for r in (r1, r3))
    # every simulation walks down (at least the root's trip) and backs up (at least the leaf's)
    assert trips1 >= 2 * 40 and trips3 < trips1
    # the walks' depth bounds the trips: depth + 1 levels down and up per simulation
    depth = int(np.asarray(r1.stats["max_depth"]).max())
    assert trips1 <= 2 * 40 * (depth + 1)
    assert trips3 <= 2 * 40 * (-(-(depth + 1) // 3))
    with pytest.raises(ValueError, match="walk_unroll"):
        TreeSearchConfig(walk_unroll=0)


CHESS_STATES = _stack([
    _play(CHESS, []),
    CHESS.from_fen("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3"),
])


@pytest.mark.slow  # a chess compilation per option: 20-60 s each on 2 shared cores
@pytest.mark.parametrize("config", [
    TreeSearchConfig(num_simulations=32, leaves_per_step=4, root=QUIET,
                     selection=SpecPUCT(fpu_base=0.3, risk_beta=0.5)),
    TreeSearchConfig(num_simulations=32, root=GumbelRoot(max_considered=8)),
], ids=["fpu-risk-L4", "gumbel"])
def test_kernel_matches_python_reference_on_chess(config):
    check_against_reference(CHESS_MODEL, CHESS_STATES, config)


@pytest.mark.slow  # ~45 s on 2 cores, mostly compiling mctx's chess search
def test_mctx_formulas_give_mctx_trees_on_chess():
    _check_against_mctx(CHESS, CHESS_EVAL, CHESS_STATES, 32)


# ------------------------------------------------------------- explicit game trees as models
class TableModel:
    """A model of an explicit game tree: the embedding is a node id (int32[M]); each node has
    a player, a terminal flag, children by action (-1 illegal), the reward vector of its
    incoming edge, a value vector and prior logits. Hashable by identity, so jit may close
    over it; written here so that the kernel is tested on more than two players."""

    def __init__(self, player, terminal, children, reward, value, logits):
        self.player = jnp.asarray(player, jnp.int32)  # [T]
        self.terminal = jnp.asarray(terminal, bool)  # [T]
        self.children = jnp.asarray(children, jnp.int32)  # [T, A]
        self.reward = jnp.asarray(reward, jnp.float32)  # [T, P]
        self.value = jnp.asarray(value, jnp.float32)  # [T, P]
        self.logits = jnp.asarray(logits, jnp.float32)  # [T, A]
        self.num_actions = self.children.shape[1]
        self.num_players = self.reward.shape[1]
        self.max_children = self.num_actions

    def _out(self, node):
        return ModelOutput(legal=self.children[node] >= 0, prior_logits=self.logits[node],
                           value=jnp.where(self.terminal[node][:, None], 0.0, self.value[node]),
                           player=self.player[node], terminal=self.terminal[node])

    def root(self, params, node):
        return node, self._out(node)

    def step(self, params, key, node, action):
        child = self.children[node, action]
        return child, self.reward[child], self._out(child)


def _full_tree_game(branching, depth, num_players, seed, leaf_rewards=None, values=True):
    """Every node has `branching` actions; players move in turn; leaves at `depth` are terminal
    with reward vectors (random unless given); interior values and priors are random."""
    rng = np.random.default_rng(seed)
    player, terminal, children, reward, parent_of = [0], [False], [], [np.zeros(num_players)], [-1]
    level, d = [0], 0
    while d < depth:
        nxt = []
        for n in level:
            kids = []
            for _ in range(branching):
                kids.append(len(player))
                player.append((d + 1) % num_players)
                terminal.append(d + 1 == depth)
                reward.append(np.zeros(num_players))
                nxt.append(kids[-1])
            children.append((n, kids))
        level, d = nxt, d + 1
    table = np.full((len(player), branching), -1)
    for n, kids in children:
        table[n] = kids
    leaves = [n for n in range(len(player)) if terminal[n]]
    lr = rng.uniform(-1, 1, (len(leaves), num_players)) if leaf_rewards is None else leaf_rewards
    for n, r in zip(leaves, lr):
        reward[n] = np.asarray(r)
    value = rng.uniform(-0.5, 0.5, (len(player), num_players)) if values else np.zeros(
        (len(player), num_players))
    logits = rng.normal(0, 1, (len(player), branching)) if values else np.zeros(
        (len(player), branching))
    return TableModel(player, terminal, table, np.stack(reward), value, logits), table, lr


THREE = _full_tree_game(3, 4, 3, seed=7)[0]
THREE_ROOTS = jnp.zeros((2,), jnp.int32)


@pytest.mark.parametrize("config", [
    TreeSearchConfig(num_simulations=60, root=QUIET),
    TreeSearchConfig(num_simulations=60, leaves_per_step=3, root=QUIET,
                     selection=SpecPUCT(risk_beta=0.8, fpu_base=0.2)),
    TreeSearchConfig(num_simulations=60, root=GumbelRoot(max_considered=2)),
    # Gumbel MuZero's set-up (issue 20): Gumbel root, mctx's interior, discounted returns
    TreeSearchConfig(num_simulations=60, root=GumbelRoot(max_considered=3), selection=MctxPUCT(),
                     discount=0.9),
    TreeSearchConfig(num_simulations=60, leaves_per_step=3, root=QUIET,
                     selection=SpecPUCT(risk_beta=0.8, fpu_base=0.2), discount=0.8),
], ids=["spec", "L3-risk", "gumbel", "gumbel-muzero-discount", "L3-risk-discount"])
def test_kernel_matches_python_reference_with_three_players(config):
    check_against_reference(THREE, THREE_ROOTS, config)


def _three_player_outcomes(seed):
    """float[27, 3] leaf rewards of a 3-ply game (players 0, 1, 2 move once each, 3 actions):
    players 0 and 1 get an amount fixed by the first two moves, player 2 one per leaf, so each
    mover's Q is exact once the movers below it have settled."""
    rng = np.random.default_rng(seed)
    a01 = rng.uniform(-1, 1, (3, 3, 2))
    a2 = rng.uniform(-1, 1, (3, 3, 3))
    return np.asarray([[*a01[i // 9, (i // 3) % 3], a2[i // 9, (i // 3) % 3, i % 3]]
                       for i in range(27)])


def test_three_players_each_pick_their_own_best():
    """Zero values, flat priors: each mover ends up on the child best for its own component
    (max^n): the root plays the max^n move, which is not the move towards player 0's best
    outcome (player 1 would not let it get there), players 1 and 2 below spend their visits on
    their own best. Seed 5: every mover's best beats its second by >= 0.2."""
    outcomes = _three_player_outcomes(5)
    model, table, _ = _full_tree_game(3, 3, 3, seed=0, leaf_rewards=outcomes, values=False)
    best1 = [int(np.argmax(outcomes[c * 9:(c + 1) * 9:3, 1])) for c in range(3)]
    best = int(np.argmax([outcomes[c * 9 + 3 * best1[c], 0] for c in range(3)]))
    assert best != int(np.argmax(outcomes[:, 0])) // 9
    config = TreeSearchConfig(num_simulations=300, root=QUIET)
    result, tree = _kernel(model, jnp.zeros((1,), jnp.int32), jax.random.PRNGKey(0), config)
    assert int(result.action[0]) == best
    paths = _kernel_paths(tree, 0)
    visits = np.asarray(tree.node_visits[0])
    for path, n in paths.items():
        kids = [paths.get(path + (a,)) for a in range(3)]
        if len(path) in (1, 2) and visits[n] >= 30 and all(k is not None for k in kids):
            leaf0 = path[0] * 9 + (path[1] * 3 if len(path) == 2 else 0)
            step = 3 if len(path) == 1 else 1
            mine = outcomes[leaf0:leaf0 + 3 * step:step, len(path)]  # the mover's outcomes
            assert int(np.argmax(visits[kids])) == int(np.argmax(mine)), path


def test_risk_beta_prefers_or_avoids_variance():
    """Root (player 0): action 0 leads to outcomes (0, 0) or (0, 0), action 1 to (+0.6, 0) or
    (-0.6, 0). Player 1 chooses there and is indifferent, so both children have mean ~0 and
    action 1 has variance 0.36: beta > 0 visits it more, beta < 0 less."""
    player = [0, 1, 1, 0, 0, 0, 0]
    terminal = [False, False, False, True, True, True, True]
    children = [[1, 2], [3, 4], [5, 6], [-1, -1], [-1, -1], [-1, -1], [-1, -1]]
    reward = [[0, 0]] * 5 + [[0.6, 0], [-0.6, 0]]
    model = TableModel(player, terminal, children, reward, np.zeros((7, 2)), np.zeros((7, 2)))
    roots = jnp.zeros((1,), jnp.int32)
    visits = {}
    for beta in (-1.0, 0.0, 1.0):
        config = TreeSearchConfig(num_simulations=60, root=QUIET,
                                  selection=SpecPUCT(risk_beta=beta))
        result, _ = _kernel(model, roots, jax.random.PRNGKey(0), config)
        visits[beta] = np.asarray(result.stats["root_visits"][0])
        if beta:  # spec §5.10 with only the risky child's variance: above 0 for beta > 0
            assert (float(result.stats["risk_value"][0]) > 0) == (beta > 0)
    assert abs(int(visits[0.0][1]) - int(visits[0.0][0])) <= 2
    assert visits[1.0][1] > visits[1.0][0] + 10
    assert visits[-1.0][1] + 10 < visits[-1.0][0]


# ------------------------------------------------------------------------------ chess play
def _uniform_chess(variables, obs):
    return jnp.zeros((obs.shape[0], CHESS.num_actions)), jnp.zeros((obs.shape[0],))


UNIFORM_CHESS = EnvModel(CHESS, mctx_policies.NetworkEvaluator(_uniform_chess))


def _mates_after(fen, uci):
    import chess

    board = chess.Board(fen)
    board.push_uci(uci)
    if board.is_checkmate():
        return "mates"
    for reply in list(board.legal_moves):
        board.push(reply)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return "allows mate"
    return "safe"


MATE_FENS = ["6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "r5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1"]
AVOID_FENS = ["r5k1/5ppp/8/8/8/8/5PPP/1R4K1 w - - 0 1", "1r4k1/5ppp/8/8/8/8/5PPP/R5K1 b - - 0 1"]


@pytest.mark.slow  # 400 chess simulations x 4 games and a chess compilation: 40-75 s
def test_chess_mate_in_one_found_and_walking_into_one_avoided_by_both_colours():
    fens = MATE_FENS + AVOID_FENS
    states = _stack([CHESS.from_fen(f) for f in fens])
    config = TreeSearchConfig(num_simulations=400, root=QUIET)
    result, _ = _kernel(UNIFORM_CHESS, states, jax.random.PRNGKey(0), config)
    verdicts = [_mates_after(f, envs.chess.decode_action(CHESS.from_fen(f), int(a)))
                for f, a in zip(fens, np.asarray(result.action))]
    assert verdicts == ["mates", "mates", "safe", "safe"]
    # the bad moves were found out: every rook move off the back rank was refuted
    assert float(result.root_value[0]) > 0.9 and float(result.root_value[1]) > 0.9


@pytest.mark.slow  # the large preset's evaluation search, 800 simulations x 4 chess games
def test_chess_preset_search_finds_and_avoids_mate_in_one_for_both_colours():
    """The same positions through the `large` chess preset's own search (c_puct 1.5,
    fpu_base 1.0, its evaluation form: no noise) with a uniform network."""
    from turbozero.presets import get_preset
    from turbozero.training.algorithms import evaluation_search

    config = evaluation_search(get_preset("chess", "large").algorithm.search)
    assert (config.selection.c_puct, config.selection.fpu_base) == (1.5, 1.0)
    assert config.num_simulations == 800
    fens = MATE_FENS + AVOID_FENS
    states = _stack([CHESS.from_fen(f) for f in fens])
    result, _ = _kernel(UNIFORM_CHESS, states, jax.random.PRNGKey(0), config)
    verdicts = [_mates_after(f, envs.chess.decode_action(CHESS.from_fen(f), int(a)))
                for f, a in zip(fens, np.asarray(result.action))]
    assert verdicts == ["mates", "mates", "safe", "safe"]


# ------------------------------------------------------------------ root noise, bounds, API
@pytest.mark.slow  # two chess compilations: 40-110 s on 2 shared cores
def test_root_noise_shows_in_the_visits_at_the_chess_start():
    """Uniform priors, 256 simulations: without noise each of the 20 moves gets ~1/20 of the
    visits; Dir(0.3) over the legal moves at 25% lifts the favoured move to about twice that."""
    states = jax.vmap(CHESS.init)(jax.random.split(jax.random.PRNGKey(0), 8))
    top = {}
    for frac in (0.0, 0.25):
        config = TreeSearchConfig(num_simulations=256,
                                  root=PUCTRoot(dirichlet_alpha=0.3, dirichlet_fraction=frac))
        result, _ = _kernel(UNIFORM_CHESS, states, jax.random.PRNGKey(1), config)
        top[frac] = np.asarray(result.policy).max(-1)
    assert top[0.0].max() < 0.06, top[0.0]
    assert top[0.25].mean() > 0.09, top[0.25]


def test_more_legal_actions_than_k_keeps_the_highest_priors():
    logits = jnp.array([[0.0, 3.0, 1.0, 2.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    legal = jnp.array([[True, True, True, True, False], [True, True, True, True, True]])
    actions, prior = map(np.asarray, compact_children(legal, logits, 2))
    assert actions.tolist() == [[1, 3], [0, 1]]  # id order; ties: the lowest ids
    np.testing.assert_allclose(prior[0], np.exp([3.0, 2.0]) / np.exp([3.0, 2.0]).sum(),
                               rtol=1e-6)
    np.testing.assert_allclose(prior[1], [0.5, 0.5])
    # in a search: the root's visits land on the 3 highest-prior legal moves only
    config = TreeSearchConfig(num_simulations=12, root=QUIET, max_children=3)
    result, _ = _kernel(TTT_MODEL, TTT_STATES, jax.random.PRNGKey(0), config)
    _, out = _model_root(TTT_MODEL, None, TTT_STATES)
    for b in range(3):
        lg = np.where(np.asarray(out.legal[b]), np.asarray(out.prior_logits[b]), -np.inf)
        top3 = set(np.argsort(-lg, kind="stable")[:3].tolist())
        assert set(np.flatnonzero(np.asarray(result.stats["root_visits"][b]))) <= top3


@pytest.mark.parametrize("make, match", [
    (lambda: TreeSearchConfig(num_simulations=0), "num_simulations"),
    (lambda: TreeSearchConfig(num_simulations=4, leaves_per_step=5), "leaves_per_step"),
    (lambda: TreeSearchConfig(leaves_per_step=0), "leaves_per_step"),
    (lambda: TreeSearchConfig(max_children=0), "max_children"),
    (lambda: TreeSearchConfig(selection="puct"), "selection"),
    (lambda: SpecPUCT(c_puct=0.0), "c_puct"),
    (lambda: SpecPUCT(fpu_base=-0.1), "fpu_base"),
    (lambda: SpecPUCT(q_bounds=(1.0, -1.0)), "q_bounds"),
    (lambda: MctxPUCT(pb_c_init=0.0), "pb_c_init"),
    (lambda: PUCTRoot(dirichlet_alpha=0.0), "dirichlet_alpha"),
    (lambda: PUCTRoot(dirichlet_fraction=1.5), "dirichlet_fraction"),
    (lambda: GumbelRoot(max_considered=0), "max_considered"),
    (lambda: EnvModel(envs.make("pyrat"), TTT_EVAL), "simultaneous"),
])
def test_invalid_settings_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_search_interface_runs_the_kernel_and_checks_k():
    config = TreeSearchConfig(num_simulations=24, root=QUIET)
    out = jax.jit(lambda s, k: search(TTT, TTT_EVAL, None, s, k, config))(
        TTT_STATES, jax.random.PRNGKey(5))
    result, _ = _kernel(TTT_MODEL, TTT_STATES, jax.random.PRNGKey(5), config)
    assert isinstance(out, SearchResult)
    visits = np.asarray(result.stats["root_visits"])  # tau = 0: a most visited action (ties: random)
    np.testing.assert_array_equal(np.asarray(out.stats["root_visits"]), visits)
    np.testing.assert_array_equal(visits[np.arange(len(visits)), np.asarray(out.action)],
                                  visits.max(-1))
    np.testing.assert_allclose(np.asarray(out.policy).sum(-1), 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="max_children"):
        search(TTT, TTT_EVAL, None, TTT_STATES, jax.random.PRNGKey(5),
                             TreeSearchConfig(num_simulations=4, max_children=8))


# ------------------------------------------------------------------------------ tree reuse
def test_reused_subtree_equals_a_fresh_search_of_the_same_visits():
    """S1 simulations, play the most visited move, carry its subtree (N_c visits) and search
    S2 more: the tree equals a fresh search from the child with N_c - 1 + S2 simulations
    (no root noise: a subtree's statistics depend only on the visits that entered it)."""
    from turbozero.search.reuse import reuse_subtree

    s1, s2, cap = 30, 20, 60
    first = TreeSearchConfig(num_simulations=s1, root=QUIET,
                             extra_nodes=cap - s1)
    second = TreeSearchConfig(num_simulations=s2, root=QUIET,
                              extra_nodes=cap - s2)
    states = TTT_STATES
    result, tree = _kernel(TTT_MODEL, states, jax.random.PRNGKey(0), first)
    action = result.action
    carried = jax.jit(reuse_subtree, static_argnums=2)(tree, action, s2)
    nxt = jax.vmap(TTT.step)(states, action)
    visits = np.asarray(carried.node_visits[:, 0])
    assert np.all(visits >= 2) and np.all(np.asarray(carried.next_node) >= 1)
    again, tree2 = jax.jit(lambda s, k, t: tree_search(TTT_MODEL, None, s, k, second, tree=t))(
        nxt, jax.random.PRNGKey(1), carried)
    for b in range(3):
        fresh_cfg = TreeSearchConfig(num_simulations=int(visits[b]) - 1 + s2, root=QUIET)
        _, fresh = _kernel(TTT_MODEL, _row(nxt, b), jax.random.PRNGKey(2), fresh_cfg)
        assert _kernel_tree(tree2, b) == _kernel_tree(fresh, 0), f"game {b}"
    # the carried visits stay: the second search's root has N_c + S2 visits for S2 evaluations
    np.testing.assert_array_equal(np.asarray(tree2.node_visits[:, 0]), visits + s2)
    assert np.all(np.asarray(tree2.next_node) <= np.asarray(carried.next_node) + s2)


@pytest.mark.slow  # ~1 min on 2 cores, mostly compiling mctx's Paco Sako search
def test_mctx_formulas_give_mctx_trees_on_pacosako_chains():
    """Paco Sako keeps the mover through a lift and its place: the kernel's tree still equals
    mctx's (which uses discount +1 there) at a lift and at the place that follows it."""
    env = envs.make("pacosako")
    evaluator = mctx_policies.NetworkEvaluator(_hash_apply(env.num_actions))
    s, picked = env.init(jax.random.PRNGKey(3)), []
    step = jax.jit(env.step)
    for i in range(27):
        legal = np.flatnonzero(np.asarray(s.legal_action_mask))
        s = step(s, jnp.int32(legal[(i * 7919) % len(legal)]), jax.random.PRNGKey(i))
        if i in (11, 12, 25, 26):
            picked.append(s)
    movers = [int(x.current_player) for x in picked]
    assert movers == [0, 0, 1, 1]  # each pair: a lift, then the same player's place
    _check_against_mctx(env, evaluator, _stack(picked), 48)


# ------------------------------------------------------------------ per-seat risk (issue 19)
def test_per_seat_risk_betas_follow_the_reference_and_equal_the_static_beta():
    """`tree_search(risk_beta=[B, P])`: each seat selects with its own beta. Equal betas give
    the tree of the selection's static beta; unequal ones (one side risk-seeking, the other
    averse, 3 players too) give the plain-Python reference's tree."""
    import dataclasses as dc

    base = TreeSearchConfig(num_simulations=60, leaves_per_step=3, root=QUIET,
                            selection=SpecPUCT(fpu_base=0.2))
    static = dc.replace(base, selection=SpecPUCT(fpu_base=0.2, risk_beta=0.8))
    same = jnp.full((2, 3), 0.8)
    r_static, t_static = check_against_reference(THREE, THREE_ROOTS, static)
    r_same, t_same = check_against_reference(THREE, THREE_ROOTS, base, risk=same)
    for b in range(2):
        assert _kernel_tree(t_same, b) == _kernel_tree(t_static, b)
    np.testing.assert_allclose(np.asarray(r_same.stats["risk_value"]),
                               np.asarray(r_static.stats["risk_value"]), rtol=1e-6)
    mixed = jnp.array([[1.5, -1.0, 0.0], [-0.7, 0.0, 2.0]])
    r_mixed, t_mixed = check_against_reference(THREE, THREE_ROOTS, base, risk=mixed)
    assert any(_kernel_tree(t_mixed, b) != _kernel_tree(t_same, b) for b in range(2))
    # the root's soft value uses the root mover's beta (seat 0 here: 1.5 and -0.7)
    assert np.all(np.asarray(r_mixed.stats["risk_value"]) != 0.0)
    zero = check_against_reference(THREE, THREE_ROOTS, base, risk=jnp.zeros((2, 3)))[0]
    np.testing.assert_array_equal(np.asarray(zero.stats["risk_value"]), 0.0)
    with pytest.raises(ValueError, match="risk_beta must be"):
        tree_search(THREE, None, THREE_ROOTS, jax.random.PRNGKey(0), base,
                    risk_beta=jnp.zeros((2, 2)))


# --------------------------------------------------------------------------- root WDL average
def _hash_wdl_apply(num_actions):
    """`_hash_apply` with three outputs: hashed [win, draw, loss] logits."""
    base = _hash_apply(num_actions)

    def apply(variables, obs):
        logits, v = base(variables, obs)
        flat = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        d = jnp.cos(flat @ jnp.sin(jnp.arange(flat.shape[1], dtype=jnp.float32) * 0.577))
        return logits, jnp.stack([2.0 * v, d, -2.0 * v], axis=-1)

    return apply


def _reference_root_wdl(tree, b, apply):
    """[W, D, L] for the root mover: every simulation's leaf and the root's own evaluation,
    re-evaluated here. A non-terminal node was a leaf once (L = 1); a terminal node once per
    visit, with its outcome from python-chess (checkmate: the mover lost; else a draw)."""
    import chess

    root_player = int(tree.player[b, 0])
    total = np.zeros(3)
    for n in range(int(tree.next_node[b])):
        state = jax.tree_util.tree_map(lambda x: x[b, n], tree.embedding)
        board = chess.Board(envs.chess.to_fen(state))
        if bool(tree.terminal[b, n]):
            wdl = np.array([0.0, 0.0, 1.0]) if board.is_checkmate() else np.array([0.0, 1.0, 0.0])
            weight = int(tree.node_visits[b, n])
        else:
            obs = CHESS.observe(state)[None]
            wdl = np.asarray(jax.nn.softmax(apply(None, obs)[1][0]), np.float64)
            weight = 1
        if int(tree.player[b, n]) != root_player:
            wdl = wdl[::-1]
        total += weight * wdl
    return total / int(tree.node_visits[b, 0])


# mate in one for White; a stalemate in one (Qf7) for White; the same mate for Black
WDL_FENS = ["6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "7k/8/6Q1/8/8/8/8/6K1 w - - 0 1",
            "r5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1"]


@pytest.mark.slow  # a chess compilation with a WDL evaluator: 30-60 s
def test_root_wdl_averages_every_leaf_for_the_root_mover():
    from turbozero.networks.value_formats import WDLValue

    apply = _hash_wdl_apply(CHESS.num_actions)
    model = EnvModel(CHESS, mctx_policies.NetworkEvaluator(apply, WDLValue()))
    states = _stack([CHESS.from_fen(f) for f in WDL_FENS])
    config = TreeSearchConfig(num_simulations=120, root=QUIET,
                              selection=SpecPUCT(fpu_base=0.0))
    result, tree = _kernel(model, states, jax.random.PRNGKey(0), config)
    wdl = np.asarray(result.root_wdl, np.float64)
    np.testing.assert_allclose(wdl.sum(-1), 1.0, atol=1e-5)
    # chess pays only at the end, so the averaged W - L is the searched root value
    np.testing.assert_allclose(wdl[:, 0] - wdl[:, 2], np.asarray(result.root_value), atol=1e-5)
    terminal_kinds = set()
    for b in range(len(WDL_FENS)):
        # 5e-4: the hash of a 7,808-float observation differs by ~3e-5 between a batch of one
        # and the kernel's batch (float32 summation order); a swapped W/L or a missed leaf is
        # off by 0.01 or more
        np.testing.assert_allclose(wdl[b], _reference_root_wdl(tree, b, apply), atol=5e-4)
        terminal_kinds |= {bool(tree.reward[b, n].any())
                           for n in range(int(tree.next_node[b])) if bool(tree.terminal[b, n])}
    assert terminal_kinds == {True, False}  # mates and a stalemate were among the leaves
    # a scalar head has no draw class: no WDL
    result, _ = _kernel(CHESS_MODEL, states, jax.random.PRNGKey(0), config)
    assert result.root_wdl is None


# ---------------------------------------------------------------- chance nodes (backgammon)
BG = envs.make("backgammon")
BG_MODEL = EnvModel(BG, mctx_policies.NetworkEvaluator(_hash_apply(BG.num_actions)))


def _bg_positions(n, plies, seed=0):
    """Decision states of random games after `plies` random decisions (chance resolved)."""
    from envs.sampling import uniform_legal_action

    key = jax.random.PRNGKey(seed)
    s = jax.vmap(BG.init)(jax.random.split(key, n))
    step = jax.jit(jax.vmap(BG.step))
    for i in range(plies):
        k1, k2 = jax.random.split(jax.random.fold_in(key, i))
        a = jax.vmap(uniform_legal_action)(jax.random.split(k1, n), s.legal_action_mask)
        s = step(s, a, jax.random.split(k2, n))
    return s


BG_STATES = None


def _bg_states():
    global BG_STATES
    if BG_STATES is None:
        BG_STATES = _bg_positions(3, 9)
    return BG_STATES


@pytest.mark.parametrize("config", [
    TreeSearchConfig(num_simulations=60, root=QUIET),
    TreeSearchConfig(num_simulations=60, root=QUIET, selection=MctxPUCT()),
    TreeSearchConfig(num_simulations=62, leaves_per_step=4, root=QUIET),
], ids=["spec", "mctx", "L4"])
def test_kernel_matches_python_reference_on_backgammon_with_chance_nodes(config):
    states = _bg_states()
    assert not np.asarray(states.is_chance).any()
    _, tree = check_against_reference(BG_MODEL, states, config)
    chance = np.asarray(tree.chance)
    used = np.arange(tree.num_nodes)[None] < np.asarray(tree.next_node)[:, None]
    assert (chance & used).sum() >= 3  # the searches went through chance nodes


def test_chance_nodes_share_their_visits_by_the_roll_probabilities():
    """At a well-visited chance node each roll's share of the visits follows its probability
    (1/36 for doubles, 2/36 for the others): the rule picks argmax p / (N + 1)."""
    config = TreeSearchConfig(num_simulations=400, root=QUIET)
    _, tree = _kernel(BG_MODEL, _bg_states(), jax.random.PRNGKey(0), config)
    one = jax.tree_util.tree_map(lambda x: x[0], _bg_states())
    probs = np.asarray(BG.chance_outcome_probs(one.replace(is_chance=jnp.bool_(True))))
    np.testing.assert_allclose(probs.sum(), 1.0, atol=1e-6)  # the 21 rolls, any chance state
    checked = 0
    for b in range(tree.batch_size):
        for n in np.flatnonzero(np.asarray(tree.chance[b])):
            if n >= int(tree.next_node[b]) or int(tree.node_visits[b, n]) < 60:
                continue
            kids = np.asarray(tree.children_index[b, n])
            actions = np.asarray(tree.children_action[b, n])
            visits = np.array([int(tree.node_visits[b, k]) if k >= 0 else 0 for k in kids])
            total = visits.sum()
            expected = np.array([probs[a] if a >= 0 else 0.0 for a in actions]) * total
            assert np.all(np.abs(visits - expected) <= 1.0 + 1e-6), (visits, expected)
            checked += 1
    assert checked >= 1


def test_a_chance_root_is_refused():
    s = _bg_states()
    rolled = jax.tree_util.tree_map(lambda x: x[:1], s)
    before_roll = rolled.replace(is_chance=jnp.ones((1,), bool))
    from turbozero.search import search

    with pytest.raises(ValueError, match="chance outcome"):
        search(BG, BG_MODEL.evaluator, None, before_roll, jax.random.PRNGKey(0),
               TreeSearchConfig(num_simulations=4))


def _uniform_ttt(variables, obs):
    return jnp.zeros((obs.shape[0], TTT.num_actions)), jnp.zeros((obs.shape[0],))


def test_gumbel_root_breaks_exact_ties_at_random():
    """Uniform priors and values, no Gumbel noise (as in evaluation): the considered moves tie
    exactly, and the move played is drawn among them, not always the lowest slot."""
    model = EnvModel(TTT, mctx_policies.NetworkEvaluator(_uniform_ttt))
    config = TreeSearchConfig(num_simulations=8, root=GumbelRoot(max_considered=4,
                                                                  gumbel_scale=0.0))
    states = _stack([_play(TTT, [])] * 16)
    actions = set()
    for seed in range(4):
        result, _ = _kernel(model, states, jax.random.PRNGKey(seed), config)
        actions |= set(np.asarray(result.action).tolist())
    assert len(actions) > 1, actions
