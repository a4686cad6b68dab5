"""PyRat mazes: the array layout, random generation in JAX and the JSON maze file.

Layout (shared by the env, the search and the renderers):

* cells are `(x, y)`, `(0, 0)` bottom-left; arrays are indexed `[y, x]`.
* directions UP=0 (y+1), RIGHT=1 (x+1), DOWN=2 (y-1), LEFT=3 (x-1), STAY=4.
* `cost: [H, W, 4]` is the number of turns needed to leave a cell in a direction:
  0 = wall or board edge, 1 = open passage, w >= 2 = mud of weight w (w <= 127: `mud_range`
  and maze files allow no more). A passage has the same cost seen from both sides. int8 in the
  env's state and from `generate` (a quarter of the bytes each step copies and the observation
  reads), int32 in a `Maze`; code that adds to it casts first.
* The 180-degree rotation maps cell (x, y) to (W-1-x, H-1-y) and direction d to (d+2) % 4.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from typing import Any, Union

import jax
import jax.numpy as jnp
import numpy as np

UP, RIGHT, DOWN, LEFT, STAY = 0, 1, 2, 3, 4
DX = np.array([0, 1, 0, -1, 0], dtype=np.int32)
DY = np.array([1, 0, -1, 0, 0], dtype=np.int32)
OPPOSITE = np.array([2, 3, 0, 1], dtype=np.int32)
FORMAT = "turbozero-pyrat-maze/1"


# ----------------------------------------------------------------------------- numpy side
@dataclasses.dataclass(frozen=True)
class Maze:
    """A fixed maze: walls, mud, cheese and the two start cells (plain numpy)."""

    width: int
    height: int
    cost: np.ndarray  # int32[H, W, 4]
    cheese: np.ndarray  # bool[H, W]
    player1: tuple[int, int]
    player2: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (see `docs/pyrat.md`): walls and mud listed once per passage."""
        walls, mud = [], []
        for y in range(self.height):
            for x in range(self.width):
                for d in (UP, RIGHT):
                    nx, ny = x + int(DX[d]), y + int(DY[d])
                    if nx >= self.width or ny >= self.height:
                        continue
                    c = int(self.cost[y, x, d])
                    if c == 0:
                        walls.append([x, y, nx, ny])
                    elif c > 1:
                        mud.append([x, y, nx, ny, c])
        ys, xs = np.nonzero(self.cheese)
        return {
            "format": FORMAT,
            "width": self.width,
            "height": self.height,
            "walls": walls,
            "mud": mud,
            "cheese": sorted([int(x), int(y)] for x, y in zip(xs, ys)),
            "player1": list(self.player1),
            "player2": list(self.player2),
        }

    def save(self, path: Union[str, os.PathLike]) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f)


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"maze file: {what} must be an integer, got {v!r}")
    return int(v)


def _cell(v: Any, what: str, w: int, h: int) -> tuple[int, int]:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise ValueError(f"maze file: {what} must be [x, y], got {v!r}")
    x, y = _int(v[0], what), _int(v[1], what)
    if not (0 <= x < w and 0 <= y < h):
        raise ValueError(f"maze file: {what} {[x, y]} is outside the {w}x{h} board")
    return x, y


def _passage(v: Any, what: str, w: int, h: int, n: int) -> tuple[int, int, int]:
    """(x, y, direction) of a passage given as [x1, y1, x2, y2(, weight)]."""
    if not isinstance(v, (list, tuple)) or len(v) != n:
        raise ValueError(f"maze file: each {what} entry must have {n} integers, got {v!r}")
    a = _cell(v[0:2], what, w, h)
    b = _cell(v[2:4], what, w, h)
    for d in range(4):
        if (a[0] + DX[d], a[1] + DY[d]) == b:
            return a[0], a[1], d
    raise ValueError(f"maze file: {what} {list(v)} joins cells that are not adjacent")


def reachable(cost: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """bool[H, W]: cells reachable from `start` (breadth-first, numpy)."""
    h, w = cost.shape[:2]
    seen = np.zeros((h, w), dtype=bool)
    seen[start[1], start[0]] = True
    todo = [start]
    while todo:
        x, y = todo.pop()
        for d in range(4):
            if cost[y, x, d] > 0:
                nx, ny = x + int(DX[d]), y + int(DY[d])
                if not seen[ny, nx]:
                    seen[ny, nx] = True
                    todo.append((nx, ny))
    return seen


def maze_from_dict(data: Any) -> Maze:
    """Parse and validate the JSON form; any problem raises `ValueError` naming it."""
    if not isinstance(data, dict):
        raise ValueError("maze file: the top level must be a JSON object")
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise ValueError(f"maze file: unknown format {fmt!r} (expected {FORMAT!r})")
    for k in ("width", "height", "cheese", "player1", "player2"):
        if k not in data:
            raise ValueError(f"maze file: missing key {k!r}")
    unknown = set(data) - {"format", "width", "height", "walls", "mud", "cheese", "player1",
                           "player2"}
    if unknown:
        raise ValueError(f"maze file: unknown keys {sorted(unknown)}")
    w, h = _int(data["width"], "width"), _int(data["height"], "height")
    if w < 1 or h < 1 or w * h < 2:
        raise ValueError(f"maze file: board {w}x{h} must have at least 2 cells")
    cost = np.zeros((h, w, 4), dtype=np.int32)
    for y in range(h):
        for x in range(w):
            for d in range(4):
                if 0 <= x + DX[d] < w and 0 <= y + DY[d] < h:
                    cost[y, x, d] = 1

    def setp(x: int, y: int, d: int, c: int) -> None:
        cost[y, x, d] = c
        cost[y + DY[d], x + DX[d], OPPOSITE[d]] = c

    for key, n in (("walls", 4), ("mud", 5)):
        entries = data.get(key, [])
        if not isinstance(entries, list):
            raise ValueError(f"maze file: {key!r} must be a list")
        for e in entries:
            x, y, d = _passage(e, key, w, h, n)
            if key == "walls":
                setp(x, y, d, 0)
            else:
                wt = _int(e[4], "mud weight")
                if not 2 <= wt <= 127:
                    raise ValueError(f"maze file: mud weight {wt} must be in [2, 127]")
                if cost[y, x, d] == 0:
                    raise ValueError(f"maze file: mud {list(e)} lies on a wall")
                setp(x, y, d, wt)
    if not isinstance(data["cheese"], list):
        raise ValueError("maze file: 'cheese' must be a list of [x, y]")
    cheese = np.zeros((h, w), dtype=bool)
    for c in data["cheese"]:
        x, y = _cell(c, "cheese", w, h)
        if cheese[y, x]:
            raise ValueError(f"maze file: cheese {[x, y]} listed twice")
        cheese[y, x] = True
    if not cheese.any():
        raise ValueError("maze file: at least one cheese is needed")
    p1 = _cell(data["player1"], "player1", w, h)
    p2 = _cell(data["player2"], "player2", w, h)
    for name, p in (("player1", p1), ("player2", p2)):
        if not (cost[p[1], p[0]] > 0).any():
            raise ValueError(f"maze file: {name} start {list(p)} is walled in on all sides")
    if not reachable(cost, p1).all():
        raise ValueError("maze file: the maze is not connected")
    return Maze(w, h, cost, cheese, p1, p2)


def load_maze(source: Union[str, os.PathLike, dict, Maze]) -> Maze:
    """A `Maze` from a path to a JSON maze file, a JSON string, a dict or a `Maze`."""
    if isinstance(source, Maze):
        return maze_from_dict(source.to_dict())
    if isinstance(source, dict):
        return maze_from_dict(source)
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        if not text.lstrip().startswith("{"):
            try:
                with open(source) as f:
                    text = f.read()
            except OSError as e:
                raise ValueError(f"maze file: cannot read {source!r}: {e}") from e
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"maze file: malformed JSON: {e}") from e
        return maze_from_dict(data)
    raise ValueError(f"maze: expected a path, JSON text, dict or Maze, got {type(source)}")


# ------------------------------------------------------------------------------- JAX side
def _sym(a: jax.Array) -> jax.Array:
    """Make a passage array invariant under the 180-degree rotation (flat i <-> n-1-i)."""
    flat = a.reshape(-1)
    i = jnp.arange(flat.shape[0])
    return jnp.where(i <= flat.shape[0] - 1 - i, flat, flat[::-1]).reshape(a.shape)


def passages_to_cost(hor: jax.Array, ver: jax.Array) -> jax.Array:
    """int8[H, W, 4] from horizontal passages [H, W-1] ((x,y)-(x+1,y)) and vertical [H-1, W]
    (weights at most 127)."""
    h, w = hor.shape[0], ver.shape[1]
    up = jnp.concatenate([ver, jnp.zeros((1, w), ver.dtype)], axis=0)
    down = jnp.concatenate([jnp.zeros((1, w), ver.dtype), ver], axis=0)
    right = jnp.concatenate([hor, jnp.zeros((h, 1), hor.dtype)], axis=1)
    left = jnp.concatenate([jnp.zeros((h, 1), hor.dtype), hor], axis=1)
    return jnp.stack([up, right, down, left], axis=-1).astype(jnp.int8)


def neighbour(a: jax.Array, d: int, fill: Any) -> jax.Array:
    """a[y + DY[d], x + DX[d]] for every cell (out of board -> `fill`), a: [H, W, ...]."""
    pad = [(1, 1), (1, 1)] + [(0, 0)] * (a.ndim - 2)
    p = jnp.pad(a, pad, constant_values=fill)
    h, w = a.shape[:2]
    return p[1 + DY[d]: 1 + DY[d] + h, 1 + DX[d]: 1 + DX[d] + w]


def _passage_ends(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat cell indices (a, b) of every passage: horizontal ones first ([H, W-1] order,
    (x, y)-(x+1, y)), then vertical ones ([H-1, W] order, (x, y)-(x, y+1))."""
    idx = np.arange(width * height).reshape(height, width)
    a = np.concatenate([idx[:, :-1].reshape(-1), idx[:-1, :].reshape(-1)])
    b = np.concatenate([idx[:, 1:].reshape(-1), idx[1:, :].reshape(-1)])
    return a, b


def components(is_open: jax.Array, width: int, height: int) -> jax.Array:
    """int32[H * W]: each cell's connected component, named by its smallest flat index.

    `is_open` is bool[passages] in `_passage_ends` order. Hooking (each open passage lowers the
    label its ends point to) plus pointer jumping (label = label[label]) settles in a few dozen
    rounds, where a flood needs one round per cell of the longest path (hundreds on big mazes).

    Under `vmap` (`custom_vmap`) the games' labels are one flat array, so each hooking is one
    scatter over the batch (a scatter with batch dimensions, as `vmap` makes it, took 2-3x as
    long), and one loop runs until no game changed (a settled game's round changes nothing).
    Where maze generation's time goes: docs/benchmarks.md, "PyRat env step (issue 34 item 6)".
    """
    return _components_fn(width, height)(is_open)


def _components_batch(is_open: jax.Array, width: int, height: int) -> jax.Array:
    """`components` of a batch: is_open bool[B, passages] -> int32[B, H * W]."""
    batch, n = is_open.shape[0], width * height
    a, b = _passage_ends(width, height)
    offset = (jnp.arange(batch, dtype=jnp.int32) * n)[:, None]  # game g's cells: g*n + cell

    def body(c):
        flat, _ = c  # [B * n]: each game's labels, offset by its first cell
        label = flat.reshape(batch, n)
        la, lb = label[:, a], label[:, b]
        low = jnp.minimum(la, lb).reshape(-1)
        # closed passages write past the end, which mode="drop" ignores
        new = flat.at[jnp.where(is_open, la, batch * n).reshape(-1)].min(low, mode="drop")
        new = new.at[jnp.where(is_open, lb, batch * n).reshape(-1)].min(low, mode="drop")
        new = new[new][new]
        return new, jnp.any(new != flat)

    start = jnp.arange(batch * n, dtype=jnp.int32)
    flat = jax.lax.while_loop(lambda c: c[1], body, (start, jnp.array(True)))[0]
    return flat.reshape(batch, n) - offset


@functools.lru_cache(maxsize=None)
def _components_fn(width: int, height: int):
    @jax.custom_batching.custom_vmap
    def run(is_open):
        return _components_batch(is_open[None], width, height)[0]

    @run.def_vmap
    def _batched(axis_size, in_batched, is_open):
        if not in_batched[0]:
            is_open = jnp.broadcast_to(is_open, (axis_size,) + is_open.shape)
        return _components_batch(is_open, width, height), True

    return run


def _twin(flat_h: jax.Array, flat_v: jax.Array) -> jax.Array:
    """Each passage's rotated twin, in `_passage_ends` order (the rotation reverses each part)."""
    return jnp.concatenate([flat_h[::-1], flat_v[::-1]])


def generate(key: jax.Array, width: int, height: int, cheese_count: int, wall_density: float,
             mud_density: float, mud_range: int) -> tuple[jax.Array, jax.Array]:
    """A random connected maze, symmetric under the 180-degree rotation, with symmetric cheese.

    Each passage is a wall with probability `wall_density`; an open one is mud with
    probability `mud_density`, of weight uniform in 2..mud_range. Then, while the maze has more
    than one connected component, every component opens its highest-scored wall to another
    component (random scores, fixed for the whole repair) together with its rotated twin. Cheese: `cheese_count // 2` random cells of one half of the
    board (start cells excluded) and their twins, plus the centre cell if the count is odd.
    Returns (cost int8[H, W, 4], cheese bool[H, W]).
    """
    kw_h, kw_v, km_h, km_v, kv_h, kv_v, kc, kr = jax.random.split(key, 8)
    w, h = width, height

    def open_value(km, kv, shape):
        """The cost of an open passage: mud of a random weight, or 1."""
        is_mud = jax.random.uniform(km, shape) < mud_density
        weight = jax.random.randint(kv, shape, 2, max(mud_range, 2) + 1)
        return jnp.where(is_mud & (mud_range >= 2), weight, 1).astype(jnp.int32)

    def draw(kw, km, kv, shape):
        is_open = jax.random.uniform(kw, shape) >= wall_density
        return _sym(jnp.where(is_open, open_value(km, kv, shape), 0))

    hor = draw(kw_h, km_h, kv_h, (h, w - 1))
    ver = draw(kw_v, km_v, kv_v, (h - 1, w))
    nh = hor.size
    passages = jnp.concatenate([hor.reshape(-1), ver.reshape(-1)])

    # Repair (Boruvka): every component opens its highest-scored wall to another component,
    # with the wall's twin, until one component is left. The scores are fixed and twin-symmetric,
    # so the opened walls are a random spanning tree of the components (as many openings as a
    # wall-at-a-time repair makes) in O(log components) rounds instead of one round per wall.
    rs_h, rs_v, rm_h, rm_v, rw_h, rw_v = jax.random.split(kr, 6)
    score = jnp.concatenate([_sym(jax.random.uniform(rs_h, hor.shape)).reshape(-1),
                             _sym(jax.random.uniform(rs_v, ver.shape)).reshape(-1)])
    opened = jnp.concatenate([_sym(open_value(rm_h, rw_h, hor.shape)).reshape(-1),
                              _sym(open_value(rm_v, rw_v, ver.shape)).reshape(-1)])
    a, b = _passage_ends(w, h)

    def not_done(c):
        _, label = c
        return jnp.any(label != 0)

    def repair(c):
        passages, label = c
        la, lb = label[a], label[b]
        candidate = (passages == 0) & (la != lb)
        s = jnp.where(candidate, score, -1.0)
        best = jnp.full(w * h, -1.0).at[la].max(s).at[lb].max(s)
        pick = candidate & ((s == best[la]) | (s == best[lb]))
        pick = pick | _twin(pick[:nh], pick[nh:])
        passages = jnp.where(pick, opened, passages)
        return passages, components(passages > 0, w, h)

    passages, _ = jax.lax.while_loop(not_done, repair, (passages, components(passages > 0, w, h)))
    hor, ver = passages[:nh].reshape(hor.shape), passages[nh:].reshape(ver.shape)
    cost = passages_to_cost(hor, ver)

    n = w * h
    idx = jnp.arange(n)
    half = (idx < n - 1 - idx) & (idx != 0)  # one cell of each rotated pair, start cells out
    k = cheese_count // 2
    flat = jnp.zeros(n, bool)
    if k:
        scores = jnp.where(half, jax.random.uniform(kc, (n,)), -1.0)
        _, chosen = jax.lax.top_k(scores, k)
        flat = flat.at[chosen].set(True).at[n - 1 - chosen].set(True)
    if cheese_count % 2:
        flat = flat.at[(n - 1) // 2].set(True)
    return cost, flat.reshape(h, w)


def max_cheese(width: int, height: int) -> int:
    """The largest cheese count `generate` can place on a width x height board."""
    n = width * height
    pairs = n // 2 - 1  # pairs of twin cells, the start pair excluded
    return 2 * pairs + (1 if n % 2 else 0)


# ------------------------------------------------------------------ distance to the cheese
BIG = 1 << 20  # "no cheese reachable" in `distance_to_cheese` (its value since the first version)


def make_distance_to_cheese(width: int, height: int, max_weight: int):
    """`f(cost, cheese) -> int32[H, W]`: mud-weighted turns from each cell to the nearest cheese
    (`BIG` where none is reachable), by Bellman-Ford relaxation until nothing changes.

    Where the time went (issue 34 item 6, docs/benchmarks.md): under `vmap` a `lax.while_loop`
    with a per-game stop condition carries a per-game select and a per-game reduction in every
    round, which cost 10x the loop itself (an 18-round loop of one add on [1024, 315] int16:
    0.49 ms with one stop condition, 4.7 ms with a per-game one, measured 2026-11-27 on the
    shared 2-core CPU). So the batched rule (`custom_vmap`) runs one loop for the whole batch,
    stopping when no game changed: extra rounds leave a settled game as it is (relaxation
    is idempotent at its fixed point), so the result is the same as each game's own loop.
    The games lie along the minor axis ([cells, games]), so the four neighbour shifts are whole
    rows; distances are int16 when every finite one fits (the default boards: 2 bytes a cell
    instead of 4 halves the memory every round streams through). Both measured in
    benchmarks/throughput/pyrat_env.py: about 4x over the vmapped per-game loop at batch 64.
    """
    n = width * height
    # int16 needs every finite distance (at most (n - 1) * max_weight) and two caps summed
    # (a wall's weight plus an unreached neighbour) below 2**15
    if (n - 1) * max(max_weight, 1) < 16000:
        dtype, cap = jnp.int16, 16000
    else:
        # values at or above BIG stay BIG, as the first version's loop kept them
        dtype, cap = jnp.int32, BIG
    offsets = [int(DY[d]) * width + int(DX[d]) for d in range(4)]  # flat neighbour offsets

    def prepare(cost, cheese):
        c = cost.reshape(n, 4).astype(jnp.int32)  # (int8 in the state)
        # a wall or the board edge weighs `cap`: crossing it never beats an unreached cell, and
        # it also stops the flat left/right shifts from wrapping round to the next row
        weights = jnp.where(c > 0, c, cap).astype(dtype).T  # [4, n]
        return weights, jnp.where(cheese.reshape(n), 0, cap).astype(dtype)

    def settle(weights, d0):
        """weights [4, n, B], d0 [n, B] -> the fixed point, one stop condition for all B."""
        fill = jnp.full((width, d0.shape[1]), cap, dtype)

        def shifted(d, off):  # out[i] = d[i + off], `cap` off the board
            f = fill[:abs(off)]
            return jnp.concatenate([d[off:], f]) if off > 0 else jnp.concatenate([f, d[:n + off]])

        def body(c):
            d, _ = c
            new = d
            for k in range(4):
                new = jnp.minimum(new, weights[k] + shifted(d, offsets[k]))
            return new, jnp.any(new != d)

        return jax.lax.while_loop(lambda c: c[1], body, (d0, jnp.array(True)))[0]

    def finish(d):
        return jnp.where(d >= cap, BIG, d.astype(jnp.int32)).reshape(height, width)

    @jax.custom_batching.custom_vmap
    def distance(cost, cheese):
        weights, d0 = prepare(cost, cheese)
        return finish(settle(weights[..., None], d0[:, None])[:, 0])

    @distance.def_vmap
    def _batched(axis_size, in_batched, cost, cheese):
        cost, cheese = (x if b else jnp.broadcast_to(x, (axis_size,) + x.shape)
                        for x, b in zip((cost, cheese), in_batched))
        weights, d0 = jax.vmap(prepare)(cost, cheese)  # [B, 4, n], [B, n]
        d = settle(weights.transpose(1, 2, 0), d0.T)
        return jax.vmap(finish)(d.T), True

    return distance


# ------------------------------------------------- the distance field kept in the state
def distance_dtype(width: int, height: int, max_weight: int) -> tuple[Any, int]:
    """(dtype, cap) of a distance field: int16 when every finite distance (at most
    (n - 1) * max_weight) and two caps summed (a wall's weight plus an unreached neighbour) fit
    below 2**15, else int32 with cap `BIG`. A cell at `cap` has no cheese reachable."""
    n = width * height
    if (n - 1) * max(max_weight, 1) < 16000:
        return jnp.int16, 16000
    return jnp.int32, BIG


class NearestCheese:
    """The mud-weighted distance from each cell to the nearest cheese, kept in the state and
    repaired when cheese is eaten instead of recomputed for every observation.

    Per game, per cell, a (distance, index) pair: the distance (`cap` where no cheese is
    reachable) and the flat index of a cheese at that distance (of equal ones the lowest, so the
    pair is a function of maze and cheese alone, however it was reached). The state keeps the
    pairs as one array, the *field*: on boards with int16 distances one int32 per cell,
    `distance << 16 | index` (`packed`), else int32[H, W, 2] (distance, index); `distance` and
    `index` read it. `fresh` builds the field from the cheese; `repair` updates it after cheese
    is eaten: a cell whose recorded cheese is still there keeps its pair (removing cheese cannot
    bring any nearer, and that one still is the least (distance, index)), every other cell starts
    unreached and Bellman-Ford relaxation from its neighbours settles it. Only the eaten
    cheese's region moves, in a few rounds, and games that ate nothing skip the loop (where the
    time went: docs/benchmarks.md, "PyRat env step (issue 34 item 6)").

    Relaxation minimises (distance, index) pairs until nothing changes; packed, a round is four
    adds and minimums over one array (two arrays and their selects were twice the kernels, same
    section), and the step's repair, gather, scatter and the absorb rule's select move one array
    instead of two. Under `vmap` the batched rule (`custom_vmap`) runs one loop for the games
    that ate, stopping when none of them changed: a settled game's round changes nothing, so each
    game gets what its own loop gives (a per-game stop condition under `vmap` cost 10x the loop
    itself, same section). Those games are first gathered into the smallest of a few fixed sizes
    that holds them (B/16 or B/4, at least 8; else the whole batch): random play eats cheese in
    about 1 game in 60 per step, and the loop's cost grows with the games it carries.
    """

    def __init__(self, width: int, height: int, max_weight: int) -> None:
        self.width, self.height = width, height
        self.n = n = width * height
        self.dtype, self.cap = distance_dtype(width, height, max_weight)
        self.index_dtype = jnp.int16 if n <= 32767 else jnp.int32
        # (distance << 16 | index) in int32: int16 distances (so n < 16001, indices below
        # 2**16), and the largest candidate ((2 * cap + 1) << 16 plus an index) below 2**31
        self.packed = self.dtype == jnp.int16
        self.cell_shape = (height, width) if self.packed else (height, width, 2)
        self.offsets = [int(DY[d]) * width + int(DX[d]) for d in range(4)]  # flat neighbours
        flat = (n,) if self.packed else (n, 2)

        @jax.custom_batching.custom_vmap
        def settle(cost, field, eaten, changed):
            f = self._settle_batch(cost[None], field.reshape((1,) + flat),
                                   jnp.reshape(eaten, (1, -1)), jnp.reshape(changed, (1,)))
            return f.reshape(self.cell_shape)

        @settle.def_vmap
        def _batched(axis_size, in_batched, cost, field, eaten, changed):
            # (an unbatched constant may arrive as a Python scalar)
            cost, field, eaten, changed = (
                x if b else jnp.broadcast_to(jnp.asarray(x), (axis_size,) + jnp.shape(x))
                for x, b in zip((cost, field, eaten, changed), in_batched))
            f = self._settle_batch(cost, field.reshape((axis_size,) + flat),
                                   eaten.reshape(axis_size, -1), changed)
            return f.reshape((axis_size,) + self.cell_shape), True

        self._settle_fn = settle

    def distance(self, field: jax.Array) -> jax.Array:
        """The distances of a field ([..., H, W], `dtype`; `cap` where no cheese is reachable)."""
        if self.packed:
            return (field >> 16).astype(self.dtype)
        return field[..., 0]

    def index(self, field: jax.Array) -> jax.Array:
        """The recorded cheese of a field ([..., H, W], `index_dtype`, flat y * W + x)."""
        if self.packed:
            return (field & 0xFFFF).astype(self.index_dtype)
        return field[..., 1].astype(self.index_dtype)

    def _shifted(self, a: jax.Array, off: int, fill: Any) -> jax.Array:
        """out[:, i] = a[:, i + off] for a [b, n], `fill` off the board."""
        f = jnp.full((a.shape[0], abs(off)), fill, a.dtype)
        n = self.n
        return (jnp.concatenate([a[:, off:], f], 1) if off > 0
                else jnp.concatenate([f, a[:, :n + off]], 1))

    def _loop(self, cost, field):
        """cost [b, H, W, 4], field [b, n] (packed) or [b, n, 2] -> its fixed point (one loop
        for all b). A wall or the board edge weighs `cap + 1`: a path across it never beats an
        unreached cell, and it also stops the flat left/right shifts from wrapping round to the
        next row."""
        b = field.shape[0]
        n = self.n
        c = cost.reshape(b, n, 4).astype(jnp.int32)
        cap = self.cap
        if self.packed:
            # [4, b, n], each direction's weights contiguous, already in the distance bits
            w = (jnp.where(c > 0, c, cap + 1) << 16).transpose(2, 0, 1)

            def body(carry):
                p, _ = carry
                new = p
                for k in range(4):
                    new = jnp.minimum(new, w[k] + self._shifted(p, self.offsets[k], cap << 16))
                return new, jnp.any(new != p)

            return jax.lax.while_loop(lambda carry: carry[1], body, (field, jnp.array(True)))[0]

        w = jnp.where(c > 0, c, cap + 1).astype(self.dtype).transpose(2, 0, 1)

        def body(carry):
            d, i, _ = carry
            new, idx = d, i
            for k in range(4):
                cd = w[k] + self._shifted(d, self.offsets[k], cap)
                ci = self._shifted(i, self.offsets[k], 0)
                better = (cd < new) | ((cd == new) & (ci < idx))
                new, idx = jnp.where(better, cd, new), jnp.where(better, ci, idx)
            return new, idx, jnp.any(new != d) | jnp.any(idx != i)

        d, i, _ = jax.lax.while_loop(lambda carry: carry[2], body,
                                     (field[..., 0], field[..., 1], jnp.array(True)))
        return jnp.stack([d, i], axis=-1)

    def _restart_and_settle(self, cost, field, eaten):
        """[b, ...]: the cells whose recorded cheese is in `eaten` ([b, k], -1 for none)
        restart unreached (distance `cap`, the index kept), then the loop."""
        near = self.index(field).astype(jnp.int32)
        lost = jnp.any(near[..., None] == eaten[:, None, :], axis=-1)
        if self.packed:
            return self._loop(cost, jnp.where(lost, (self.cap << 16) | near, field))
        return self._loop(cost, field.at[..., 0].set(jnp.where(lost, self.cap, field[..., 0])))

    def _settle_batch(self, cost, field, eaten, changed):
        """[B, ...] games; `changed` bool[B] marks the games to settle (the others are settled
        and skip the loop); they are gathered into the smallest size that holds them (class
        docstring)."""
        b = field.shape[0]
        count = jnp.sum(changed)
        sizes = sorted({min(max(8, b // 16), b), min(max(8, b // 4), b)} - {b})

        def none(_):
            return field

        def full(_):
            return self._restart_and_settle(cost, field, eaten)

        def compact(k):
            def run(_):
                idx = jnp.nonzero(changed, size=k, fill_value=b)[0]  # b: padding, dropped
                f = self._restart_and_settle(
                    *(jnp.take(a, idx, axis=0, mode="clip") for a in (cost, field, eaten)))
                return field.at[idx].set(f, mode="drop")
            return run

        branches = [none] + [compact(k) for k in sizes] + [full]
        # 0 none, then the first size that holds count, else full (scalars: an array constant
        # here becomes a constant of the custom_vmap call, which vmap of a lax.cond around the
        # step then takes for a batched one and refuses)
        which = sum((count > s).astype(jnp.int32) for s in [0] + sizes)
        return jax.lax.switch(which, branches, None)

    def fresh(self, cost: jax.Array, cheese: jax.Array) -> jax.Array:
        """The field of `cheese` (bool[H, W]) in the maze `cost` ([H, W, 4])."""
        dist = jnp.where(cheese, 0, self.cap).astype(jnp.int32)
        near = jnp.arange(self.n, dtype=jnp.int32).reshape(self.height, self.width)
        if self.packed:
            field = (dist << 16) | near
        else:
            field = jnp.stack([dist, near], axis=-1)
        return self._settle_fn(cost, field, jnp.full((1,), -1, jnp.int32), jnp.array(True))

    def repair(self, cost: jax.Array, field: jax.Array, eaten: jax.Array) -> jax.Array:
        """The field after the cheese at the flat cells `eaten` (int32[k], -1 for none) is
        gone: the cells whose recorded cheese was eaten restart unreached. A game that ate
        nothing is left as it is (an eaten cheese's cell records itself, so one eaten means a
        cell to restart; testing `eaten` is a few compares where a reduction over the board was
        the largest kernel of a repair with nothing eaten: docs/benchmarks.md, same section)."""
        eaten = jnp.asarray(eaten, jnp.int32)
        return self._settle_fn(cost, field, eaten, jnp.any(eaten >= 0))

    def fresh_numpy(self, cost: np.ndarray, cheese: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`fresh` in numpy (for a fixed maze: made once, not at every init); the least
        (distance, index) pairs are minimised packed into int64."""
        n, cap = self.n, self.cap
        c = cost.reshape(n, 4).astype(np.int64)
        w = (np.where(c > 0, c, cap + 1) << 32).T
        p = (np.where(cheese.reshape(n), 0, cap).astype(np.int64) << 32) | np.arange(n)

        def shifted(a, off):
            out = np.full_like(a, cap << 32)
            if off > 0:
                out[:n - off] = a[off:]
            else:
                out[-off:] = a[:n + off]
            return out

        while True:
            new = p.copy()
            for k in range(4):
                new = np.minimum(new, w[k] + shifted(p, self.offsets[k]))
            if (new == p).all():
                break
            p = new
        dist, near = p >> 32, p & 0xFFFFFFFF
        if self.packed:
            return ((dist << 16) | near).astype(np.int32).reshape(self.cell_shape)
        return np.stack([dist, near], axis=-1).astype(np.int32).reshape(self.cell_shape)

    def finish(self, field: jax.Array) -> jax.Array:
        """int32[H, W]: the field's distances with `BIG` where no cheese is reachable
        (`distance_to_cheese`)."""
        dist = (field >> 16) if self.packed else field[..., 0]
        return jnp.where(dist >= self.cap, BIG, dist.astype(jnp.int32))
