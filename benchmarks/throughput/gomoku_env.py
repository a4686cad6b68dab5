"""Gomoku on CPU: the JAX env against a vectorised numpy implementation of the same rules
(issue 34, item 9; docs/benchmarks.md, "Gomoku").

    python benchmarks/throughput/gomoku_env.py [--size 100] [--win-length 8] [--players 3] [--view 21]
                                      [--batches 256] [--warm 40] [--steps 32] [--repeats 7]
                                      [--no-play] [--ref REV]

Two workloads, each with and without the observation of every state after each step:

* replay (the env step alone): `warm` random legal moves are recorded from fresh games, then
  the next `steps` moves of every game are replayed from the states after the warm-up. JAX:
  one jitted `lax.scan` of `vmap(env.transition)` (or `vmap(env.step)`, which computes the
  observation) over the recorded actions; the observation rides in the carry, so every
  step's is computed and written, as numpy writes its array. numpy: the start states copied
  into `NumpyGomoku`, then its `step` (and `observe`) per move. Both sides do exactly the
  same work: the final states (and last observation) are checked to be identical.
* random play (sampling included): `batch` fresh games, then `steps` rounds of (draw a
  uniformly random legal action per game, step every game, restart the games that ended).
  JAX: `envs.sampling.uniform_legal_action` (a key per game) and a restart under a
  batch-level `lax.cond`; numpy: one uniform number per game and the first index whose
  running count of legal actions passes it (what `uniform_legal_action` computes).

`NumpyGomoku` keeps a batch of games in numpy arrays, updated in place and vectorised over
the batch (no Python loop over games or cells): the boards inside a frame of -1 cells, so
that a view window is a slice of a strided view (`as_strided`) and the four lines through a
new stone one flat `np.take` of 8 (W - 1) cells; the runs along them counted unrolled, the
chain counts updated with two `bincount`s, the thumbnail's per-block stone counts kept
incrementally (as the env does), the observation built channels-first and transposed once
into a reused buffer. Work that only some games need (finished games, illegal actions, the
view centre's fallback, restarts) runs on those games alone. Before timing, the script
checks that it and the env give bit-identical states and observations for the same actions
(random legal ones with some illegal ones mixed in, on the benchmarked configuration and on
a 9x9 one where games end, absorb and hit the step cap).

Timing: `benchmarks/tools/timing.py`'s `time_compiled` calls every side once per repeat, in
alternating order, after one warm-up call each, and refuses a timed JAX call that compiles or
runs JAX eagerly; the numpy side is plain host code timed by the same perf_counter. `--ref
REV` also times the env as it was at git revision REV (its envs/gomoku package,
loaded as a separate package; BEFORE below is the env before this work).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import envs  # noqa: E402
from envs.gomoku import DEFAULT_REWARDS_BY_PLACE  # noqa: E402
from envs.sampling import uniform_legal_action  # noqa: E402
from benchmarks.tools.revisions import game_at_revision  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402

# the env before issue 34 item 9 (board-wide thumbnail, per-cell window gathers, whole-state
# selects for finished games and illegal actions)
BEFORE = "d33fe96"

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))
STATE_FIELDS = ("board", "current_player", "rewards", "terminated", "truncated",
                "legal_action_mask", "step_count", "last_move", "view_centre", "row_empties",
                "chain_counts", "winner", "places", "step_reward")


class NumpyGomoku:
    """A batch of gomoku games in numpy arrays, updated in place and vectorised over the batch:
    the rules of envs/gomoku (docs/gomoku.md), its state fields under the same names."""

    def __init__(self, size: int, win_length: int, num_players: int, view: int, batch: int,
                 max_episode_steps: Optional[int] = None, rewards_by_place=None):
        self.S, self.W, self.P, self.V, self.B = size, win_length, num_players, view, batch
        self.h, self.A = view // 2, view * view
        self.cap = max_episode_steps
        self.rewards_by_place = np.asarray(
            rewards_by_place or DEFAULT_REWARDS_BY_PLACE[num_players], np.float32)
        self.blk = -(-size // view)  # board cells per thumbnail block side
        # the env's thumbnail divides by blk^2 as XLA compiles it: times the float32 reciprocal
        self.inv_area = np.float32(1) / np.float32(self.blk * self.blk)
        self.games = np.arange(batch)
        d, k, sign = np.asarray(DIRECTIONS), np.arange(1, win_length), np.array([1, -1])
        self.arm_dr = sign[None, :, None] * d[:, 0, None, None] * k  # [4, 2, W - 1]
        self.arm_dc = sign[None, :, None] * d[:, 1, None, None] * k
        self.first = np.arange(view) * self.blk  # first board row (column) of each block
        pad = view * self.blk - size
        on = np.pad(np.ones((size, size), np.int32), ((0, pad), (0, pad)))
        self.on_share = (on.reshape(view, self.blk, view, self.blk).sum((1, 3))
                         .astype(np.float32) * self.inv_area)  # constant plane
        # the boards live inside a frame of -1 cells wide enough for every view and line read
        # near the edge: a window is a strided view's slice, a line a flat gather, no clipping
        self.pad = pad = max(self.h, win_length - 1)
        self.side = side = size + 2 * pad
        self.framed = np.full((batch, side, side), -1, np.int8)
        self.board = self.framed[:, pad:pad + size, pad:pad + size]  # a view
        item = self.framed.strides
        self.windows = np.lib.stride_tricks.as_strided(  # [B, side-V+1, side-V+1, V, V]
            self.framed, (batch, side - view + 1, side - view + 1, view, view),
            (item[0], item[1], item[2], item[1], item[2]), writeable=False)
        self.arm_offsets = (self.arm_dr * side + self.arm_dc).reshape(-1)  # flat, [4 * 2 * (W-1)]
        # per thumbnail block, the stones of each seat (seat-major: one gather per observation)
        self.block_counts = np.zeros((batch, num_players, view, view), np.int16)
        self.current_player = np.zeros(batch, np.int32)
        self.rewards = np.zeros((batch, num_players), np.float32)
        self.terminated = np.zeros(batch, bool)
        self.truncated = np.zeros(batch, bool)
        self.legal_action_mask = np.zeros((batch, self.A), bool)
        self.step_count = np.zeros(batch, np.int32)
        self.last_move = np.zeros((batch, 2), np.int32)
        self.view_centre = np.zeros((batch, 2), np.int32)
        self.row_empties = np.zeros((batch, size), np.int32)
        self.chain_counts = np.zeros((batch, num_players, win_length + 1), np.int32)
        self.winner = np.zeros(batch, np.int32)
        self.places = np.zeros((batch, num_players), np.int32)
        self.step_reward = np.zeros(batch, np.float32)
        self._planes = np.empty((batch, 2 * num_players + 4, view, view), np.float32)
        self._observation = np.empty((batch, view, view, 2 * num_players + 4), np.float32)
        self.reset(np.ones(batch, bool))

    def reset(self, which: np.ndarray) -> None:
        """Start new games where `which` (bool[B]) is set."""
        g = np.flatnonzero(which)
        if g.size == 0:
            return
        self.board[g] = 0
        self.block_counts[g] = 0
        self.current_player[g] = 0
        self.rewards[g] = 0
        self.terminated[g] = False
        self.truncated[g] = False
        self.step_count[g] = 0
        self.last_move[g] = -1
        self.view_centre[g] = self.S // 2
        self.row_empties[g] = self.S
        self.chain_counts[g] = 0
        self.winner[g] = -1
        self.places[g] = -1
        self.step_reward[g] = 0
        self.legal_action_mask[g] = (self.window(g, self.view_centre[g]) == 0).reshape(g.size, -1)

    def load(self, state) -> None:
        """Copy a batch of the env's states (any object with its field names) into these games."""
        for name in STATE_FIELDS:
            np.copyto(getattr(self, name), np.asarray(getattr(state, name)))
        if getattr(state, "block_counts", None) is not None:
            np.copyto(self.block_counts, np.moveaxis(np.asarray(state.block_counts), -1, 1))
        else:  # an env without them (`--ref` of the first version): count the boards' blocks
            pad = self.V * self.blk - self.S
            blocks = np.pad(self.board, ((0, 0), (0, pad), (0, pad))).reshape(
                self.B, self.V, self.blk, self.V, self.blk)
            for seat in range(self.P):
                self.block_counts[:, seat] = (blocks == seat + 1).sum(axis=(2, 4))

    def differences(self, state) -> list:
        """The names of the fields where the env's batch of states differs from these games."""
        names = [n for n in STATE_FIELDS
                 if not (getattr(self, n).dtype == np.asarray(getattr(state, n)).dtype
                         and np.array_equal(getattr(self, n), np.asarray(getattr(state, n))))]
        counts = getattr(state, "block_counts", None)
        if counts is not None and not np.array_equal(
                self.block_counts, np.moveaxis(np.asarray(counts), -1, 1)):
            names.append("block_counts")
        return names

    def window(self, g: np.ndarray, centre: np.ndarray) -> np.ndarray:
        """int8[n, V, V]: the boards of games `g` under views centred at `centre` [n, 2], -1
        beyond the edge."""
        off = self.pad - self.h  # the window's first framed row (column) minus the centre's
        return self.windows[g, centre[:, 0] + off, centre[:, 1] + off]

    def places_of(self, counts: np.ndarray, winner: np.ndarray) -> np.ndarray:
        """int32[n, P]: places of n finished games (winner first, then chain profiles, ties in
        seat order)."""
        P = self.P
        is_winner = (np.arange(P) == winner[:, None]).astype(np.int32)
        keys = np.concatenate([is_winner[:, :, None], counts[:, :, :1:-1]], axis=2)  # [n, P, K]
        diff = keys[:, :, None, :] - keys[:, None, :, :]
        first = np.argmax(diff != 0, axis=-1)
        lead = np.take_along_axis(diff, first[..., None], axis=-1)[..., 0]
        seat = np.arange(P)
        beats = (lead > 0) | ((lead == 0) & (seat[:, None] < seat[None, :]))
        return beats.sum(axis=1).astype(np.int32)

    def step(self, action: np.ndarray) -> None:
        """Apply int[B] actions: finished games absorb (zero rewards), an illegal action ends
        its game with the protocol's penalty, every other game places a stone."""
        A, S, W, P = self.A, self.S, self.W, self.P
        done = self.terminated | self.truncated
        legal = (self.legal_action_mask[self.games, np.clip(action, 0, A - 1)]
                 & (action >= 0) & (action < A))
        illegal = ~legal & ~done
        self.rewards[done] = 0
        if illegal.any():
            i = np.flatnonzero(illegal)
            self.step_count[i] += 1
            self.terminated[i] = True
            self.rewards[i] = 1.0
            self.rewards[i, self.current_player[i]] = -1.0
            self.legal_action_mask[i] = True
        g = np.flatnonzero(~done & legal)
        if g.size == 0:
            return
        a, p = action[g], self.current_player[g]
        r = self.view_centre[g, 0] + a // self.V - self.h
        c = self.view_centre[g, 1] + a % self.V - self.h
        stone = (p + 1).astype(np.int8)
        self.board[g, r, c] = stone
        V = self.V
        block = ((g * P + p) * V + r // self.blk) * V + c // self.blk  # flat, one per game
        self.block_counts.reshape(-1)[block] += 1
        # the four lines through the new stone, W - 1 cells each way (the frame is -1)
        at = (g * self.side + r + self.pad) * self.side + c + self.pad  # flat framed index
        cells = np.take(self.framed.reshape(-1), at[:, None] + self.arm_offsets)
        same = (cells == stone[:, None]).reshape(g.size, 4, 2, W - 1)
        run = same[..., 0].copy()  # the leading run of the mover's stones along each arm
        arm = run.astype(np.int32)
        for k in range(1, W - 1):
            run &= same[..., k]
            arm += run
        fwd, back = arm[..., 0], arm[..., 1]  # [n, 4] stones ahead / behind
        won = 1 + (fwd + back).max(axis=1) >= W
        # chain counts: + the joined run, - the runs it joined (lengths > 0), one bincount each
        base = np.arange(g.size)[:, None] * (W + 1)
        made = np.bincount((base + np.minimum(fwd + back + 1, W)).ravel(),
                           minlength=g.size * (W + 1))
        gone = np.bincount((base + np.concatenate([fwd, back], axis=1)).ravel(),
                           minlength=g.size * (W + 1))
        delta = (made - gone).reshape(g.size, W + 1)
        delta[:, 0] = 0  # a run of length 0 (no stone on that side) is no chain
        self.chain_counts[g, p] += delta.astype(np.int32)
        stones = self.step_count[g] + 1
        self.step_count[g] = stones
        term = won | (stones >= S * S)
        trunc = ~term & (stones >= self.cap) if self.cap is not None else np.zeros_like(term)
        over = term | trunc
        self.terminated[g] = term
        self.truncated[g] = trunc
        self.winner[g] = np.where(won, p, -1)
        self.step_reward[g] = won
        self.rewards[g] = 0
        if over.any():
            o = g[over]
            self.places[o] = self.places_of(self.chain_counts[o], self.winner[o])
            self.rewards[o] = self.rewards_by_place[self.places[o]]
        self.current_player[g] = (p + 1) % P
        self.last_move[g, 0], self.last_move[g, 1] = r, c
        self.row_empties[g, r] -= 1
        # the view centre: the new stone, or an empty cell near it when its window is full
        last = self.last_move[g]
        win = self.window(g, last)
        full = ~(win == 0).any(axis=(1, 2))
        centre = last
        if full.any():
            f = np.flatnonzero(full)
            gf, idx = g[f], np.arange(S)
            row = np.argmin(np.where(self.row_empties[gf] > 0,
                                     np.abs(idx - last[f, 0, None]), 2 * S), axis=1)
            line = self.board[gf, row]
            col = np.argmin(np.where(line == 0, np.abs(idx - last[f, 1, None]), 2 * S), axis=1)
            centre = last.copy()
            centre[f, 0], centre[f, 1] = row, col
            win[f] = self.window(gf, centre[f])
        self.view_centre[g] = centre
        mask = (win == 0).reshape(g.size, -1)
        mask[over] = True
        self.legal_action_mask[g] = mask

    def observe(self) -> np.ndarray:
        """float32[B, V, V, 2 P + 4]: every game's observation from the seat to move (the env's
        layout), written into one buffer that the next call overwrites (as the JAX side's scan
        reuses its carry; fresh 4.5 MB arrays per call cost page faults: ~7 ms per call
        at batch 256 against ~3 ms)."""
        B, P, V, S, blk = self.B, self.P, self.V, self.S, self.blk
        win = self.window(self.games, self.view_centre)  # [B, V, V]
        seats = (self.current_player[:, None] + np.arange(P)) % P  # [B, P] me, next, previous
        planes = self._planes  # channels first (contiguous writes), then transposed
        planes[:, :P] = win[:, None] == (seats + 1).astype(np.int8)[:, :, None, None]
        planes[:, P] = win == 0
        planes[:, P + 1] = win == -1
        np.multiply(self.block_counts[self.games[:, None], seats], self.inv_area,
                    out=planes[:, P + 2:2 * P + 2])  # int16 * float32: float32
        planes[:, 2 * P + 2] = self.on_share

        def covered(lo, hi):  # [B, V] cells of each block within [lo, hi]
            lo, hi = np.maximum(lo, 0)[:, None], np.minimum(hi, S - 1)[:, None]
            return np.clip(np.minimum(self.first + blk - 1, hi) - np.maximum(self.first, lo) + 1,
                           0, None)

        r0, c0 = self.view_centre[:, 0] - self.h, self.view_centre[:, 1] - self.h
        rows = covered(r0, r0 + V - 1).astype(np.float32)
        cols = covered(c0, c0 + V - 1).astype(np.float32)
        in_view = planes[:, 2 * P + 3]
        np.multiply(rows[:, :, None], cols[:, None, :], out=in_view)  # exact: small integers
        in_view *= self.inv_area
        np.copyto(self._observation, planes.transpose(0, 2, 3, 1))
        return self._observation


def np_uniform_legal_action(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """int[B]: a uniformly random legal action per game (the first index whose running count
    of legal actions exceeds a uniform draw in [0, count))."""
    dtype = np.int16 if mask.shape[1] < 2 ** 15 else np.int32  # a quarter of int64's traffic
    total = mask.sum(axis=1, dtype=dtype)
    r = np.minimum((rng.random(mask.shape[0]) * total).astype(dtype), np.maximum(total - 1, 0))
    return np.argmax(np.cumsum(mask, axis=1, dtype=dtype) > r[:, None], axis=1)


def check_numpy_matches(env, batch: int, steps: int, seed: int = 0) -> None:
    """SystemExit unless NumpyGomoku and `env` agree bit for bit (every state field and the
    observation) over `steps` rounds of the same actions, about 1% of them illegal."""
    ref = NumpyGomoku(env.size, env.win_length, env.num_players, env.view, batch,
                      env.max_episode_steps, env.rewards_by_place)
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(seed), batch))
    step = jax.jit(jax.vmap(env.step))
    rng = np.random.default_rng(seed)
    for t in range(steps):
        action = np_uniform_legal_action(rng, ref.legal_action_mask)
        bad = rng.random(batch) < 0.01
        action = np.where(bad, rng.integers(-2, env.num_actions + 2, batch), action)
        ref.step(action)
        states = step(states, jnp.asarray(action, jnp.int32))
        differ = ref.differences(states)
        if differ:
            raise SystemExit(f"{env}: numpy and the env differ in {differ} after {t + 1} steps")
        if not np.array_equal(ref.observe(), np.asarray(states.observation)):
            raise SystemExit(f"{env}: numpy and the env differ in the observation after "
                             f"{t + 1} steps")


def load_reference(rev: str):
    """The `Gomoku` class of envs/gomoku/ at git revision `rev`, with the rest of that
    package as of `rev`, loaded as a separate package (it shares the current `envs.core`)."""
    return game_at_revision(rev, "gomoku").Gomoku


def record(env, batch: int, warm: int, steps: int, seed: int = 0) -> np.ndarray:
    """int32[warm + steps, batch]: random legal moves from fresh games (drawn while the numpy
    implementation plays them; games that end absorb the rest)."""
    games = NumpyGomoku(env.size, env.win_length, env.num_players, env.view, batch,
                        env.max_episode_steps, env.rewards_by_place)
    rng = np.random.default_rng(seed)
    moves = []
    for t in range(warm + steps):
        moves.append(np_uniform_legal_action(rng, games.legal_action_mask).astype(np.int32))
        games.step(moves[-1])
    return np.stack(moves)


def start_states(env, batch: int, moves: np.ndarray):
    """The env's batch of states after `moves` [T, batch] from fresh games."""
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(0), batch))
    if len(moves):
        states = make_jax_replay(env, True)(states, jnp.asarray(moves))
    return states


def make_jax_replay(env, with_observation: bool):
    """jit(replay)(states, actions): every game steps through its row of `actions` in a
    `lax.scan`; the final states (their observation is the last step's)."""
    step = jax.vmap(env.step if with_observation else env.transition)

    def replay(states, actions):
        if not with_observation:
            states = states.replace(observation=None)
        return jax.lax.scan(lambda s, a: (step(s, a), None), states, actions)[0]

    return jax.jit(replay)


def make_numpy_replay(games: NumpyGomoku, start, with_observation: bool):
    """replay(actions): load `start` into `games`, then step through `actions` (and observe
    after every step)."""
    def replay(actions):
        games.load(start)
        for a in actions:
            games.step(a)
            if with_observation:
                games.observe()
        return games

    return replay


def make_jax_player(env, batch: int, steps: int, with_observation: bool):
    """jit(play)(key): `steps` rounds of random play from `batch` fresh games (module doc)."""
    init = jax.vmap(env.init if with_observation else env.init_state)
    step = jax.vmap(env.step if with_observation else env.transition)

    def play(key):
        k0, k1 = jax.random.split(key)
        state = init(jax.random.split(k0, batch))

        def body(state, k):
            ka, kr = jax.random.split(k)
            a = jax.vmap(uniform_legal_action)(jax.random.split(ka, batch),
                                               state.legal_action_mask)
            state = step(state, a)
            done = state.terminated | state.truncated

            def restart(state):
                fresh = init(jax.random.split(kr, batch))
                return jax.tree_util.tree_map(
                    lambda f, s: jnp.where(done.reshape(done.shape + (1,) * (s.ndim - 1)), f, s),
                    fresh, state)

            state = jax.lax.cond(jnp.any(done), restart, lambda s: s, state)
            return state, done.sum()

        state, ends = jax.lax.scan(body, state, jax.random.split(k1, steps))
        # the last observation is returned: each round's is computed and kept in the carry
        seen = state.observation if with_observation else jnp.zeros(())
        return state.step_count.sum(), ends.sum(), seen

    return jax.jit(play)


def make_numpy_player(size, win_length, players, view, batch: int, steps: int,
                      with_observation: bool):
    def play(seed):
        rng = np.random.default_rng(seed + 100)  # warm-up calls get negative seeds
        games = NumpyGomoku(size, win_length, players, view, batch)
        ends, seen = 0, None
        for _ in range(steps):
            games.step(np_uniform_legal_action(rng, games.legal_action_mask))
            done = games.terminated | games.truncated
            ends += int(done.sum())
            games.reset(done)
            if with_observation:
                seen = games.observe()
        return games.step_count.sum(), ends, seen

    return play


def state_bytes(env) -> tuple[int, int]:
    """(bytes of one state without its observation, bytes of its observation)."""
    bare = jax.eval_shape(env.init_state, jax.random.PRNGKey(0))
    obs = jax.eval_shape(env.init, jax.random.PRNGKey(0)).observation
    leaves = jax.tree_util.tree_leaves(bare)
    return (sum(int(np.prod(x.shape)) * x.dtype.itemsize for x in leaves),
            int(np.prod(obs.shape)) * obs.dtype.itemsize)


def report(title: str, timed: dict, impls: dict, steps_per_call: int) -> None:
    print(f"\n{title}; ms per call min / median, game steps per second (median):")
    for name, t in timed.items():
        print(f"  {name:>18}: {1e3 * t.min:9.2f} / {1e3 * t.median:9.2f}   "
              f"{steps_per_call / t.median:12,.0f}")
    for name in impls:
        a, b = timed[name], timed["numpy"]
        print(f"  {name} vs numpy: {b.min / a.min:5.2f}x (min), "
              f"{b.median / a.median:5.2f}x (median)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--win-length", type=int, default=8)
    ap.add_argument("--players", type=int, default=3)
    ap.add_argument("--view", type=int, default=21)
    ap.add_argument("--batches", type=int, nargs="+", default=[256])
    ap.add_argument("--warm", type=int, default=40, help="replay: random moves before timing")
    ap.add_argument("--steps", type=int, default=32, help="moves per game per timed call")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-play", action="store_true", help="time the replay only")
    ap.add_argument("--ref", default="none",
                    help=f"git revision of the env to time beside the current one (e.g. {BEFORE}, "
                         "the env before issue 34 item 9); 'none' (default): not timed")
    args = ap.parse_args()
    config = dict(size=args.size, win_length=args.win_length, num_players=args.players,
                  view=args.view)
    env = envs.make("gomoku", **config)
    impls = {"jax": env}
    if args.ref.lower() != "none":
        impls[f"jax@{args.ref}"] = load_reference(args.ref)(**config)
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, numpy {np.__version__}; {env}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for e in impls.values():  # same rules, bit for bit, before anything is timed
        check_numpy_matches(e, 16, 40)
        small = type(e)(size=9, win_length=4, num_players=args.players, view=5,
                        max_episode_steps=30)
        check_numpy_matches(small, 32, 40)
    print("numpy implementation checked: identical states and observations")
    bare, obs = state_bytes(env)
    print(f"bytes per state: {bare} without observation, observation {obs}")
    for batch in args.batches:
        moves = record(env, batch, args.warm, args.steps)
        starts = {name: start_states(e, batch, moves[:args.warm]) for name, e in impls.items()}
        actions = moves[args.warm:]
        games = NumpyGomoku(args.size, args.win_length, args.players, args.view, batch)
        for with_obs in (False, True):
            fns = {name: (lambda f, start: lambda a: f(start, a))(
                       make_jax_replay(e, with_obs), starts[name])
                   for name, e in impls.items()}
            fns["numpy"] = make_numpy_replay(games, starts["jax"], with_obs)
            timed = time_compiled(fns, args=(actions,), repeats=args.repeats)
            finals = {name: fns[name](actions) for name in impls}
            fns["numpy"](actions)
            for name, final in finals.items():  # the timed work is the same on every side
                if games.differences(final) or (with_obs and not np.array_equal(
                        games.observe(), np.asarray(final.observation))):
                    raise SystemExit(f"replay: {name} and numpy differ after the replay")
            what = "step + observation" if with_obs else "step (no observation)"
            report(f"batch {batch}, replay, {what}: {args.steps} recorded moves per game from "
                   f"{args.warm} moves in, identical final states", timed, impls,
                   batch * args.steps)
        if args.no_play:
            continue
        for with_obs in (False, True):
            fns = {name: (lambda run, keys: lambda r: run(keys[r]))(
                       make_jax_player(e, batch, args.steps, with_obs),
                       [jax.random.PRNGKey(r) for r in range(-1, args.repeats)])
                   for name, e in impls.items()}
            fns["numpy"] = make_numpy_player(args.size, args.win_length, args.players,
                                             args.view, batch, args.steps, with_obs)
            timed = time_compiled(fns, args=lambda r: (r,), repeats=args.repeats)
            what = "step + observation" if with_obs else "step (no observation)"
            report(f"batch {batch}, random play (sampling included), {what}: {args.steps} "
                   f"moves per game from fresh games", timed, impls, batch * args.steps)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
