"""The algorithm interface: the search config picks the algorithm, the algorithm checks the env,
evaluation searches are derived, and the loop names no game."""

import inspect

import pytest

import envs
from turbozero.games import GAMES
from turbozero.networks import SeatValues, WDLValue
from turbozero.presets import get_preset
from turbozero.search import TreeSearchConfig
from turbozero.search.kernel import PUCTRoot
from turbozero.search.mcgs import MCGSConfig
from turbozero.search.mctx_policies import SearchConfig
from turbozero.training import loop
from turbozero.training.algorithms import (
    AlphaZero,
    GraphSearch,
    algorithm_class,
    build_algorithm,
    evaluation_search,
)


def _apply(variables, obs, train=False):
    raise AssertionError("not called")


def test_the_search_config_type_picks_the_algorithm():
    assert algorithm_class(SearchConfig()) is AlphaZero
    assert algorithm_class(TreeSearchConfig()) is AlphaZero
    assert algorithm_class(MCGSConfig()) is GraphSearch
    with pytest.raises(ValueError, match="no algorithm trains with a dict search"):
        algorithm_class({"num_simulations": 8})


def test_an_algorithm_refuses_an_env_it_cannot_search():
    pyrat = envs.make("pyrat", width=5, height=5, cheese_count=3)
    ttt = envs.make("pgx/tic_tac_toe")
    with pytest.raises(ValueError, match="simultaneous-move game"):
        build_algorithm(pyrat, _apply, SeatValues(2), SearchConfig())
    with pytest.raises(ValueError, match="turn-based game"):
        build_algorithm(ttt, _apply, WDLValue(), MCGSConfig())
    with pytest.raises(ValueError, match="use one kind"):
        build_algorithm(ttt, _apply, WDLValue(), SearchConfig(), MCGSConfig())


def test_evaluation_search_turns_off_noise_and_temperature_also_when_nested():
    cfg = TreeSearchConfig(num_simulations=7, root=PUCTRoot(dirichlet_fraction=0.25),
                           temperature=1.0, temperature_moves=30)
    ev = evaluation_search(cfg)
    assert ev.root.dirichlet_fraction == 0.0 and ev.temperature == 0.0
    assert ev.temperature_moves is None and ev.num_simulations == 7
    assert evaluation_search(SearchConfig(num_simulations=5)) == SearchConfig(
        num_simulations=5, dirichlet_fraction=0.0, temperature=0.0)


def test_unknown_evaluation_opponents_are_named_with_the_choices():
    with pytest.raises(ValueError, match="unknown evaluation opponent 'gnubg' for chess"):
        get_preset("chess", "tiny", eval_opponents=("gnubg",))
    # a game's own opponent is accepted for that game only
    get_preset("backgammon", "tiny", eval_opponents=("gnubg",))


def test_the_loop_names_no_game_and_asks_no_game_property():
    source = inspect.getsource(loop)
    for word in ("simultaneous", "stochastic", "gnubg", *GAMES):
        assert word not in source, word
