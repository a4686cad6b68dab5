"""The algorithm interface: the algorithm config builds its runtime, the algorithm checks the
env, evaluation searches are derived, and the loop names no game."""

import inspect

import pytest

import envs
from turbozero.games import GAMES
from turbozero.networks import SeatValues, WDLValue
from turbozero.presets import get_preset
from turbozero.search import TreeSearchConfig
from turbozero.search.kernel import PUCTRoot
from turbozero.search.mcgs import MCGSConfig
from turbozero.search.mctx_policies import MctxConfig
from turbozero.training import loop
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
from turbozero.training.algorithm_configs import AlphaZero, GraphSearch
from turbozero.training.algorithms import (
    AlphaZeroAlgorithm,
    GraphSearchAlgorithm,
    evaluation_search,
)
from turbozero.training.cpu_alphazero import CPUAlphaZero


def _apply(variables, obs, train=False):
    raise AssertionError("not called")


def test_the_algorithm_config_builds_its_own_runtime():
    """No lookup by the search config's type (issue 44, item 1): the config names its runtime."""
    assert AlphaZero(search=MctxConfig()).runtime() is AlphaZeroAlgorithm
    assert AlphaZero(search=TreeSearchConfig()).runtime() is AlphaZeroAlgorithm
    assert AlphaZero(search=CPUSelfPlayConfig()).runtime() is CPUAlphaZero  # the C++ self-play
    assert GraphSearch(search=MCGSConfig()).runtime() is GraphSearchAlgorithm
    with pytest.raises(ValueError, match="no algorithm trains with a dict search"):
        AlphaZero(search={"num_simulations": 8}).check()


def test_an_algorithm_refuses_an_env_it_cannot_search():
    pyrat = envs.make("pyrat", width=5, height=5, cheese_count=3)
    ttt = envs.make("pgx/tic_tac_toe")
    with pytest.raises(ValueError, match="simultaneous-move game"):
        AlphaZero(search=MctxConfig()).build(pyrat, _apply, SeatValues(2))
    with pytest.raises(ValueError, match="turn-based game"):
        GraphSearch(search=MCGSConfig()).build(ttt, _apply, WDLValue())
    with pytest.raises(ValueError, match="use one kind"):
        AlphaZero(search=MctxConfig(), eval_search=MCGSConfig()).check()


def test_evaluation_search_turns_off_noise_also_when_nested():
    cfg = TreeSearchConfig(num_simulations=7, root=PUCTRoot(dirichlet_fraction=0.25))
    ev = evaluation_search(cfg)
    assert ev.root.dirichlet_fraction == 0.0 and ev.num_simulations == 7
    assert evaluation_search(MctxConfig(num_simulations=5)) == MctxConfig(
        num_simulations=5, dirichlet_fraction=0.0)


def test_every_search_config_says_how_it_is_deterministic_for_evaluation():
    """`config.for_evaluation()` (issue 44, item 3), not fields zeroed by name: each config of
    the library has it; a config without it is refused with the reason."""
    import dataclasses

    from turbozero.search.afterstate import AfterstatePlayerConfig
    from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
    from turbozero.search.cpu.tree import CPUSearchConfig
    from turbozero.search.one_ply import OnePlyConfig
    from turbozero.search.roots import GumbelRoot
    from turbozero.training.muzero import MuZeroConfig
    from turbozero.training.td import TDConfig

    gumbel = TreeSearchConfig(root=GumbelRoot(gumbel_scale=1.0))
    assert evaluation_search(gumbel).root.gumbel_scale == 0.0
    assert evaluation_search(MuZeroConfig(search=gumbel)).search == evaluation_search(gumbel)
    assert evaluation_search(MCGSConfig(dirichlet_fraction=0.5)) == MCGSConfig(
        dirichlet_fraction=0.0)
    assert evaluation_search(CPUSearchConfig()) == CPUSearchConfig(dirichlet_fraction=0.0)
    assert evaluation_search(CPUSelfPlayConfig()) == CPUSelfPlayConfig(
        search=CPUSearchConfig(dirichlet_fraction=0.0))
    for deterministic in (OnePlyConfig(), AfterstatePlayerConfig(plies=1), TDConfig()):
        assert evaluation_search(deterministic) == deterministic

    @dataclasses.dataclass(frozen=True)
    class Mine:
        num_simulations: int = 1

    with pytest.raises(ValueError, match="Mine has no for_evaluation"):
        evaluation_search(Mine())


def test_unknown_evaluation_opponents_are_named_with_the_choices():
    with pytest.raises(ValueError, match="unknown evaluation opponent 'gnubg' for chess"):
        get_preset("chess", "tiny", eval_opponents=("gnubg",))
    # a game's own opponent is accepted for that game only
    get_preset("backgammon", "tiny", eval_opponents=("gnubg",))


def test_the_loop_names_no_game_and_asks_no_game_property():
    source = inspect.getsource(loop)
    for word in ("simultaneous", "stochastic", "gnubg", *GAMES):
        assert word not in source, word


# ---------------------------------------------------------------- the search record in replay
def _ttt_wdl_apply(variables, obs, train=False):
    """A fixed stand-in for a WDL network: logits and [win, draw, loss] logits are smooth
    functions of the board, so positions differ."""
    import jax.numpy as jnp

    flat = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
    s = flat @ jnp.sin(jnp.arange(flat.shape[1], dtype=jnp.float32) * 1.3 + 0.2)
    logits = jnp.sin(jnp.arange(9, dtype=jnp.float32)[None] * 0.7 + s[:, None])
    return logits, jnp.stack([s, jnp.cos(s), -s], axis=-1)


@pytest.mark.parametrize("risk_taker", [None, 0.5])
def test_self_play_stores_the_root_wdl_and_soft_value_of_each_search(risk_taker):
    """Kernel searches with a WDL head store, per position, the root WDL average (sums to 1,
    and W - L is the searched root value of a game that pays at the end) and the LogSumExp
    soft value (0 at beta 0, set when the seat's beta is not); a scalar head stores none."""
    import jax
    import numpy as np

    from turbozero.training import collector as collector_lib
    from turbozero.training.risk import RiskSchedule, SelfPlayRisk

    env = envs.make("pgx/tic_tac_toe")
    config = TreeSearchConfig(num_simulations=12, root=PUCTRoot())
    algo = AlphaZeroAlgorithm(env, _ttt_wdl_apply, WDLValue(), config)
    risk = None if risk_taker is None else SelfPlayRisk(RiskSchedule(risk_taker),
                                                        opponent_range=(0.0, 0.0))
    n, steps = 8, 12
    col = collector_lib.init_collector(env, jax.random.PRNGKey(0), n, risk)
    buf = algo.init_replay(n, steps, col.env_state)
    _, buf, _ = collector_lib.collect(env, algo.self_play, None, col, buf,
                                      jax.random.PRNGKey(1), steps, risk=risk, iteration=0)
    b = jax.device_get(buf)
    wdl, soft = b.search_record["root_wdl"], b.search_record["soft_value"]
    assert wdl.shape == (n, steps, 3) and soft.shape == (n, steps)
    np.testing.assert_allclose(wdl.sum(-1), 1.0, atol=1e-5)
    assert wdl.min() >= 0.0
    # W - L is the searched root value of the mover (the replay keeps no root values: they
    # are MuZero's field, so the search is asked again at a batch of states)
    out = algo.self_play(None, col.env_state, jax.random.PRNGKey(2))
    mover_value = np.take_along_axis(np.asarray(out.search_values),
                                     np.asarray(col.env_state.current_player)[:, None], -1)[:, 0]
    rec = jax.device_get(out.search_record)
    np.testing.assert_allclose(rec["root_wdl"][:, 0] - rec["root_wdl"][:, 2], mover_value,
                               atol=1e-5)
    assert b.search_values is None and b.action is None and b.written_at is None
    if risk_taker is None:
        assert np.all(soft == 0.0)
    else:  # the taker's positions have a soft value; the other seat's beta is 0
        assert np.all(np.isfinite(soft)) and np.mean(soft != 0.0) > 0.3
    scalar = AlphaZeroAlgorithm(env, _ttt_wdl_apply, SeatValues(2), config)
    assert scalar.init_replay(n, steps, col.env_state).search_record is None


def test_tree_config_finds_the_simulations_of_every_search_config():
    from turbozero.training.algorithms import tree_config
    from turbozero.training.muzero import MuZeroConfig

    kernel = TreeSearchConfig(num_simulations=12)
    assert tree_config(kernel) is kernel
    assert tree_config(MCGSConfig(num_simulations=7)).num_simulations == 7
    assert tree_config(MctxConfig(num_simulations=5)).num_simulations == 5
    nested = MuZeroConfig(search=TreeSearchConfig(num_simulations=9))
    assert tree_config(nested) is nested.search
    with pytest.raises(ValueError, match="int has no num_simulations"):
        tree_config(3)


def test_the_runtime_interface_is_documented_function_by_function():
    """docs/training.md lists every function and declaration of `Algorithm` with the reason the
    Trainer needs it, and nothing else (issue 44, items 1 and 7: a handful, each documented);
    every runtime of the library implements that interface and no other public function."""
    import pathlib
    import re

    from turbozero.training.algorithms import Algorithm
    from turbozero.training.muzero import MuZeroAlgorithm
    from turbozero.training.td import AfterstateTD

    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text()
    table = text[text.index("The runtime interface"):]
    table = table[:table.index("\n\n", table.index("| --- |"))]
    documented = set(re.findall(r"^\| `(\w+)", table, re.M))
    functions = {n for n, v in vars(Algorithm).items()
                 if callable(getattr(Algorithm, n)) and not n.startswith("_")}
    env = envs.make("pgx/tic_tac_toe")
    built = AlphaZeroAlgorithm(env, _apply, WDLValue(), TreeSearchConfig())
    declared = {n for n in vars(built) if n in documented} | {"collects_in_jit"}
    assert documented == functions | declared, (documented, functions, declared)
    assert len(functions) <= 7
    for runtime in (AlphaZeroAlgorithm, GraphSearchAlgorithm, CPUAlphaZero, MuZeroAlgorithm,
                    AfterstateTD):
        extra = {n for n in dir(runtime) if not n.startswith("_") and callable(
            getattr(runtime, n)) and n not in functions}
        assert extra <= {"self_play_config"}, (runtime.__name__, extra)  # the C++ seeds


def test_the_greedy_opponent_is_the_one_ply_search_through_act():
    """`builtin_opponents()` became the declaration `greedy_player` played through `act`
    (issue 44): AlphaZero's greedy opponent moves as `one_ply.greedy_actions` did."""
    import jax
    import numpy as np

    from turbozero.search.one_ply import OnePlyConfig, greedy_actions
    from turbozero.training import collector as collector_lib

    env = envs.make("pgx/tic_tac_toe")
    algo = AlphaZeroAlgorithm(env, _ttt_wdl_apply, WDLValue(), TreeSearchConfig(num_simulations=4))
    assert algo.greedy_player == OnePlyConfig()
    col = collector_lib.init_collector(env, jax.random.PRNGKey(0), 8)
    states = col.env_state
    for _ in range(3):  # a few plies in, so that the positions differ
        states = jax.vmap(env.step)(states, greedy_actions(env, algo.evaluator, None, states),
                                    jax.random.split(jax.random.PRNGKey(1), 8))
    np.testing.assert_array_equal(
        algo.act(None, states, jax.random.PRNGKey(2), player=algo.greedy_player).action,
        greedy_actions(env, algo.evaluator, None, states))
    # graph search has no greedy player of its own (a simultaneous game registers one)
    pyrat = envs.make("pyrat", width=5, height=5, cheese_count=3)
    assert GraphSearchAlgorithm(pyrat, _apply, SeatValues(2), MCGSConfig()).greedy_player is None
