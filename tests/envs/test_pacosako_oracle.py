"""Paco Ŝako against the public engine as an oracle.

Data: tests/data/pacosako/oracle/oracle.jsonl.gz, written by the engine itself
(kreibaum/pacosako lib/ at commit 5ecb8c1) through our driver in that folder (README there):
per game the engine's legal action set before every action, the action taken, the engine's
threat set (settled boards and lifted kings) and the result. Every game is replayed here in one
batch (one jitted, vmapped step) and compared action set by action set.
"""

import gzip
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs import pacosako as P
from envs.pacosako import rules as R

ORACLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "pacosako", "oracle", "oracle.jsonl.gz")
FAST_KINDS = ("replay", "test", "castling")  # default suite; "book" and "random" are slow

RESULTS = {R.RUNNING: "running", R.NO_PROGRESS_DRAW: "draw_no_progress",
           R.REPETITION_DRAW: "draw_repetition", R.NO_LEGAL_ACTION: "stuck"}


def _load():
    with gzip.open(ORACLE, "rt") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def games():
    return _load()


@pytest.fixture(scope="module")
def fns(pacosako_env):
    step = jax.jit(jax.vmap(pacosako_env.step))
    # the threats of the opponent of the player to act, as the castling check asks for them,
    # searched only where the engine recorded a threat set (the batched castling-check path)
    threats = jax.jit(jax.vmap(lambda need, s: R.castle_threats(need, s.board, 1 - s.color, s.ep)))
    return step, threats


def _result(state, i) -> str:
    t = int(state.termination[i])
    if t == R.PACO:
        return "white" if int(state.winner[i]) == 0 else "black"
    return RESULTS[t]


def _replay(games, env, fns):
    """Replays `games` in one batch; returns ({game id: first mask/result difference},
    {game id: first threat-set difference}, number of compared action sets, of threat sets,
    of differing threat sets, of differing sets reported all threatened (an overflow))."""
    step, threats = fns
    state = env.from_notations([P.START if g["start"] == "start" else g["start"] for g in games])
    horizon = max(len(g["steps"]) for g in games)
    bad, bad_threats = {}, {}
    n_masks = n_threats = threat_diffs = overflowed = 0
    for t in range(horizon + 1):
        mask = np.asarray(state.legal_action_mask)
        need = np.array([t < len(g["steps"]) and g["steps"][t][3] is not None for g in games])
        thr = np.asarray(threats(jnp.asarray(need), state))
        actions = np.zeros(len(games), np.int32)
        for i, g in enumerate(games):
            gid = g["id"]
            n = len(g["steps"])
            if gid in bad or t > n:
                continue
            if t < n:
                fen, legal, action, want_threats = g["steps"][t]
                actions[i] = action
            else:
                (fen, legal), want_threats = g["final"], None
                got = _result(state, i)
                if got != g["result"]:
                    bad[gid] = f"end: result {got}, engine {g['result']} at {fen}"
                    continue
                if g["result"] != "running":  # over: the engine lists nothing, core masks all
                    continue
            want = np.zeros(R.NUM_ACTIONS, bool)
            want[legal] = True
            n_masks += 1
            if bool(state.terminated[i]) or not np.array_equal(mask[i], want):
                extra = [P.action_to_string(_one(state, i), a)
                         for a in np.flatnonzero(mask[i] & ~want)]
                missing = [P.action_to_string(_one(state, i), a)
                           for a in np.flatnonzero(want & ~mask[i])]
                bad[gid] = (f"step {t} {fen}: terminated={bool(state.terminated[i])} "
                            f"extra {extra[:8]} missing {missing[:8]}")
                continue
            if want_threats is not None:
                n_threats += 1
                want_t = (np.uint64(want_threats) >> np.arange(64, dtype=np.uint64)) & 1 == 1
                if not np.array_equal(thr[i], want_t):
                    threat_diffs += 1
                    overflowed += bool(np.all(thr[i]))
                if not np.array_equal(thr[i], want_t) and gid not in bad_threats:
                    names = "abcdefgh"
                    sq = lambda k: names[k % 8] + str(k // 8 + 1)  # noqa: E731
                    bad_threats[gid] = (f"step {t} {fen}: extra "
                                        f"{[sq(k) for k in np.flatnonzero(thr[i] & ~want_t)]} "
                                        f"missing {[sq(k) for k in np.flatnonzero(want_t & ~thr[i])]}")
        if t < horizon:
            state = step(state, jnp.asarray(actions))
    return bad, bad_threats, n_masks, n_threats, threat_diffs, overflowed


def _one(state, i):
    return jax.tree.map(lambda x: x[i], state)


@pytest.fixture(scope="module")
def fast_run(games, pacosako_env, fns):
    return _replay([g for g in games if g["kind"] in FAST_KINDS], pacosako_env, fns)


def test_oracle_data_covers_what_it_claims(games):
    kinds = {}
    for g in games:
        kinds[g["kind"]] = kinds.get(g["kind"], 0) + 1
    assert kinds == {"replay": 2, "test": 52, "book": 79, "random": 300, "castling": 128}, kinds
    # castling really happens: a king placed two files away from e1/e8 (mover's frame: c1/g1)
    castles = sum(1 for g in games for s in g["steps"]
                  if s[2] in (64 + 2, 64 + 6) and "^e1K" in s[0].replace("^e8k", "^e1K"))
    assert castles >= 20, castles
    results = {g["result"] for g in games}
    assert {"white", "black", "stuck", "running", "draw_repetition"} <= results, results


def test_engine_legal_action_sets_fast(fast_run):
    """Replays, engine test positions and castling positions: identical legal action sets at
    every step and identical results."""
    bad, _, n_masks, _, _, _ = fast_run
    assert n_masks > 20_000
    assert not bad, f"{len(bad)} games differ, e.g. {sorted(bad.items())[:5]}"


def _assert_threats_exact(run):
    """Threat sets equal the engine's on every set. The crowded ones (43 of 44,730 sets need
    more than THREAT_CAPACITY chain states, at most 48,156) are searched again at
    THREAT_CAPACITY_LARGE, so none may come back overflowed (every square threatened)."""
    _, bad_threats, _, n_threats, diffs, overflowed = run
    assert overflowed == 0, f"{overflowed} threat sets overflowed the second search"
    assert diffs == 0, f"{diffs} threat sets differ, e.g. {bad_threats}"
    return n_threats


def test_engine_threat_sets_exact(fast_run):
    """The castling threat search equals the engine's on every settled board / lifted king."""
    assert _assert_threats_exact(fast_run) > 5_000


@pytest.mark.slow
def test_engine_legal_action_sets_all(games, pacosako_env, fns):
    """Book positions and 300 random games from the start position: identical legal action
    sets, results and threat sets."""
    run = _replay([g for g in games if g["kind"] not in FAST_KINDS], pacosako_env, fns)
    bad, n_masks = run[0], run[2]
    assert n_masks > 40_000
    assert not bad, f"{len(bad)} games differ, e.g. {sorted(bad.items())[:5]}"
    assert _assert_threats_exact(run) > 20_000
