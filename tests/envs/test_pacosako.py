"""Paco Ŝako: the public engine's rule tests, recorded games and opening book, replayed here.

Data: tests/data/pacosako/ (sources in its README.md and docs/pacosako.md).
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs import pacosako as P
from envs.pacosako import notation as N
from envs.pacosako import rules as R

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "pacosako")


def _load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def env_norep():
    return P.PacoSako(draw_after_repetitions=0)


@pytest.fixture(scope="module")
def steppers(pacosako_env, env_norep):
    return {3: jax.jit(pacosako_env.step), 0: jax.jit(env_norep.step)}


CONTENT = {"": (0, 0)}


def _content(s: str) -> tuple:
    """'' empty, 'P' White pawn, 'p' Black pawn, 'Rn' union (White first)."""
    w = b = 0
    for ch in s:
        code = N.LETTERS.index(ch.lower()) + 1
        if ch.isupper():
            w = code
        else:
            b = code
    return w, b


def setup_notation(setup) -> str:
    if setup == "start":
        return P.START
    board = np.zeros((2, 64), np.int8)
    for sq, s in setup["squares"].items():
        board[:, N.parse_square(sq)] = _content(s)
    castling = setup.get("castling", "-")
    flags = np.array([ch in castling for ch in "AHah"])
    return N.write(board, 0 if setup["to_move"] == "w" else 1, R.LIFT, 0, 0, -1, -1, -1, flags, 0)


def _result(state) -> str:
    t = int(state.termination)
    if t == R.PACO:
        return "paco " + ("white" if int(state.winner) == 0 else "black")
    return R.REASONS[t]


def _check(state, expect, where):
    legal = set(P.legal_actions(state))
    for key, want in expect.items():
        if key == "ep":
            got = None if int(state.ep) < 0 else N.square_name(int(state.ep))
            assert got == want, f"{where}: en passant {got} != {want}"
        elif key == "legal_contains":
            assert set(want) <= legal, f"{where}: missing {set(want) - legal}"
        elif key == "legal_excludes":
            assert not set(want) & legal, f"{where}: unexpected {set(want) & legal}"
        elif key == "legal_exact":
            assert legal == set(want), f"{where}: {sorted(legal)} != {sorted(want)}"
        elif key == "legal_nonempty":
            assert legal, f"{where}: no legal action"
        elif key == "result":
            assert _result(state) == want, f"{where}: {_result(state)} != {want}"
        elif key == "no_progress":
            assert int(state.no_progress) == want, f"{where}: counter {int(state.no_progress)} != {want}"
        elif key == "to_act":
            assert "wb"[int(state.color)] == want, f"{where}: {int(state.color)} to act"
        elif key == "required":
            kind = P._KIND[int(state.required)]
            assert kind == want, f"{where}: required {kind} != {want}"
        elif key == "squares":
            board = np.asarray(state.board)
            for sq, s in want.items():
                i = N.parse_square(sq)
                assert tuple(board[:, i]) == _content(s), f"{where}: {sq} holds {board[:, i]}"
        else:
            raise AssertionError(f"unknown expectation {key}")


RULES = _load("engine_rule_tests.json")


@pytest.mark.parametrize("case", RULES["cases"], ids=[c["name"] for c in RULES["cases"]])
def test_engine_rule_case(case, pacosako_env, env_norep, steppers):
    reps = case.get("draw_after_repetitions", 3)
    e = pacosako_env if reps == 3 else env_norep
    step = steppers[reps]
    state = e.from_notation(setup_notation(case["setup"]))
    for i, s in enumerate(case["steps"]):
        where = f"{case['name']} step {i} ({s['do']})"
        a = P.action_from_string(state, s["do"])
        e.check_action(state, a)  # raises ValueError if our rules call it illegal
        state = step(state, a)
        _check(state, s.get("expect", {}), where)


@pytest.fixture(scope="module")
def threats_fn():
    return jax.jit(R.threats)


@pytest.mark.parametrize("case", RULES["threats"], ids=[c["name"] for c in RULES["threats"]])
def test_engine_threats(case, threats_fn):
    board = np.zeros((2, 64), np.int8)
    for sq, s in case["squares"].items():
        board[:, N.parse_square(sq)] = _content(s)
    ep = N.parse_square(case["ep"]) if "ep" in case else -1
    got = np.asarray(threats_fn(jnp.asarray(board), 0 if case["player"] == "w" else 1, ep))
    want = np.zeros(64, bool)
    want[[N.parse_square(s) for s in case["expected"]]] = True
    diff = [N.square_name(i) for i in np.flatnonzero(got != want)]
    assert not diff, f"threat sets differ on {diff}"


# a crowded random-game board whose chains reach 2,619 distinct states (engine data, oracle)
CROWDED = "4lk2/1aa1Raw1/3P1C2/R1p2t1s/2P5/2e2Tp1/1pK5/6Sn b 13 - - -"


def test_threat_search_capacity_overflow(threats_fn):
    """A search that needs more states than its capacity reports overflow; castle_threats then
    searches again at the second capacity, and only if that overflows too does it report every
    square threatened (castling forbidden), never a silently partial set."""
    st = P.from_notation(CROWDED)
    args = (st.board, 1 - st.color, st.ep)
    search = jax.jit(R.threat_search, static_argnums=3)
    _, n_states, overflow = search(*args, 64)
    assert bool(overflow) and int(n_states) == 64
    _, n_states, overflow = search(*args, R.THREAT_CAPACITY)
    assert bool(overflow) and int(n_states) == R.THREAT_CAPACITY
    exact, n_states, overflow = search(*args, 4096)
    assert not bool(overflow) and int(n_states) == 2619
    assert not np.all(np.asarray(exact))
    # the default pair of capacities: exact through the second search
    assert np.array_equal(np.asarray(threats_fn(*args)), np.asarray(exact))
    # small pairs reach both paths, one game (lax.cond) and batched (the custom_vmap rule)
    start = P.from_notation(P.START)
    boards = jnp.stack([st.board, start.board, st.board])
    colors, eps = jnp.array([1 - int(st.color), 1, 1 - int(st.color)]), jnp.full(3, -1)
    need = jnp.array([True, True, False])
    start_thr = np.asarray(threats_fn(start.board, 1, start.ep))
    for capacities, want_crowded in (((64, 4096), np.asarray(exact)),
                                     ((64, 256), np.ones(64, bool))):
        ct = R.make_castle_threats(capacities)
        got = np.asarray(jax.jit(ct)(jnp.bool_(True), *args))
        assert np.array_equal(got, want_crowded), capacities
        got = np.asarray(jax.jit(jax.vmap(ct))(need, boards, colors, eps))
        assert np.array_equal(got[0], want_crowded), capacities
        assert np.array_equal(got[1], start_thr) and not got[2].any(), capacities
    with pytest.raises(ValueError, match="capacities"):
        R.make_castle_threats((256, 64))


def test_engine_replays(pacosako_env, steppers, pacosako_start):
    """The engine's recorded games: every action legal here, the same outcome at the end."""
    step = steppers[3]
    results = {}
    for game in _load("replays.json")["games"]:
        state = pacosako_start
        for i, (kind, value) in enumerate(game["actions"]):
            assert not bool(state.terminated), f"game {game['id']} ended early at {i}"
            a = P.engine_action_to_index(kind, value, int(state.color))
            assert bool(state.legal_action_mask[a]), (
                f"game {game['id']} action {i} {kind} {value} illegal here; legal: "
                f"{P.legal_actions(state)}")
            state = step(state, a)
        results[game["id"]] = _result(state)
    # 16069 ends with Black uniting with White's king; 13103 stops after White's 110th action
    # without a ŝako (the game was given up), so the engine too would still say Running
    assert results == {13103: "running", 16069: "paco black"}, results


def test_opening_book_moves(pacosako_env, steppers):
    """Every move the engine's opening book suggests is a legal, complete move here."""
    step = steppers[3]
    book = _load("opening_book_sample.json")
    n = over = 0
    for entry in book["entries"]:
        for move in entry["moves"]:
            state = pacosako_env.from_notation(entry["fen"])
            if bool(state.terminated):  # a king already in a union: the game is over here
                assert int(state.termination) == R.PACO
                over += 1
                continue
            mover = int(state.color)
            for k, raw in enumerate(move):
                assert int(state.color) == mover and not bool(state.terminated)
                a = raw - 1
                assert bool(state.legal_action_mask[a]), (
                    f"{entry['fen']}: action {raw} of {move} illegal; legal {P.legal_actions(state)}")
                state = step(state, a)
            # the move is complete: the turn passed, or it ended the game
            assert int(state.color) != mover or bool(state.terminated), (entry["fen"], move)
            n += 1
    assert n >= 100 and over <= 5, (n, over)


def test_initial_state(pacosako_env, pacosako_start):
    s = pacosako_start
    assert P.to_notation(s) == P.START
    assert sorted(P.legal_actions(s)) == sorted(
        [f"lift {f}2" for f in "abcdefgh"] + ["lift b1", "lift g1"])
    assert s.observation.shape == (8, 8, 32) and s.observation.dtype == jnp.float32
    assert s.rewards.dtype == jnp.float32 and s.rewards.shape == (2,)
    assert pacosako_env.num_actions == 132 and pacosako_env.id == "pacosako"


def test_chain_keeps_player_and_black_frame(pacosako_env, steppers, pacosako_start):
    step = steppers[3]
    s = pacosako_start
    for a in ["lift e2", "place e4", "lift d7"]:
        s = step(s, P.action_from_string(s, a))
    # Black acts in a mirrored frame: d7 is the mover's d2, index 64 + 11 + 8 ... place d5 = d4
    assert P.action_from_string(s, "place d5") == 64 + (8 * 3 + 3)
    assert int(s.current_player) == 1
    s = step(s, P.action_from_string(s, "place d5"))
    s = step(s, P.action_from_string(s, "lift e4"))
    assert int(s.current_player) == 0 and P.legal_actions(s) == ["place d5", "place e5"]


def test_notation_roundtrip(pacosako_env):
    for fen in ["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w 0 AHah - -",
                "1lb1k3/8/1tapS3/2p2p2/1a2P1a1/1p1Ps1P1/2C1T2p/R1B1K2R w 0 AHah - -",
                "rnbqkbnr/ppp1pppp/8/3p4/8/8/PPPP1PPP/RNBQKBNR^e4P w 3 AHah d6 -",
                "4k3/8/8/8/8/8/8/1p2K3 b 4 - - - promote:b1:lift",
                "4k3/2P5/8/8/8/8/8/4K3 w 4 - - -"]:
        assert P.to_notation(pacosako_env.from_notation(fen)) == fen
    # the engine's test writes the pawn-pawn union as 'A'; it is the same square as 'a'
    engine = "1lb1k3/8/1tApS3/2p2p2/1A2P1A1/1p1Ps1P1/2C1T2p/R1B1K2R w 0 AHah - -"
    assert P.to_notation(pacosako_env.from_notation(engine)) == engine.replace("A", "a").replace("aHah", "AHah")


@pytest.mark.parametrize("bad", [
    "", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR", "rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w 0 AHah - -",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x 0 AHah - -",
    "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w 0 AHah - -",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNRR w 0 AHah - -",
    "rnbqkbn1/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w 0 AHah - -",   # no h8 rook is fine, but...
    "8/8/8/8/8/8/8/8 w 0 AH - -",                               # castling without a king
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR^e2p w 0 AHah - -",  # lifted piece of the wrong side
    "kk6/8/8/8/8/8/8/8 w 0 - - -",
    "_7/8/8/8/8/8/8/8 w 0 - - -",  # both kings in one union
])
def test_bad_notation(bad, pacosako_env):
    if bad.startswith("rnbqkbn1/"):
        pacosako_env.from_notation(bad)  # a missing rook with rights is accepted, like the engine
        return
    with pytest.raises(ValueError):
        pacosako_env.from_notation(bad)


def test_illegal_action_boundary_and_jit(pacosako_env, steppers, pacosako_start):
    s = pacosako_start
    with pytest.raises(ValueError):
        pacosako_env.check_action(s, P.action_from_string(s, "lift e1"))
    with pytest.raises(ValueError):
        pacosako_env.check_action(s, 132)
    with pytest.raises(ValueError):
        P.action_from_string(s, "jump e4")
    t = steppers[3](s, P.action_from_string(s, "lift e1"))  # inside jit: pgx-style penalty
    assert bool(t.terminated) and t.rewards.tolist() == [-1.0, 1.0]


def test_render_text(pacosako_env, pacosako_start):
    text = P.render_text(pacosako_start)
    assert "White to act (lift)" in text
    assert text.splitlines()[0].split()[1:] == [".r", ".n", ".b", ".q", ".k", ".b", ".n", ".r"]
