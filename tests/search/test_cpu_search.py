"""The C++ CPU search path (issue 21, docs/cpu_search.md): node pool, tree search against a
plain-Python transcription of the same formulas, the evaluation queue under stress, the
threaded coordinator, bad input, and the pure-JAX library without the extension."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import zlib

import numpy as np
import pytest

from turbozero.search.cpu import (
    NEW_GAME,
    NO_ACTION,
    NO_STATE_SLOT,
    CPUSearchConfig,
    CPUSearchUnavailable,
    SearchTree,
    require_extension,
)

ext = require_extension()  # the extension must build with `pip install -e .`: no skip

NUM_ACTIONS = 7
SCALE = 10000  # the pool's fixed-point scale


# ---------------------------------------------------------------- a deterministic toy game --
def _h(path: tuple, salt: str) -> int:
    return zlib.crc32((salt + repr(path)).encode())


def toy_state(path: tuple):
    """(legal actions, float32 priors, value for the mover, mover, terminal) of the state
    reached by `path`. Movers usually alternate but not always (a player may move twice)."""
    h = _h(path, "s")
    player = (len(path) + (1 if _h(path, "p") % 5 == 0 else 0)) % 2
    terminal = len(path) >= 6 or (len(path) >= 2 and h % 7 == 0)
    value = ((h >> 8) % 2001 - 1000) / 1000.0
    if terminal:
        return np.zeros(0, np.int32), np.zeros(0, np.float32), value, player, True
    n = 1 + h % 5
    actions = np.sort(np.random.default_rng(h).choice(NUM_ACTIONS, n, replace=False))
    raw = np.array([1 + _h(path + (int(a),), "q") % 9 for a in actions], np.float64)
    priors = (raw / raw.sum()).astype(np.float32)
    return actions.astype(np.int32), priors, value, player, False


class ToyEvaluator:
    """The evaluator protocol over toy_state: slots hold action paths."""

    def __init__(self):
        self.slots: dict[int, tuple] = {}
        self.calls = 0
        self.batch_sizes: list[int] = []

    def __call__(self, parent, action, dest):
        self.calls += 1
        self.batch_sizes.append(len(parent))
        b = len(parent)
        acts = np.full((b, NUM_ACTIONS), NO_ACTION, np.int32)
        pri = np.zeros((b, NUM_ACTIONS), np.float32)
        val = np.zeros(b, np.float32)
        ply = np.zeros(b, np.int32)
        term = np.zeros(b, bool)
        for i in range(b):
            path = () if parent[i] == NEW_GAME else self.slots[int(parent[i])] + (int(action[i]),)
            self.slots[int(dest[i])] = path
            a, p, v, pl, t = toy_state(path)
            # legal actions at the end of the row: padding may sit anywhere
            acts[i, NUM_ACTIONS - len(a):] = a
            pri[i, NUM_ACTIONS - len(a):] = p
            val[i], ply[i], term[i] = v, pl, t
        return acts, pri, val, ply, term


# --------------------------------------------------------- the plain-Python transcription --
def to_fixed(x: float) -> int:
    """round(x * 1e4), halves away from zero (C++ std::llround)."""
    y = x * float(SCALE)
    a = abs(y)
    k = math.floor(a)
    k += 1 if a - k >= 0.5 else 0
    return int(math.copysign(k, y)) if k else 0


class RefNode:
    def __init__(self, parent, action, prior):
        self.parent, self.action, self.prior = parent, action, float(np.float32(prior))
        self.children: list[RefNode] = []
        self.visits = self.vl = self.vsum = self.vsq = 0
        self.player = 0
        self.expanded = self.terminal = self.pending = False
        self.tv = 0.0
        self.path: tuple = ()

    def mean(self) -> float:
        return 0.0 if self.visits == 0 else self.vsum / (float(SCALE) * self.visits)


class RefSearch:
    """Spec §5.2-§5.4, §5.8-§5.9 exactly as docs/cpu_search.md states them, in plain Python."""

    def __init__(self, cfg: CPUSearchConfig):
        self.cfg = cfg
        self.root = RefNode(None, NO_ACTION, 1.0)
        self.root.vl = 1
        self._expand(self.root, ())

    def own_value(self, n: RefNode) -> float:
        m = n.mean()
        return -m if n.parent is not None and n.parent.player != n.player else m

    def score(self, node: RefNode, c: RefNode) -> float:
        cfg = self.cfg
        pv = self.own_value(node)
        n, vl, p = float(c.visits), float(c.vl), c.prior
        if c.visits > 0:
            scale = float(SCALE) * n
            mean = c.vsum / scale
            q = mean
            if cfg.risk_beta != 0.0:
                q = q + 0.5 * cfg.risk_beta * max(c.vsq / scale - mean * mean, 0.0)
            qs = (n * q + vl * pv) / max(n + vl, 1.0)
            if cfg.risk_beta != 0.0:
                qs = min(max(qs, cfg.q_bounds[0]), cfg.q_bounds[1])
        elif vl > 0:
            qs = pv
        else:
            qs = pv - cfg.fpu_base * (1.0 - p)
        return qs + cfg.c_puct * p * math.sqrt(float(node.visits)) / (1.0 + n + vl)

    def _expand(self, node: RefNode, path: tuple):
        a, p, v, pl, t = toy_state(path)
        node.path, node.player = path, pl
        if t:
            node.terminal, node.tv = True, float(np.float32(v))
        else:
            node.children = [RefNode(node, int(x), y) for x, y in zip(a, p)]
            node.expanded = True
        node.pending = False
        self._backup(node, float(np.float32(v)), pl)

    def _backup(self, leaf: RefNode, value: float, player: int):
        node = leaf
        while node is not None:
            persp = node.parent.player if node.parent is not None else node.player
            v = value if persp == player else -value
            node.vsum += to_fixed(v)
            node.vsq += to_fixed(v * v)
            node.vl -= 1
            node.visits += 1
            node = node.parent

    def _select(self):
        node = self.root
        node.vl += 1
        while node.expanded:
            scores = [self.score(node, c) for c in node.children]
            node = node.children[int(np.argmax(scores))]  # first maximum
            node.vl += 1
        if node.terminal:
            self._backup(node, node.tv, node.player)
            return "terminal", None
        if node.pending:
            n = node
            while n is not None:
                n.vl -= 1
                n = n.parent
            return "collision", None
        node.pending = True
        return "leaf", node

    def simulate(self, num_simulations: int, leaves_per_step: int = 1):
        done = 0
        while done < num_simulations:
            leaves = []
            while len(leaves) < leaves_per_step and done + len(leaves) < num_simulations:
                kind, leaf = self._select()
                if kind == "leaf":
                    leaves.append(leaf)
                elif kind == "terminal":
                    done += 1
                else:
                    break
            for leaf in leaves:  # evaluated together, completed in request order
                self._expand(leaf, leaf.parent.path + (leaf.action,))
            done += len(leaves)

    def add_root_noise(self, eta, fraction):
        for c, e in zip(self.root.children, eta):
            c.prior = float(np.float32((1.0 - fraction) * c.prior + fraction * float(e)))

    def dump(self):
        """Depth-first (children in order) like SearchTree.dump()."""
        out = {k: [] for k in ("parent", "action", "visits", "value_sum", "value_sq_sum",
                                 "player")}
        stack = [(self.root, -1)]
        while stack:
            n, p = stack.pop()
            me = len(out["parent"])
            for k, v in (("parent", p), ("action", n.action), ("visits", n.visits),
                         ("value_sum", n.vsum), ("value_sq_sum", n.vsq), ("player", n.player)):
                out[k].append(v)
            if n.expanded:
                stack.extend((c, me) for c in reversed(n.children))
        return {k: np.asarray(v) for k, v in out.items()}


def _cpp_search(cfg, sims, leaves, noise=None):
    ev = ToyEvaluator()
    tree = SearchTree(cfg, nodes_per_block=256, max_blocks=64, num_slots=4096)
    tree.start(ev)
    if noise is not None:
        tree.add_root_noise(noise, cfg.dirichlet_fraction)
    tree.simulate(ev, sims, leaves_per_step=leaves)
    return tree, ev


def _assert_same_tree(tree: SearchTree, ref: RefSearch):
    got, want = tree.dump(), ref.dump()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


# ------------------------------------------------------------------------------ the tests --
def test_constants_match_the_extension():
    assert ext.NODE_BYTES == 64 and ext.NODE_ALIGN == 64
    assert ext.VALUE_SCALE == SCALE
    assert (ext.NO_ACTION, ext.NO_STATE_SLOT, ext.NEW_GAME) == (NO_ACTION, NO_STATE_SLOT, NEW_GAME)


def test_node_pool_blocks_alignment_reset_and_exhaustion():
    pool = ext.NodePool(nodes_per_block=16, max_blocks=2)
    a = pool.allocate(10)
    b = pool.allocate(6)
    assert a % 64 == 0 and b == a + 10 * 64  # contiguous runs of 64-byte nodes
    c = pool.allocate(5)  # does not fit the rest of block 0 (0 left): block 1
    assert c % 64 == 0 and pool.blocks_allocated == 2 and pool.nodes_used == 21
    with pytest.raises(ext.PoolExhaustedError, match="exhausted"):
        pool.allocate(12)  # 11 left in block 1, no block 2: an exception, not a crash
    with pytest.raises(MemoryError):
        pool.allocate(17)  # larger than a block
    pool.reset()
    assert pool.nodes_used == 0 and pool.allocate(10) == a  # O(1) reset reuses the memory
    assert pool.blocks_allocated == 2


@pytest.mark.parametrize("cfg", [
    CPUSearchConfig(dirichlet_fraction=0.0),
    CPUSearchConfig(c_puct=2.5, fpu_base=0.3, dirichlet_fraction=0.0),
    CPUSearchConfig(c_puct=1.1, fpu_base=0.2, risk_beta=1.5, dirichlet_fraction=0.0),
    CPUSearchConfig(c_puct=1.1, fpu_base=0.0, risk_beta=-2.0, dirichlet_fraction=0.0),
], ids=["default", "fpu", "risk+", "risk-"])
def test_one_leaf_per_step_equals_the_python_reference(cfg):
    tree, _ = _cpp_search(cfg, 300, 1)
    ref = RefSearch(cfg)
    ref.simulate(300, 1)
    _assert_same_tree(tree, ref)
    root = tree.root()
    assert root.root_visits == 301 and root.visits.sum() == 300
    np.testing.assert_array_equal(root.visits, [c.visits for c in ref.root.children])


def test_virtual_loss_batches_equal_the_python_reference():
    cfg = CPUSearchConfig(fpu_base=0.25, dirichlet_fraction=0.0)
    tree, ev = _cpp_search(cfg, 200, 8)
    ref = RefSearch(cfg)
    ref.simulate(200, 8)
    _assert_same_tree(tree, ref)
    assert max(ev.batch_sizes[1:]) > 1  # leaves really were batched
    # virtual loss changes the search: the 8-leaf tree differs from the sequential one
    seq, _ = _cpp_search(cfg, 200, 1)
    assert not np.array_equal(seq.dump()["visits"], tree.dump()["visits"]) or \
        len(seq.dump()["visits"]) != len(tree.dump()["visits"])
    assert np.all(tree.dump()["visits"] >= 0)


def test_root_noise_over_legal_actions_equals_the_reference():
    cfg = CPUSearchConfig(dirichlet_alpha=0.3, dirichlet_fraction=0.25)
    ev = ToyEvaluator()
    tree = SearchTree(cfg, nodes_per_block=256, max_blocks=64, num_slots=4096)
    tree.start(ev)
    before = tree.root().priors.copy()
    eta = tree.add_dirichlet_noise(np.random.default_rng(5))
    assert eta.shape == before.shape  # one draw per legal action, none for illegal ones
    np.testing.assert_allclose(tree.root().priors, 0.75 * before + 0.25 * eta, rtol=1e-6)
    tree.simulate(ev, 150)
    ref = RefSearch(cfg)
    ref.add_root_noise(eta, 0.25)
    ref.simulate(150)
    _assert_same_tree(tree, ref)


def test_subtree_reuse_keeps_the_child_statistics_and_frees_the_rest():
    cfg = CPUSearchConfig(dirichlet_fraction=0.0)
    tree, ev = _cpp_search(cfg, 300, 1)
    root = tree.root()
    best = int(np.argmax(root.visits))
    action, kept = int(root.actions[best]), int(root.visits[best])
    child_q = root.q[best]  # for the root's mover
    used_before = tree.nodes_used
    dump = tree.dump()
    tree.advance(action)
    new = tree.root()
    assert new.root_visits == kept
    sign = 1.0 if new.player == root.player else -1.0
    assert new.value == pytest.approx(sign * child_q, abs=1e-12)
    assert tree.nodes_used < used_before
    # the kept subtree's nodes are exactly the child's subtree before the move
    sub = tree.dump()
    idx = [i for i in range(len(dump["parent"])) if dump["parent"][i] == 0][best]
    assert dump["visits"][idx] == sub["visits"][0]
    # state slots: only the subtree's evaluated nodes keep theirs
    assert tree.free_slots == 4096 - int(np.sum((sub["flags"] & 3) != 0))
    tree.simulate(ev, 50)
    assert tree.root().root_visits == kept + 50


def test_pool_exhaustion_during_search_is_a_python_exception():
    ev = ToyEvaluator()
    tree = SearchTree(CPUSearchConfig(dirichlet_fraction=0.0), nodes_per_block=8, max_blocks=3,
                      num_slots=4096)
    tree.start(ev)
    with pytest.raises(ext.PoolExhaustedError):
        tree.simulate(ev, 500)
    slots = SearchTree(CPUSearchConfig(dirichlet_fraction=0.0), nodes_per_block=64,
                       max_blocks=64, num_slots=5)
    ev = ToyEvaluator()
    slots.start(ev)
    with pytest.raises(MemoryError, match="state pool exhausted"):
        slots.simulate(ev, 50)


def test_bad_evaluators_and_settings_raise_value_errors():
    with pytest.raises(ValueError, match="c_puct"):
        CPUSearchConfig(c_puct=0.0)
    with pytest.raises(ValueError, match="fpu_base"):
        CPUSearchConfig(fpu_base=-1.0)
    with pytest.raises(ValueError, match="q_bounds"):
        CPUSearchConfig(q_bounds=(1.0, -1.0))
    with pytest.raises(ValueError, match="dirichlet_fraction"):
        CPUSearchConfig(dirichlet_fraction=2.0)
    with pytest.raises(ValueError, match="num_slots"):
        SearchTree(num_slots=1)
    good = ToyEvaluator()

    def wrong_shape(p, a, d):
        acts, pri, val, ply, term = good(p, a, d)
        return acts, pri, val[:0], ply, term

    def nan_value(p, a, d):
        acts, pri, val, ply, term = good(p, a, d)
        return acts, pri, val * np.nan, ply, term

    def negative_prior(p, a, d):
        acts, pri, val, ply, term = good(p, a, d)
        return acts, -pri, val, ply, term

    def no_moves(p, a, d):
        acts, pri, val, ply, term = good(p, a, d)
        return np.full_like(acts, NO_ACTION), pri, val, ply, np.zeros_like(term)

    def wdl_of(make):
        def evaluate(p, a, d):
            return good(p, a, d) + (make(len(p)),)
        return evaluate

    for bad, msg in ((wrong_shape, "value must be"), (nan_value, "non-finite"),
                     (negative_prior, "priors must be"), (lambda p, a, d: 3, "must return"),
                     (no_moves, "no legal action"),
                     (wdl_of(lambda b: np.full((b, 2), 0.5)), r"wdl must be \[B=1, 3\]"),
                     (wdl_of(lambda b: np.full((b, 3), -0.1)), "wdl must be finite and >= 0"),
                     (wdl_of(lambda b: np.full((b, 3), np.nan)), "wdl must be finite")):
        with pytest.raises(ValueError, match=msg):
            SearchTree(CPUSearchConfig(dirichlet_fraction=0.0)).start(bad)


_STRESS = """
import json
from turbozero.search.cpu import require_extension
r = require_extension().stress_queue(workers=16, requests_per_worker=300, max_submit=3, capacity=4,
                             max_batch=3, seed=7)
print(json.dumps(dict(r)))
"""


def test_queue_stress_many_threads_tiny_queue():
    # 16 native threads run in a child process: if the C++ side ever aborts, this test fails
    # with its stderr instead of killing the whole test session
    out = subprocess.run([sys.executable, "-c", _STRESS], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["mismatches"] == 0
    assert r["stale_dropped_ok"]
    assert r["delivered"] == r["expected"] > 16 * 200
    assert r["batches"] > 100


def test_coordinator_bad_settings_raise():
    c = ext.CoordinatorConfig()
    c.num_workers = 0
    with pytest.raises(ValueError, match="num_workers"):
        ext.Coordinator(c)
    c = ext.CoordinatorConfig()
    c.num_games, c.num_workers, c.leaves_per_step, c.queue_capacity = 8, 1, 4, 8
    with pytest.raises(ValueError, match="queue_capacity"):
        ext.Coordinator(c)


def test_missing_extension_leaves_jax_working_and_the_cpu_path_raises(monkeypatch):
    import builtins
    import importlib
    import sys

    from turbozero.search.cpu import _ext

    real_import = importlib.import_module

    def no_extension(name, *a, **k):
        if name == "turbozero._search_cpp":
            raise ImportError("simulated: extension not built")
        return real_import(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", no_extension)
    assert not _ext.cpu_search_available()
    with pytest.raises(CPUSearchUnavailable, match="pip install -e"):
        SearchTree()
    with pytest.raises(CPUSearchUnavailable):
        CPUSearchConfig().to_native()
    # the pure-JAX library imports and runs without it
    del builtins, sys
    import jax

    import envs
    from turbozero.search import MctxConfig, search  # noqa: F401

    state = envs.make("pgx/tic_tac_toe").init(jax.random.PRNGKey(0))
    assert int(state.legal_action_mask.sum()) == 9


def _flat_evaluator(parent, action, dest):
    """Four legal actions everywhere with equal priors and value 0: visits tie."""
    b = len(parent)
    acts = np.tile(np.array([0, 1, 2, 3, NO_ACTION, NO_ACTION, NO_ACTION], np.int32), (b, 1))
    pri = np.tile(np.array([0.25] * 4 + [0.0] * 3, np.float32), (b, 1))
    return acts, pri, np.zeros(b, np.float32), np.zeros(b, np.int32) + (parent != NEW_GAME), \
        np.zeros(b, bool)


def test_the_most_visited_move_is_drawn_among_ties():
    """At temperature 0 the workers play the most visited child, ties drawn uniformly (as the
    JAX kernel and mctx do), not always the lowest slot."""
    tree = SearchTree(CPUSearchConfig(fpu_base=0.0, dirichlet_fraction=0.0),
                      nodes_per_block=256, max_blocks=64, num_slots=4096)
    tree.start(_flat_evaluator)
    tree.simulate(_flat_evaluator, 8)
    visits = tree.root().visits
    assert list(visits) == [2, 2, 2, 2]
    picks = {tree.choose_action(0.0, seed) for seed in range(32)}
    assert picks == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="temperature"):
        tree.choose_action(-1.0, 0)


# ------------------------------------------------- corrupt evaluator output (issue 32, item 2) --
def _fixed_evaluator(value=0.5, actions=(0, 1), player=0, dtype=np.int32):
    """Every state: the same legal actions (uniform priors), value and player."""
    def evaluate(parent, action, dest):
        b = len(parent)
        acts = np.tile(np.asarray(actions, dtype), (b, 1))
        pri = np.full(acts.shape, 1.0 / len(actions), np.float32)
        return (acts, pri, np.full(b, value, np.float32), np.full(b, player, np.int32),
                np.zeros(b, bool))
    return evaluate


@pytest.mark.parametrize("evaluator,msg", [
    # 1e30 overflowed the fixed-point sums (root value -8.4e13 before)
    (_fixed_evaluator(value=1e30), r"evaluator value 1e\+30 is outside q_bounds \[-1, 1\]"),
    (_fixed_evaluator(value=1.5), r"value 1.5 is outside q_bounds"),
    (_fixed_evaluator(actions=(1, 1)), "action id 1 appears twice"),
    (_fixed_evaluator(actions=(3, 1, 3)), "action id 3 appears twice"),
    (_fixed_evaluator(actions=(-7, 1)), r"action id -7 is out of range \[0, 7\)"),
    (_fixed_evaluator(actions=(0, 7)), r"action id 7 is out of range \[0, 7\)"),
    (_fixed_evaluator(player=7), "player 7 is out of range for 2 players"),
    (_fixed_evaluator(player=-2), "player -2 is out of range"),
    (_fixed_evaluator(actions=(0.0, 1.7), dtype=np.float32), "actions must be integers"),
], ids=["1e30", "1.5", "duplicate", "duplicate-unsorted", "id-7", "id-past-end", "player7",
        "player-2", "float-ids"])
def test_corrupt_evaluations_are_refused_with_one_line(evaluator, msg):
    tree = SearchTree(CPUSearchConfig(dirichlet_fraction=0.0), num_actions=NUM_ACTIONS)
    with pytest.raises(ValueError, match=msg) as err:
        tree.start(evaluator)
        tree.simulate(evaluator, 10)
    assert "\n" not in str(err.value)


def test_player_range_follows_num_players():
    one = SearchTree(CPUSearchConfig(dirichlet_fraction=0.0), num_players=1)
    with pytest.raises(ValueError, match="player 1 is out of range for 1 players"):
        one.start(_fixed_evaluator(player=1))
    with pytest.raises(ValueError, match="num_players must be an integer >= 1 and <= 2"):
        SearchTree(num_players=3)


def test_sums_at_the_value_extremes_are_exact():
    """Values on the widest bounds the tree takes (+-MAX_ABS_VALUE) sum exactly in the
    fixed-point nodes (the visit-count extreme, 2^31 - 1 visits, is in cpp/tests); wider
    bounds and values past the bounds are refused."""
    from turbozero.search.cpu import MAX_ABS_VALUE

    assert MAX_ABS_VALUE == ext.MAX_ABS_VALUE
    cfg = CPUSearchConfig(q_bounds=(-MAX_ABS_VALUE, MAX_ABS_VALUE), dirichlet_fraction=0.0)
    tree = SearchTree(cfg, num_players=1)
    top = _fixed_evaluator(value=MAX_ABS_VALUE, actions=(0, 1, 2))
    tree.start(top)
    tree.simulate(top, 300, leaves_per_step=4)
    d = tree.dump()
    assert tree.root().value == MAX_ABS_VALUE
    np.testing.assert_array_equal(d["value_sum"], d["visits"].astype(np.int64) * to_fixed(256.0))
    np.testing.assert_array_equal(d["value_sq_sum"],
                                  d["visits"].astype(np.int64) * to_fixed(256.0 ** 2))
    with pytest.raises(ValueError, match="outside q_bounds"):
        SearchTree(cfg, num_players=1).start(_fixed_evaluator(value=-MAX_ABS_VALUE - 0.5))
    with pytest.raises(ValueError, match=r"q_bounds must be .* within \[-256, 256\]"):
        CPUSearchConfig(q_bounds=(-1.0, 1e6))


@pytest.mark.parametrize("kwargs,field", [
    (dict(c_puct=float("inf")), "c_puct"), (dict(c_puct=float("nan")), "c_puct"),
    (dict(fpu_base=float("nan")), "fpu_base"), (dict(risk_beta=float("inf")), "risk_beta"),
    (dict(q_bounds=(-1.0, float("nan"))), "q_bounds"),
    (dict(dirichlet_alpha=float("inf")), "dirichlet_alpha"),
    (dict(dirichlet_fraction=float("nan")), "dirichlet_fraction"),
])
def test_search_config_refuses_non_finite_numbers(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field} must be"):
        CPUSearchConfig(**kwargs)


def test_tree_arguments_are_checked():
    tree = SearchTree(CPUSearchConfig(dirichlet_fraction=0.0))
    ev = _fixed_evaluator()
    tree.start(ev)
    tree.simulate(ev, 4)
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0, got nan"):
        tree.choose_action(float("nan"), 0)
    with pytest.raises(ValueError, match="root noise must be finite and >= 0"):
        tree.add_root_noise(np.array([-0.5, 1.5]), 0.25)
    with pytest.raises(ValueError, match="root noise must be finite"):
        tree.add_root_noise(np.array([np.nan, 1.0]), 0.25)
    with pytest.raises(ValueError, match="beta must be a finite number"):
        tree.soft_value(float("nan"))
    with pytest.raises(ValueError, match="num_simulations must be an integer >= 0"):
        tree.simulate(ev, 2.5)
