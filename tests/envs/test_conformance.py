"""The environment protocol, checked the same way on every registered env and a pgx game:
random legal playouts under jit and vmap, then the rules every game must keep (docs/envs.md).
The checks are `envs.testing`'s (what `api_test` runs on a game written outside the library);
this file adds what only the library's games have (their configurations, old argument names,
chess's known maximum, the graph-search protocol).

One jitted playout (vmap over games of a lax.scan over steps) and one jitted unbatched step per
env, module-scoped, so the default suite pays each compile once; `-m slow` runs longer ones.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

import envs
from envs.core import GraphSearchEnv, require_protocol
from envs.testing import EnvChecker

# envs whose default configuration is too long for a short playout, with one that reaches its
# step cap; every registered env is checked (`NAMES`), with its defaults where it has no entry
# here, so a new game needs no line in this file (issue 44, item 6)
CONFIGS = {
    "backgammon": {},
    "chess": {"max_episode_steps": 24},
    "pacosako": {"max_episode_steps": 24},
    "pyrat": {"width": 5, "height": 5, "cheese_count": 5, "max_episode_steps": 12},
    "gomoku": {"size": 9, "win_length": 4, "view": 5, "max_episode_steps": 24},
    "pgx/tic_tac_toe": {},
}
BATCH, STEPS = 4, 32
SLOW_BATCH, SLOW_STEPS = 16, 300


NAMES = sorted(set(envs.available_envs()) | {"pgx/tic_tac_toe"})


class Case(EnvChecker):
    """One env's checker (envs.testing, the checks of `api_test`): its compiled playout,
    step and observe are made once, and each test below runs one group of checks on a playout
    of its own key."""

    def __init__(self, name, steps, batch):
        # pgx games keep their own step caps (the adapter's max_episode_steps is None)
        super().__init__(envs.make(name, **CONFIGS.get(name, {})), batch, steps, name=name,
                         uncapped_truncation=name.startswith("pgx/"))


@functools.lru_cache(maxsize=None)  # one Case (its compiled functions) per env and length
def get_case(name, steps=STEPS, batch=BATCH):
    return Case(name, steps, batch)


@pytest.fixture(scope="module", params=NAMES)
def case(request):
    return get_case(request.param)


# --------------------------------------------------------------------------- the rules
def test_random_playouts_keep_the_rules(case):
    """Field shapes and dtypes, finished states (all-True masks, absorbing), legal counts,
    step counts, truncation only at the cap; capped games are over within STEPS; and (traced
    only) init and step give one state structure."""
    case.check_shapes()
    case.check_playout(case.playout(jax.random.PRNGKey(0)))


def test_determinism_and_vmap_equals_one_game(case):
    """The same key gives the same games; a vmapped step is the unbatched jitted step."""
    case.check_determinism(jax.random.PRNGKey(1), jax.random.PRNGKey(2),
                           times=(0, 5, STEPS - 1))


def test_illegal_action_ends_the_game_where_it_stood(case):
    """Penalty, unchanged position, check_action's refusals, absorbing afterwards."""
    case.check_illegal_action(case.playout(jax.random.PRNGKey(3)), t=3)


def test_observe_honours_the_player(case):
    case.check_observe(case.playout(jax.random.PRNGKey(4)), times=range(0, STEPS, 4))


def test_api_shape_round_trips(case):
    """action_to_string / string_to_action round-trip on every legal action, bad text is a
    ValueError, and the pictures exist (text, SVG, Jupyter's _repr_html_)."""
    case.check_text_and_pictures(case.playout(jax.random.PRNGKey(5)), times=(0, 1, 7))


def test_max_episode_steps_and_old_names():
    """The step cap is `max_episode_steps` everywhere; chess keeps its word (plies) beside it.
    PyRat's `max_turns` and Paco Sako's `max_steps` are gone from Python (a stored run's
    env_config with them reads through training/migration.py)."""
    assert envs.make("chess", max_plies=30).max_episode_steps == 30
    assert envs.make("chess", max_episode_steps=30).max_plies == 30
    assert envs.make("pyrat", max_episode_steps=30).max_episode_steps == 30
    assert envs.make("pacosako", max_episode_steps=30).max_episode_steps == 30
    assert envs.make("pacosako").max_episode_steps is None
    assert envs.make("backgammon").max_episode_steps is None
    for name, bad in (("pyrat", {"max_episode_steps": 0}), ("chess", {"max_episode_steps": 0}),
                      ("pacosako", {"max_episode_steps": -3})):
        with pytest.raises(ValueError, match="max_episode_steps"):
            envs.make(name, **bad)
    for name, old in (("pyrat", "max_turns"), ("pacosako", "max_steps")):
        with pytest.raises(TypeError, match=old):
            envs.make(name, **{old: 30})


def test_chess_max_legal_actions_is_the_known_maximum():
    """218 legal moves: Petrovic's 1964 position, counted by python-chess and by our mask."""
    chess = pytest.importorskip("chess")
    fen = "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1"
    assert chess.Board(fen).legal_moves.count() == 218
    env = envs.make("chess")
    assert int(np.asarray(env.from_fen(fen).legal_action_mask).sum()) == env.max_legal_actions


def test_graph_search_protocol():
    require_protocol(envs.make("pyrat"), GraphSearchEnv, "MCGS")
    assert isinstance(envs.make("pyrat"), GraphSearchEnv)
    with pytest.raises(ValueError, match="MCGS needs effective_outcomes, state_key"):
        require_protocol(envs.make("pgx/tic_tac_toe"), GraphSearchEnv, "MCGS")


# --------------------------------------------------------------------------- chance API
def test_chance_api(case):
    """Backgammon: step_deterministic keeps the protocol's rules (written once in envs.core):
    an illegal action ends the game where it stood, a finished state absorbs; the chance steps
    are no-ops on decision and finished states; step = step_deterministic + one of the chance
    outcomes. The games without chance refuse the chance methods."""
    if case.env.is_stochastic:
        assert case.env.num_chance_outcomes == 21  # backgammon's distinct rolls
    case.check_chance(case.playout(jax.random.PRNGKey(6)), t=2)


def test_deterministic_games_have_no_chance_api():
    env = envs.make("pgx/tic_tac_toe")
    s = env.init(jax.random.PRNGKey(0))
    for call in (lambda: env.step_deterministic(s, 0), lambda: env.step_chance(s, 0),
                 lambda: env.chance_outcome_probs(s)):
        with pytest.raises(ValueError, match="no chance events"):
            call()


# --------------------------------------------------------------------------- longer runs
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_long_random_playouts_keep_the_rules(name):
    case = get_case(name, SLOW_STEPS, SLOW_BATCH)
    for seed in range(2):
        case.check_playout(case.playout(jax.random.PRNGKey(100 + seed)))
