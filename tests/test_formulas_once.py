"""Each search formula is written once (issue 33, item 2; docs/search.md, "Formulas, once"):
dynamic FPU in `turbozero.search.fpu`, legal-only Dirichlet noise in `turbozero.search.noise`,
acting with temperature and random tie-breaks in `turbozero.search.acting`.

* A scan of turbozero/ (its syntax trees, so comments and docstrings do not count) fails when a
  second definition appears: a Gamma / Dirichlet draw, a `jax.random.categorical` or the FPU
  expression outside its module (the legitimate other uses are listed, with the reason).
* The users act through the one function: the tree kernel, the mctx family and the training
  schedule give the actions `acting.act` gives for the same weights and keys.
* The C++ tree (cpp/search.hpp) computes the same numbers as the Python formulas: the child it
  selects is the one `SpecPUCT` (with `first_play_urgency`) scores highest, and it mixes a given
  Dirichlet draw into the root priors as `mix_legal_noise` does.
* The C++ self-play acts by the algorithm's `acting` (tau for the first T moves, then
  the most visited move).
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
import types
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from turbozero.search import fpu, noise
from turbozero.search.acting import TemperatureSchedule, act, random_argmax
from turbozero.search.cpu import cpu_search_available
from turbozero.search.selection import NodeStats, SpecPUCT

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "turbozero"

# ------------------------------------------------------------------ one definition each --
# Where a draw or formula may appear outside its module, and why.
ALLOWED = {
    # Dirichlet / Gamma draws: only search/noise.py, and the host-side numpy draw that feeds
    # the C++ tree (its worker threads hold no JAX key; the mixing is the C++'s, checked equal
    # to mix_legal_noise below)
    "dirichlet": {"search/noise.py", "search/cpu/tree.py"},
    # categorical draws: acting and ties only in search/acting.py; replay_sampling.py samples
    # the positions of a training batch (uniformly, or a stratum by weight; not a move)
    "categorical": {"search/acting.py", "training/replay_sampling.py"},
    "fpu": {"search/fpu.py"},
    # the mover's value as seat-order values (`where(seat == mover, v, -v)` or `[v, -v]`):
    # only networks/value_formats.py (`mover_to_seats`); afterstate.py's flips are the value
    # of one mover seen by another mover (the afterstate's against the root's), not seats;
    # chess adjudication scores White (seat 0 always), not a mover
    "seats": {"networks/value_formats.py", "search/afterstate.py", "games/chess/adjudication.py"},
}
_FPU = re.compile(r"fpu\w*\s*\*\s*\(\s*1(\.0*)?\s*-")


def _negated_pair(node) -> bool:
    """`where(cond, v, -v)` with a condition on a mover / player / seat, or a list `[v, -v]`."""
    def negation(a, b):  # a value and its negation (not a constant pair such as (-1.0, 1.0))
        return (isinstance(b, ast.UnaryOp) and isinstance(b.op, ast.USub)
                and not isinstance(a, ast.Constant) and ast.unparse(b.operand) == ast.unparse(a))

    if isinstance(node, ast.Call) and len(node.args) == 3 and (
            getattr(node.func, "attr", getattr(node.func, "id", "")) == "where"):
        cond = ast.unparse(node.args[0])
        return (negation(node.args[1], node.args[2])
                and any(w in cond for w in ("mover", "player", "seat")))
    if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) == 2:
        return negation(*node.elts) or negation(*node.elts[::-1])
    return False


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path))


def _uses(kind: str) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for rel, tree in _sources():
        for node in ast.walk(tree):
            hit = False
            if kind in ("dirichlet", "categorical") and isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                    node.func, "id", "")
                hit = (name in ("gamma", "dirichlet") if kind == "dirichlet"
                       else name == "categorical")
            elif kind == "fpu" and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                hit = bool(_FPU.search(ast.unparse(node)))
            elif kind == "seats":
                hit = _negated_pair(node)
            if hit:
                found.setdefault(rel, []).append(node.lineno)
    return found


@pytest.mark.parametrize("kind", sorted(ALLOWED))
def test_each_formula_is_defined_once(kind):
    found = _uses(kind)
    extra = {f: lines for f, lines in found.items() if f not in ALLOWED[kind]}
    assert not extra, (f"a second definition of the {kind} formula in turbozero/{extra}: use "
                       "turbozero.search.fpu / noise / acting (docs/search.md, 'Formulas, "
                       "once'), or list the use in ALLOWED with the reason")
    # the home module really holds it (the scan finds what it looks for)
    home = {"dirichlet": "search/noise.py", "categorical": "search/acting.py",
            "fpu": "search/fpu.py", "seats": "networks/value_formats.py"}[kind]
    assert home in found


def test_the_fpu_default_is_one_number():
    from turbozero.search.cpu.tree import CPUSearchConfig
    from turbozero.search.mctx_policies import DynamicFPU, MctxConfig

    assert fpu.FPU_BASE == 0.0
    assert SpecPUCT().fpu_base == DynamicFPU().fpu_base == fpu.FPU_BASE
    assert MctxConfig().q_transform == DynamicFPU(fpu.FPU_BASE)
    if cpu_search_available():
        assert CPUSearchConfig().fpu_base == fpu.FPU_BASE
        assert CPUSearchConfig().to_native().fpu_base == fpu.FPU_BASE


def test_stored_configs_load_as_written():
    """A run directory stores every field: an explicit fpu_base (DynamicFPU's default was 1.0
    before FPU_BASE) and the schedule under its old module path load unchanged."""
    from turbozero.training import acting as training_acting
    from turbozero.training.run_config import from_json, to_json

    stored = {"__dataclass__": "turbozero.search.mctx_policies:DynamicFPU", "fpu_base": 1.0}
    assert from_json(stored).fpu_base == 1.0
    old = {"__dataclass__": "turbozero.training.acting:TemperatureSchedule",
           "temperature": 0.5, "moves": 7}
    assert from_json(old) == TemperatureSchedule(0.5, 7)
    assert training_acting.TemperatureSchedule is TemperatureSchedule
    assert from_json(to_json(TemperatureSchedule(1.0, None))) == TemperatureSchedule(1.0, None)


# ------------------------------------------------------------------------- the functions --
def test_first_play_urgency_broadcasts():
    prior = jnp.array([[0.5, 0.25, 0.25], [1.0, 0.0, 0.0]])
    parent = jnp.array([[0.2], [-0.4]])
    got = np.asarray(fpu.first_play_urgency(parent, prior, 0.4))
    np.testing.assert_allclose(got, [[0.0, -0.1, -0.1], [-0.4, -0.8, -0.8]], atol=1e-6)
    assert fpu.first_play_urgency(0.3, 0.6) == 0.3  # FPU_BASE 0: the parent's value


def test_mix_legal_noise_is_the_mixture_over_valid_slots():
    key = jax.random.PRNGKey(4)
    valid = jnp.array([[True, False, True, True], [False, False, False, True]])
    prior = jnp.where(valid, jnp.array([0.5, 0.3, 0.3, 0.2]), 0.0)
    eta = noise.legal_dirichlet(key, valid, 0.3)
    mixed = np.asarray(noise.mix_legal_noise(key, prior, valid, 0.3, 0.25))
    np.testing.assert_array_equal(mixed, np.where(valid, 0.75 * prior + 0.25 * eta, 0.0))
    np.testing.assert_array_equal(noise.mix_legal_noise(key, prior, valid, 0.3, 0.0), prior)
    # alpha so small every draw underflows: uniform over the valid slots
    tiny = np.asarray(noise.legal_dirichlet(key, valid, 1e-30))
    np.testing.assert_allclose(tiny, np.asarray(valid) / np.asarray(valid).sum(-1, keepdims=True))


def test_random_argmax_and_act():
    key = jax.random.PRNGKey(0)
    score = jnp.tile(jnp.array([1.0, 3.0, 3.0, 2.0, 3.0]), (4000, 1))
    valid = jnp.tile(jnp.array([True, True, True, True, False]), (4000, 1))
    a = np.asarray(random_argmax(key, score, valid))
    assert set(np.unique(a)) == {1, 2} and 0.45 < np.mean(a == 1) < 0.55
    assert int(random_argmax(key, jnp.ones(3), jnp.zeros(3, bool))) == 0  # none valid: slot 0
    w = jnp.tile(jnp.array([0.0, 1.0, 3.0, 0.0]), (4000, 1))
    ok = w >= 0
    sampled = np.asarray(act(key, w, ok, 1.0))
    np.testing.assert_allclose(np.bincount(sampled, minlength=4) / 4000, [0, 0.25, 0.75, 0],
                               atol=0.03)
    sharp = np.asarray(act(key, w, ok, 0.5))  # w^2: 1 / 10 and 9 / 10
    np.testing.assert_allclose(np.bincount(sharp, minlength=4) / 4000, [0, 0.1, 0.9, 0],
                               atol=0.03)
    # a static 0, a traced 0 and a per-row 0 play the same move; rows mix tau per row
    greedy = act(key, w[:3], ok[:3], 0.0)
    np.testing.assert_array_equal(greedy, act(key, w[:3], ok[:3], jnp.zeros(3)))
    np.testing.assert_array_equal(greedy, jax.jit(act)(key, w[:3], ok[:3], jnp.float32(0)))
    mixed = act(key, w[:3], ok[:3], jnp.array([0.0, 1.0, 0.0]))
    np.testing.assert_array_equal(np.asarray(mixed)[[0, 2]], [2, 2])
    # [B, P, K] weights with one tau per game
    w3 = jnp.array([[[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]]] * 2)
    np.testing.assert_array_equal(act(key, w3, w3 > 0, jnp.array([0.0, 0.0])), [[1, 0]] * 2)


def test_schedule_acts_through_act():
    key = jax.random.PRNGKey(7)
    policy = jax.random.dirichlet(key, jnp.ones(6), (64,)) * (jnp.arange(6) != 2)
    policy = policy.at[:8, 1].set(policy[:8, 0])  # ties of the argmax
    step = jnp.arange(64) % 8
    for sched in (TemperatureSchedule(1.0, 4), TemperatureSchedule(0.5, None),
                  TemperatureSchedule(0.0, 4), TemperatureSchedule(1.0, 0)):
        tau = sched.temperatures(step) if sched.temperature and sched.moves != 0 else 0.0
        np.testing.assert_array_equal(sched.act(key, policy, step),
                                      act(key, policy, policy > 0, tau))


# ------------------------------------------------------------ the users act through `act` --
@pytest.fixture(scope="module")
def ttt():
    import envs
    from turbozero.networks import ScalarValue
    from turbozero.search import NetworkEvaluator

    env = envs.make("pgx/tic_tac_toe")

    def flat(variables, obs):  # flat priors, value 0: many ties of the visit counts
        return jnp.zeros((obs.shape[0], env.num_actions)), jnp.zeros((obs.shape[0],))

    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(1), 16))
    return env, NetworkEvaluator(flat, ScalarValue()), states


def test_kernel_recommends_by_act(ttt):
    """The search's own action is `act` at tau = 0 (the most visited, ties at random): the
    search recommends, acting (a `TemperatureSchedule`) chooses."""
    from turbozero.search.kernel import TreeSearchConfig, tree_search
    from turbozero.search.model import EnvModel

    env, evaluator, states = ttt
    cfg = TreeSearchConfig(num_simulations=8)
    key = jax.random.PRNGKey(3)
    result, tree = jax.jit(lambda s, k: tree_search(EnvModel(env, evaluator), None, s, k, cfg)
                           )(states, key)
    k_act = jax.random.split(key, 3)[2]
    actions = tree.children_action[:, 0]
    valid = actions != -1
    visits = jnp.take_along_axis(result.stats["root_visits"], jnp.where(valid, actions, 0), 1)
    slot = act(k_act, visits.astype(jnp.float32), valid, 0.0)
    np.testing.assert_array_equal(result.action, jnp.take_along_axis(actions, slot[:, None], 1)[:, 0])


def test_mctx_family_recommends_by_act(ttt):
    from turbozero.search import MctxConfig, search

    env, evaluator, states = ttt
    cfg = MctxConfig(num_simulations=8)
    key = jax.random.PRNGKey(5)
    result = jax.jit(lambda s, k: search(env, evaluator, None, s, k, cfg))(states, key)
    _, k_mctx = jax.random.split(key)
    visits = result.stats["root_visits"].astype(jnp.float32)
    want = act(jax.random.fold_in(k_mctx, 1), visits, states.legal_action_mask, 0.0)
    np.testing.assert_array_equal(result.action, want)
    # the same weights and keys through the training schedule at tau 0: the same moves
    sched = TemperatureSchedule(0.0, None)
    np.testing.assert_array_equal(
        sched.act(jax.random.fold_in(k_mctx, 1), visits, states.step_count), want)


# ----------------------------------------------------------------- the C++ tree's numbers --
cpp = pytest.mark.skipif(not cpu_search_available(),
                         reason="the C++ extension is not built (pip install -e .)")
SCALE = 10000  # the C++ pool's fixed-point value scale (cpp/node_pool.hpp)


def _toy_evaluator(num_actions: int = 6):
    """Deterministic states keyed by their action paths: a few legal actions, uneven priors,
    values in [-1, 1], players alternating, games over after 5 moves."""
    slots: dict[int, tuple] = {}

    def state(path):
        h = zlib.crc32(repr(path).encode())
        rng = np.random.default_rng(h)
        terminal = len(path) >= 5
        value = float(rng.uniform(-1, 1))
        if terminal:
            return np.zeros(0, np.int32), np.zeros(0, np.float32), value, len(path) % 2, True
        acts = np.sort(rng.choice(num_actions, 2 + h % 4, replace=False)).astype(np.int32)
        pri = rng.dirichlet(np.ones(len(acts))).astype(np.float32)
        return acts, pri, value, len(path) % 2, False

    def evaluate(parent, action, dest):
        b = len(parent)
        acts = np.full((b, num_actions), -1, np.int32)
        pri = np.zeros((b, num_actions), np.float32)
        val, ply, term = np.zeros(b, np.float32), np.zeros(b, np.int32), np.zeros(b, bool)
        for i in range(b):
            path = () if parent[i] == -2 else slots[int(parent[i])] + (int(action[i]),)
            slots[int(dest[i])] = path
            a, p, v, pl, t = state(path)
            acts[i, :len(a)], pri[i, :len(a)] = a, p
            val[i], ply[i], term[i] = v, pl, t
        return acts, pri, val, ply, term

    return evaluate


def _root_node_stats(tree) -> NodeStats:
    """The root's children as the JAX selection sees them, from the C++ tree's fixed-point
    sums (a child's sums are for the root's mover, the root's for itself)."""
    d = tree.dump()
    kids = np.flatnonzero(d["parent"] == 0)
    n = d["visits"][kids].astype(np.float64)
    safe = np.maximum(n, 1) * SCALE
    mean = d["value_sum"][kids] / safe
    var = np.maximum(d["value_sq_sum"][kids] / safe - mean * mean, 0.0)
    root_n = int(d["visits"][0])
    return NodeStats(
        valid=jnp.ones(len(kids), bool), prior=jnp.asarray(d["prior"][kids], jnp.float32),
        visits=jnp.asarray(n, jnp.int32), virtual_loss=jnp.zeros(len(kids), jnp.int32),
        q_mean=jnp.asarray(np.where(n > 0, mean, 0.0), jnp.float32),
        q_var=jnp.asarray(np.where(n > 0, var, 0.0), jnp.float32),
        parent_visits=jnp.int32(root_n),
        parent_value=jnp.float32(d["value_sum"][0] / (SCALE * max(root_n, 1))))


@cpp
@pytest.mark.parametrize("selection", [SpecPUCT(), SpecPUCT(c_puct=1.1, fpu_base=0.6),
                                       SpecPUCT(c_puct=2.0, fpu_base=0.3, risk_beta=1.5)],
                         ids=["default", "fpu", "fpu+risk"])
def test_cpp_selects_the_child_the_python_formula_scores_highest(selection):
    """Simulation by simulation the C++ tree descends into the root child `SpecPUCT.scores`
    (its FPU from `first_play_urgency`) puts first; unvisited children are chosen by the FPU
    as well as visited ones by their Q."""
    from turbozero.search.cpu import CPUSearchConfig, SearchTree

    evaluate = _toy_evaluator()
    tree = SearchTree(CPUSearchConfig.from_jax(selection, types.SimpleNamespace(
        dirichlet_alpha=0.3, dirichlet_fraction=0.0)), nodes_per_block=64, max_blocks=64,
        num_slots=1024)
    tree.start(evaluate)
    checked = unvisited = 0
    for _ in range(80):
        stats = _root_node_stats(tree)
        scores = np.asarray(selection.scores(stats))
        top2 = np.sort(scores)[-2:]
        before = tree.root().visits.copy()
        tree.simulate(evaluate, 1)
        chosen = int(np.flatnonzero(tree.root().visits != before)[0])
        if len(scores) > 1 and top2[1] - top2[0] < 1e-5:
            continue  # float32 here, float64 in C++: a near tie may go either way
        assert chosen == int(np.argmax(scores)), (scores, stats)
        checked += 1
        unvisited += int(before[chosen] == 0)
        # the unvisited child's selection Q is the one formula's
        fpu_q = fpu.first_play_urgency(stats.parent_value, stats.prior, selection.fpu_base)
        u = selection.c_puct * stats.prior * np.sqrt(float(stats.parent_visits))
        np.testing.assert_allclose(scores[before == 0], (fpu_q + u)[before == 0], rtol=1e-6,
                                   atol=1e-6)
    assert checked > 60 and unvisited >= 2


@cpp
def test_cpp_mixes_root_noise_as_mix_legal_noise():
    from turbozero.search.cpu import CPUSearchConfig, SearchTree

    evaluate = _toy_evaluator()
    tree = SearchTree(CPUSearchConfig(dirichlet_fraction=0.25), nodes_per_block=64,
                      max_blocks=8, num_slots=64)
    tree.start(evaluate)
    prior = tree.root().priors.copy()
    valid = jnp.ones(len(prior), bool)
    key = jax.random.PRNGKey(11)
    eta = np.asarray(noise.legal_dirichlet(key, valid, 0.3))
    tree.add_root_noise(eta, 0.25)
    want = np.asarray(noise.mix_legal_noise(key, jnp.asarray(prior), valid, 0.3, 0.25))
    # C++ mixes in double and stores float32; JAX mixes in float32: at most one rounding apart
    np.testing.assert_allclose(tree.root().priors, want, rtol=2e-7, atol=0)


# ------------------------------------------------------ the C++ self-play and the schedule --
@cpp
def test_cpu_self_play_follows_the_temperature_schedule():
    """tau for the first T moves, then the most visited move (ties at random): the C++ games
    of a CPUSelfPlayConfig acting by a `TemperatureSchedule` (the algorithm's `acting`)."""
    import envs
    from turbozero.search.cpu import CPUSearchConfig
    from turbozero.search.cpu.selfplay import CPUSelfPlayConfig, cpu_self_play

    env = envs.make("pgx/tic_tac_toe")

    def net(params, obs):  # flat priors, value 0
        return jnp.zeros((obs.shape[0], env.num_actions)), jnp.zeros((obs.shape[0],))

    base = CPUSelfPlayConfig(search=CPUSearchConfig(dirichlet_fraction=0.0), num_workers=1,
                             num_games=16, num_simulations=12, batch_tiers=(4, 16), seed=3)
    native = base.to_native(acting=TemperatureSchedule(temperature=4.0, moves=3))
    assert (native.temperature, native.temperature_moves) == (4.0, 3)
    assert base.to_native(acting=TemperatureSchedule(1.0, None)).temperature_moves == 2**31 - 1
    out = cpu_self_play(env, net, None, base, jax.random.PRNGKey(0),
                        acting=TemperatureSchedule(temperature=4.0, moves=3))
    move = np.zeros(len(out.action), int)
    for g in np.unique(out.game):
        rows = np.flatnonzero(out.game == g)
        move[rows] = np.arange(len(rows))
    chosen = out.policy[np.arange(len(out.action)), out.action]
    most = chosen >= out.policy.max(-1)
    assert np.all(most[move >= 3])  # after T moves: the most visited
    assert not np.all(most[move < 3])  # before: sampled at tau 4, not always the most visited


def test_search_configs_hold_no_acting_and_stored_runs_keep_theirs():
    """Temperature and its schedule belong to acting alone (issue 44, item 3): no search config
    has one. A run stored with them in its search config loads through training/migration.py
    with what it played unchanged: dropped, but for a C++ self-play whose own settings
    contradicted the schedule (it followed them then): its algorithm acts by them."""
    from turbozero.search import MCGSConfig, MctxConfig, TreeSearchConfig
    from turbozero.search.cpu import CPUSearchConfig
    from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
    from turbozero.training.algorithm_configs import AlphaZero
    from turbozero.training.config import TrainConfig
    from turbozero.training.cpu_alphazero import CPUAlphaZero
    from turbozero.training.run_config import from_json, to_json

    for cls in (TreeSearchConfig, MctxConfig, MCGSConfig, CPUSearchConfig, CPUSelfPlayConfig):
        assert not {"temperature", "temperature_moves"} & {f.name for f in
                                                            dataclasses.fields(cls)}, cls
        stored = to_json(cls())
        stored["temperature"] = 0.25
        assert from_json(stored) == cls()
    a = types.SimpleNamespace(cpu_config=CPUSelfPlayConfig(seed=2))
    assert CPUAlphaZero.self_play_config(a, 3).seed == 2 + 3 * 7919  # games seeded per iteration
    algorithm = AlphaZero(search=CPUSelfPlayConfig(), acting=TemperatureSchedule(1.0, 30))
    stored = to_json(algorithm)
    stored["search"].update(temperature=1.0, temperature_moves=30)  # the defaults: the schedule
    assert from_json(stored) == algorithm
    stored["search"]["temperature_moves"] = 4  # agrees with a schedule of 4 moves
    assert from_json(dict(stored, acting=to_json(TemperatureSchedule(1.0, 4)))).acting == (
        TemperatureSchedule(1.0, 4))
    assert from_json(stored).acting == TemperatureSchedule(1.0, 4)  # contradicts 30: its own
    # the layout before TrainConfig.algorithm: the search and schedule at the top
    old = to_json(TrainConfig(game="pgx/tic_tac_toe", algorithm=algorithm))
    del old["algorithm"]
    old["search"] = dict(stored["search"], temperature=0.5)
    old["temperature_schedule"] = to_json(TemperatureSchedule(1.0, 30))
    assert from_json(old).algorithm.acting == TemperatureSchedule(0.5, 4)
