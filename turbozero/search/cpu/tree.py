"""One game's tree searched in C++ with an evaluator called from Python (docs/cpu_search.md).

The evaluator answers a batch of requests `(parent_slot, action, dest_slot)`: "the state reached
from the state in `parent_slot` by `action`, stored into `dest_slot`" (`parent_slot == NEW_GAME`:
a fresh game's first state). It returns `Evaluation`-shaped arrays over the legal actions only,
padded with `NO_ACTION`. The same protocol drives the multi-threaded self-play
(`turbozero.search.cpu.selfplay`), where a jitted JAX function is the evaluator.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, NamedTuple, Optional

import jax
import numpy as np

from turbozero.search.cpu._ext import require_extension
from turbozero.search.cpu.pools import MAX_BLOCKS, NODES_PER_BLOCK, _pool_builder, node_pool_bytes
from turbozero.search.fpu import FPU_BASE
from turbozero.validation import check_bounds, check_int, check_real

# Named sentinels, equal to the extension's (checked by tests/search/test_cpu_search.py).
NO_ACTION = -1  # padding of an evaluator's action rows; the root's action
NO_STATE_SLOT = -1
NEW_GAME = -2  # parent_slot of a request for a fresh game's first state
# The largest |value| the C++ tree takes (q_bounds lie within it): its fixed-point sums cannot
# overflow below it (cpp/node_pool.hpp, kMaxAbsValue)
MAX_ABS_VALUE = 256.0


class Evaluation(NamedTuple):
    """An evaluator's answer to B requests (K: the most legal actions of any of them)."""

    actions: np.ndarray  # int32[B, K] legal actions, NO_ACTION pads (anywhere in a row)
    priors: np.ndarray  # float32[B, K] their priors (>= 0, finite)
    value: np.ndarray  # float32[B] value of the state for `player`
    player: np.ndarray  # int32[B] player to move in the state
    terminal: np.ndarray  # bool[B] game over: no children, `value` is the outcome
    # float32[B, 3] a WDL head's [win, draw, loss] for `player` (optional sixth element; the
    # tree averages it at the root, terminal states counting their outcome), or None
    wdl: Optional[np.ndarray] = None


Evaluator = Callable[[np.ndarray, np.ndarray, np.ndarray], Evaluation]


@dataclasses.dataclass(frozen=True)
class CPUSearchConfig:
    """The formulas of `SpecPUCT` + `PUCTRoot` (turbozero/search/selection.py, roots.py), and
    the `cpu` search family's config (`turbozero.search.search`, `turbozero.search.cpu.search`).

    c_puct: exploration constant. fpu_base: unvisited child scores `Q_parent - fpu_base*(1-P)`.
    risk_beta: entropic-risk Q `mean + beta/2 * var`, clamped to q_bounds (0: plain AlphaZero).
    dirichlet_alpha, dirichlet_fraction: root noise over the legal actions (fraction 0: none).
    num_simulations, leaves_per_step: one search of the `cpu` family (defaults
    those of `TreeSearchConfig`); the self-play (`CPUSelfPlayConfig`) has its own fields for
    them, which apply there (a nested config that sets these to others is a ValueError).
    """

    c_puct: float = 1.5
    fpu_base: float = FPU_BASE
    risk_beta: float = 0.0
    q_bounds: tuple[float, float] = (-1.0, 1.0)
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    num_simulations: int = 32
    leaves_per_step: int = 1
    family: ClassVar[str] = "cpu"

    def for_evaluation(self) -> "CPUSearchConfig":
        """This search made deterministic for evaluation: no root noise."""
        return dataclasses.replace(self, dirichlet_fraction=0.0)

    def __post_init__(self) -> None:
        # the C++ fields are int32
        check_int("num_simulations", self.num_simulations, minimum=1, maximum=2**31 - 1)
        check_int("leaves_per_step", self.leaves_per_step, minimum=1, maximum=2**31 - 1)
        check_real("c_puct", self.c_puct, above=0)
        check_real("fpu_base", self.fpu_base, minimum=0)
        check_real("risk_beta", self.risk_beta)
        # the C++ sums are overflow-free for values within MAX_ABS_VALUE (cpp/node_pool.hpp)
        check_bounds("q_bounds", self.q_bounds, limit=MAX_ABS_VALUE)
        check_real("dirichlet_alpha", self.dirichlet_alpha, above=0)
        check_real("dirichlet_fraction", self.dirichlet_fraction, minimum=0, maximum=1)

    @classmethod
    def from_jax(cls, selection, root) -> "CPUSearchConfig":
        """The same search as the JAX kernel's `SpecPUCT(...)` selection and `PUCTRoot(...)`."""
        return cls(c_puct=selection.c_puct, fpu_base=selection.fpu_base,
                   risk_beta=selection.risk_beta, q_bounds=tuple(selection.q_bounds),
                   dirichlet_alpha=root.dirichlet_alpha,
                   dirichlet_fraction=root.dirichlet_fraction)

    @classmethod
    def from_tree(cls, config) -> "CPUSearchConfig":
        """The `cpu` family's search equal to the tree family's `config` (a `TreeSearchConfig`
        with `SpecPUCT` selection and a `PUCTRoot`): visit for visit with one leaf per step
        (tests/search/test_cpu_family.py). Its other settings have no C++ counterpart: a
        `max_children`, `extra_nodes` or `discount` other than the default is a ValueError."""
        for name, default in (("max_children", None), ("extra_nodes", 0), ("discount", 1.0)):
            if getattr(config, name) != default:
                raise ValueError(f"TreeSearchConfig.{name}={getattr(config, name)!r} has no "
                                 "counterpart in the C++ search")
        return dataclasses.replace(cls.from_jax(config.selection, config.root),
                                   num_simulations=config.num_simulations,
                                   leaves_per_step=config.leaves_per_step)

    # the memory bound's count of a search of this family (turbozero/memory.py): a search of B
    # roots runs the self-play of one move of B games (`cpu.search.play_config`: no subtree
    # kept, one state slot per simulation and the root), whose pools these are
    def tree_shapes(self, env, states: Any, with_wdl: bool = False) -> Any:
        """The device-side state pool a search of the batch `states` holds (B x
        (num_simulations + leaves_per_step + 1) + 1 env states), as shape structs
        (`CPUSelfPlayConfig.tree_shapes`: `jax.eval_shape` of the pool's build). The C++
        trees are host memory: `host_bytes`."""
        del with_wdl
        return jax.eval_shape(_pool_builder(env, _batch(states) * self._slots() + 1))

    def host_bytes(self, env, states: Any) -> int:
        """Bytes of the C++ node pools of the B trees at their fullest (`node_pool_bytes`)."""
        return node_pool_bytes(_batch(states), NODES_PER_BLOCK, MAX_BLOCKS, self._slots(),
                               env.max_legal_actions)

    def _slots(self) -> int:
        """State slots a game of a direct search holds: the root and one per simulation."""
        return self.num_simulations + self.leaves_per_step + 1

    def tree_settings(self, batch: str, env: Any = None) -> str:
        """The settings the memory bound names (`batch`: the roots, e.g. batch=64)."""
        del env
        return (f"{batch} x (num_simulations={self.num_simulations} + leaves_per_step="
                f"{self.leaves_per_step} + 1) states and their nodes")

    def to_native(self, *, num_players: int = 2, num_actions: Optional[int] = None):
        """The C++ config; the evaluator's players must lie in [0, num_players) and its action
        ids in [0, num_actions) (None: any id >= 0)."""
        ext = require_extension()
        check_int("num_players", num_players, minimum=1, maximum=2)
        check_int("num_actions", num_actions, minimum=1, maximum=2**31 - 1, optional=True)
        c = ext.SearchConfig()
        c.num_players = int(num_players)
        if num_actions is not None:
            c.num_actions = int(num_actions)
        c.c_puct = float(self.c_puct)
        c.fpu_base = float(self.fpu_base)
        c.risk_beta = float(self.risk_beta)
        c.q_low, c.q_high = (float(b) for b in self.q_bounds)
        c.dirichlet_alpha = float(self.dirichlet_alpha)
        c.dirichlet_fraction = float(self.dirichlet_fraction)
        return c


def _batch(states: Any) -> int:
    return int(np.shape(states.current_player)[0])


def checked_evaluation(result, num_requests: int) -> Evaluation:
    """The evaluator's answer as contiguous arrays of the protocol's dtypes, or a ValueError
    naming what is wrong (shape, non-finite value or prior, negative prior)."""
    if not isinstance(result, tuple) or len(result) not in (5, 6):
        raise ValueError("evaluator must return (actions, priors, value, player, terminal"
                         f"[, wdl]), got {type(result).__name__}")
    actions, priors, value, player, terminal = (np.asarray(x) for x in result[:5])
    wdl = None if len(result) == 5 or result[5] is None else np.asarray(result[5])
    if wdl is not None:
        if wdl.shape != (num_requests, 3):
            raise ValueError(f"evaluator wdl must be [B={num_requests}, 3], got {wdl.shape}")
        if not np.all(np.isfinite(wdl)) or np.any(wdl < 0):
            raise ValueError("evaluator wdl must be finite and >= 0")
        wdl = np.ascontiguousarray(wdl, np.float32)
    if actions.ndim != 2 or actions.shape[0] != num_requests:
        raise ValueError(f"evaluator actions must be [B={num_requests}, K], got {actions.shape}")
    if priors.shape != actions.shape:
        raise ValueError(f"evaluator priors must match actions {actions.shape}, got {priors.shape}")
    for name, a in (("value", value), ("player", player), ("terminal", terminal)):
        if a.shape != (num_requests,):
            raise ValueError(f"evaluator {name} must be [B={num_requests}], got {a.shape}")
    for name, a in (("actions", actions), ("player", player)):
        # a float id would be truncated to another action, a wide one wrapped by int32
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"evaluator {name} must be integers, got dtype {a.dtype}")
        if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
            raise ValueError(f"evaluator {name} must fit int32, got {a.min()}..{a.max()}")
    if not np.all(np.isfinite(value)):
        raise ValueError("evaluator value has non-finite entries")
    legal = actions != NO_ACTION
    if not np.all(np.isfinite(priors[legal])) or np.any(priors[legal] < 0):
        raise ValueError("evaluator priors must be finite and >= 0 on legal actions")
    return Evaluation(
        np.ascontiguousarray(actions, np.int32), np.ascontiguousarray(priors, np.float32),
        np.ascontiguousarray(value, np.float32), np.ascontiguousarray(player, np.int32),
        np.ascontiguousarray(terminal, np.bool_), wdl)


def _checked(evaluate: Evaluator):
    def call(parent, action, dest):
        out = tuple(checked_evaluation(evaluate(parent, action, dest), len(parent)))
        return out if out[5] is not None else out[:5]
    return call


class RootStats(NamedTuple):
    actions: np.ndarray  # int32[K] the root's legal actions
    visits: np.ndarray  # uint32[K] their visit counts
    priors: np.ndarray  # float32[K] their priors (after root noise)
    q: np.ndarray  # float64[K] mean value of each child for the root's mover (0 unvisited)
    value: float  # the root's mean value for its mover
    root_visits: int  # the root's visits (its own evaluation included)
    player: int
    # float64[3] the average [win, draw, loss] for the root's mover over the evaluations backed
    # up through the root since it became the root, or None when the evaluator gave no WDL
    wdl: Optional[np.ndarray] = None


class SearchTree:
    """One game's search tree in the C++ node pool.

    nodes_per_block, max_blocks: the pool (one block of nodes must hold the most legal actions
    of a state); num_slots: the state slots this tree hands out (one per evaluated node).
    Running out of nodes or slots raises `PoolExhaustedError` (a MemoryError).
    num_players (1 or 2), num_actions (None: unbounded): the evaluator's players must lie in
    [0, num_players) and its action ids in [0, num_actions), distinct within a state; its
    values within `config.q_bounds`. Anything else raises a ValueError naming it.
    """

    def __init__(self, config: CPUSearchConfig = CPUSearchConfig(), *, nodes_per_block: int = 16384,
                 max_blocks: int = 64, num_slots: int = 4096, num_players: int = 2,
                 num_actions: Optional[int] = None):
        ext = require_extension()
        check_int("nodes_per_block", nodes_per_block, minimum=2)
        check_int("max_blocks", max_blocks, minimum=1)
        check_int("num_slots", num_slots, minimum=2, maximum=2**31 - 1)
        self.config = config
        self._tree = ext.SearchTree(
            config.to_native(num_players=num_players, num_actions=num_actions),
            nodes_per_block, max_blocks, num_slots)

    def start(self, evaluate: Evaluator, parent_slot: int = NEW_GAME,
              action: int = NO_ACTION) -> None:
        """A new root: the evaluator makes its state (from `parent_slot` by `action`)."""
        self._tree.start(_checked(evaluate), parent_slot, action)

    def simulate(self, evaluate: Evaluator, num_simulations: int,
                 leaves_per_step: int = 1) -> int:
        """Run num_simulations simulations, up to leaves_per_step leaves per evaluator call
        (virtual loss between them). Returns the number of selection collisions."""
        check_int("num_simulations", num_simulations, minimum=0, maximum=2**31 - 1)
        check_int("leaves_per_step", leaves_per_step, minimum=1, maximum=2**31 - 1)
        return self._tree.simulate(_checked(evaluate), num_simulations, leaves_per_step)

    def add_root_noise(self, eta: np.ndarray, fraction: float) -> None:
        """Root priors become `(1 - fraction) P + fraction * eta` (eta over the root's legal
        actions, in `root().actions` order)."""
        check_real("fraction", fraction, minimum=0, maximum=1)
        eta = np.ascontiguousarray(eta, np.float64)
        if eta.ndim != 1:
            raise ValueError(f"eta must be one number per legal root action, got shape {eta.shape}")
        self._tree.add_root_noise(eta, float(fraction))

    def add_dirichlet_noise(self, rng: np.random.Generator) -> np.ndarray:
        """Dirichlet(config.dirichlet_alpha) over the root's legal actions, mixed in with
        config.dirichlet_fraction; returns the draw."""
        n = len(self.root().actions)
        eta = rng.dirichlet(np.full(n, self.config.dirichlet_alpha))
        self.add_root_noise(eta, self.config.dirichlet_fraction)
        return eta

    def root(self) -> RootStats:
        d = self._tree.root()
        w = d["wdl"]
        wdl = np.array([w["win"], w["draw"], w["loss"]]) if w["count"] else None
        return RootStats(d["actions"], d["visits"], d["priors"], d["q"], d["value"],
                         d["root_visits"], d["player"], wdl)

    def set_seat_betas(self, beta0: float, beta1: float) -> None:
        """Per-seat entropic-risk betas: selection at a node uses the beta of its mover (the JAX
        kernel's `risk_beta[B, P]`); both default to `config.risk_beta`."""
        check_real("beta0", beta0)
        check_real("beta1", beta1)
        self._tree.set_seat_betas(float(beta0), float(beta1))

    def soft_value(self, beta: float) -> float:
        """The root's LogSumExp soft value for its mover at `beta` (the JAX kernel's
        `risk_value`, docs/search.md): 0 at beta 0."""
        check_real("beta", beta)
        return float(self._tree.soft_value(float(beta)))

    def dump(self) -> dict:
        """Every node depth-first: parent index, action, player, flags, visits, fixed-point sums,
        prior (for tests)."""
        return self._tree.dump()

    def choose_action(self, temperature: float, seed: int) -> int:
        """The root action the self-play workers play at `temperature` (0: the most visited,
        ties drawn uniformly; else visits^(1/tau)), drawn with `seed`."""
        check_real("temperature", temperature, minimum=0)
        check_int("seed", seed, minimum=0, maximum=2**64 - 1)
        return int(self._tree.choose_action(float(temperature), int(seed)))

    def advance(self, action: int) -> None:
        """Play `action`: its subtree becomes the tree (the rest is freed in O(1))."""
        self._tree.advance(int(action))

    @property
    def nodes_used(self) -> int:
        return self._tree.nodes_used

    @property
    def free_slots(self) -> int:
        return self._tree.free_slots
