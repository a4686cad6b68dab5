"""The algorithm is explicit (`TrainConfig.algorithm`, turbozero/training/algorithm_configs.py):
AlphaZero / GraphSearch / MuZero / TD configs, acting defined once, the fields of earlier
layouts (`search`, `eval_search`, `temperature_schedule`) read from stored runs by the one
migration module (turbozero/training/migration.py), `--set` keys old and new, and a run
directory stored before (tests/data/ttt_run) read into the new form."""

import dataclasses
import json
import os

import pytest

from turbozero.presets import available_presets, get_preset
from turbozero.search import MctxConfig, OnePlyConfig, TreeSearchConfig
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
from turbozero.search.mcgs import MCGSConfig
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.algorithm_configs import TD, AlphaZero, GraphSearch, MuZero, algorithm_for_search
from turbozero.training.migration import algorithm_with
from turbozero.training.config import TrainConfig
from turbozero.training.muzero import MuZeroConfig
from turbozero.runs import load_run_config
from turbozero.training.run_config import (config_from_json, config_to_json, parse_overrides,
                                           with_overrides)
from turbozero.training.td import TDConfig

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "ttt_run")
TTT = "pgx/tic_tac_toe"
SLOW = TemperatureSchedule(temperature=0.5, moves=7)


def test_each_search_belongs_to_one_algorithm():
    assert algorithm_for_search(MctxConfig()) is AlphaZero
    assert algorithm_for_search(TreeSearchConfig()) is AlphaZero
    assert algorithm_for_search(CPUSelfPlayConfig()) is AlphaZero  # the C++ self-play
    assert algorithm_for_search(MCGSConfig()) is GraphSearch
    assert algorithm_for_search(MuZeroConfig()) is MuZero
    assert algorithm_for_search(TDConfig()) is TD
    with pytest.raises(ValueError, match="no algorithm trains with a int search"):
        algorithm_for_search(3)


def _stored(**fields):
    return config_from_json({"__dataclass__": "turbozero.training.config:TrainConfig",
                             "game": TTT, **{k: config_to_json(v) for k, v in fields.items()}})


def test_the_old_fields_are_read_into_the_algorithm_and_only_from_stored_runs():
    search = TreeSearchConfig(num_simulations=4)
    old = _stored(search=search, temperature_schedule=SLOW, eval_search=OnePlyConfig())
    new = TrainConfig(TTT, algorithm=AlphaZero(search=search, acting=SLOW,
                                               eval_search=OnePlyConfig()))
    assert old == new
    # the default: the library's kernel, the default acting
    assert TrainConfig(TTT).algorithm == AlphaZero(search=TreeSearchConfig())
    # a config stored before the algorithm, without a search, searched with mctx (the
    # default then): it still does
    assert _stored(temperature_schedule=SLOW).algorithm == AlphaZero(search=MctxConfig(),
                                                                      acting=SLOW)
    assert _stored().algorithm == AlphaZero(search=MctxConfig())
    # TrainConfig itself takes today's fields only (no keyword converted at construction)
    with pytest.raises(TypeError, match="search"):
        TrainConfig(TTT, search=search)
    with pytest.raises(AttributeError):  # no view of the old fields either
        new.search  # noqa: B018


def test_a_search_of_another_algorithm_changes_the_algorithm_keeping_acting():
    base = AlphaZero(search=MctxConfig(), acting=SLOW, eval_search=OnePlyConfig())
    assert algorithm_with(base, search=TreeSearchConfig(num_simulations=2)) == AlphaZero(
        search=TreeSearchConfig(num_simulations=2), acting=SLOW, eval_search=OnePlyConfig())
    # a search of another algorithm: that algorithm, acting carried, the evaluation player not
    graph = algorithm_with(base, search=MCGSConfig(num_simulations=3))
    assert graph == GraphSearch(search=MCGSConfig(num_simulations=3), acting=SLOW)
    assert _stored(search=MCGSConfig(num_simulations=3), temperature_schedule=SLOW
                   ).algorithm == graph
    td = algorithm_with(AlphaZero(), search=TDConfig())
    assert td == TD(search=TDConfig()) and TD.acting is None
    with pytest.raises(ValueError, match="TD has no temperature schedule"):
        algorithm_with(td, temperature_schedule=SLOW)


def test_bad_algorithms_are_named():
    with pytest.raises(ValueError, match=r"a MctxConfig is a search: write AlphaZero\(search="):
        TrainConfig(TTT, algorithm=MctxConfig())
    with pytest.raises(ValueError, match=r"AlphaZero does not train with a MCGSConfig search; "
                                         r"use GraphSearch\(search=\.\.\.\)"):
        TrainConfig(TTT, algorithm=AlphaZero(search=MCGSConfig()))
    with pytest.raises(ValueError, match="TD does not train with a MctxConfig search; use "
                                         "AlphaZero"):
        TrainConfig(TTT, algorithm=TD(search=MctxConfig()))
    with pytest.raises(ValueError, match="acting must be a TemperatureSchedule, got tuple"):
        AlphaZero(acting=(1.0, 30))


def test_set_keys_old_and_new():
    base = get_preset(TTT, "tiny")
    new = parse_overrides(base, ["algorithm.search.num_simulations=3", "algorithm.acting.moves=2"])
    old = parse_overrides(base, ["search.num_simulations=3", "temperature_schedule.moves=2"])
    assert new == old
    cfg = with_overrides(base, new)
    assert cfg.algorithm.search.num_simulations == 3 and cfg.algorithm.acting.moves == 2
    # a None evaluation player stands for the derived one: one field of it can be set
    cfg = with_overrides(base, parse_overrides(base, ["algorithm.eval_search.num_simulations=1"]))
    assert cfg.algorithm.eval_search.num_simulations == 1
    assert cfg.algorithm.eval_search.root.dirichlet_fraction == 0.0
    # a whole algorithm, as a run stores it
    tagged = json.dumps({"__dataclass__": "turbozero.training.algorithm_configs:AlphaZero",
                         "search": {"__dataclass__": "turbozero.search.kernel:TreeSearchConfig",
                                    "num_simulations": 2}})
    cfg = with_overrides(base, parse_overrides(base, [f"algorithm={tagged}"]))
    # (merged into the current algorithm of that class, as any tagged object is)
    assert cfg.algorithm == dataclasses.replace(
        base.algorithm, search=dataclasses.replace(base.algorithm.search, num_simulations=2))
    bad = tagged.replace("AlphaZero", "TD")
    with pytest.raises(ValueError, match="TD does not train with a TreeSearchConfig search"):
        with_overrides(base, parse_overrides(base, [f"algorithm={bad}"]))
    # a self-play search of another algorithm switches it, as a stored search= does
    mcgs = '{"__dataclass__": "turbozero.search.mcgs:MCGSConfig", "num_simulations": 5}'
    switched = parse_overrides(base, [f"search={mcgs}"])["algorithm"]
    assert switched == GraphSearch(search=MCGSConfig(num_simulations=5), acting=base.algorithm.acting)


def test_every_preset_names_its_algorithm_and_round_trips():
    from turbozero.games import PRESETS

    for game in PRESETS:
        for name in available_presets(game):
            cfg = get_preset(game, name)
            assert type(cfg.algorithm) is algorithm_for_search(cfg.algorithm.search), (game, name)
            assert config_from_json(json.loads(json.dumps(config_to_json(cfg)))) == cfg


def test_a_run_stored_before_reads_into_the_algorithm():
    """tests/data/ttt_run stores search / eval_search / temperature_schedule (the format before
    the algorithm was explicit); test_run_directory evaluates and resumes it."""
    with open(os.path.join(FIXTURE, "turbozero_run.json"), encoding="utf-8") as f:
        stored = json.load(f)["config"]
    assert "search" in stored and "temperature_schedule" in stored and "algorithm" not in stored
    config = load_run_config(FIXTURE)
    assert isinstance(config.algorithm, AlphaZero)
    assert config.algorithm.search == config_from_json(
        {"__dataclass__": "turbozero.training.config:TrainConfig", "game": TTT,
         "search": stored["search"]}).algorithm.search
    assert isinstance(config.algorithm.search, TreeSearchConfig)
    assert config.algorithm.eval_search is None
    assert config.algorithm.acting == TemperatureSchedule(**{
        k: v for k, v in stored["temperature_schedule"].items() if k != "__dataclass__"})


def test_a_renamed_field_reads_from_a_stored_run_and_names_its_new_name():
    """`self_play_max_moves` became `max_self_play_steps` (the step limit's one name, issue 35):
    a stored config reads into the new field (migration.RENAMED_FIELDS); a `--set` with the old
    name is told the new one; the class itself takes only today's name."""
    stored = {"__dataclass__": "turbozero.training.config:TrainConfig", "game": TTT,
              "self_play_max_moves": 7}
    assert config_from_json(stored).max_self_play_steps == 7
    with open(os.path.join(FIXTURE, "turbozero_run.json"), encoding="utf-8") as f:
        assert "self_play_max_moves" in json.load(f)["config"]  # the fixture keeps the old name
    assert load_run_config(FIXTURE).max_self_play_steps is None
    with pytest.raises(TypeError, match="self_play_max_moves"):
        TrainConfig(game=TTT, self_play_max_moves=4)
    base = get_preset(TTT, "tiny")
    with pytest.raises(ValueError, match="self_play_max_moves is now max_self_play_steps"):
        parse_overrides(base, ["self_play_max_moves=4"])
    assert with_overrides(base, parse_overrides(base, ["max_self_play_steps=4"])
                          ).max_self_play_steps == 4


def test_classes_stored_under_a_module_that_moved_still_read():
    """Run directories name classes where they were when the run was made: the optimizer parts
    in turbozero.training.trainer (now updates.py), chess adjudication in
    turbozero.chess_adjudication (now turbozero.games.chess.adjudication); no shim module keeps
    the old names (migration.MOVED_MODULES)."""
    from turbozero.games.chess.adjudication import MaterialScore
    from turbozero.training.updates import Optimizer

    with open(os.path.join(FIXTURE, "turbozero_run.json"), encoding="utf-8") as f:
        assert json.load(f)["config"]["optimizer"]["__dataclass__"] == (
            "turbozero.training.trainer:Optimizer")
    assert isinstance(load_run_config(FIXTURE).optimizer, Optimizer)
    stored = {"__dataclass__": "turbozero.training.config:TrainConfig", "game": "chess",
              "truncated_games": {"__dataclass__": "turbozero.chess_adjudication:MaterialScore",
                                  "scale": 3.0}}
    assert config_from_json(stored).truncated_games == MaterialScore(3.0)
    with pytest.raises(ValueError, match="does not exist"):
        config_from_json({"__dataclass__": "turbozero.training.trainer:NoSuchPart"})


def test_the_cpu_self_play_step_limit_has_the_one_name():
    """CPUSelfPlayConfig.max_moves became max_steps (issue 35): stored, it reads into the new
    field (migration.RENAMED_FIELDS); the class takes only today's name."""
    from turbozero.training.run_config import from_json

    stored = {"__dataclass__": "turbozero.search.cpu.selfplay:CPUSelfPlayConfig", "max_moves": 9}
    assert from_json(stored) == CPUSelfPlayConfig(max_steps=9)
    with pytest.raises(TypeError, match="max_moves"):
        CPUSelfPlayConfig(max_moves=9)


def test_the_algorithm_table_in_the_docs_is_the_registry():
    """docs/training.md's algorithm table (issue 44, item 7) lists every (algorithm, self-play
    search) pair the registry trains, with the runtime class it builds, and nothing else."""
    import pathlib
    import re

    from turbozero.training.algorithm_configs import ALGORITHM_CONFIGS

    text = (pathlib.Path(__file__).parents[2] / "docs" / "training.md").read_text()
    rows = set()
    for line in text.splitlines():
        m = re.match(r"\| `(\w+)` \| `(\w+)`[^|]*\| `(\w+)`", line)
        if m and m.group(1) in {c.__name__ for c in ALGORITHM_CONFIGS}:
            rows.add(m.groups())
    registry = set()
    for cls in ALGORITHM_CONFIGS:
        for search_type in cls.searches:
            # the runtime a config of this search builds (defaults of every search type)
            runtime = cls(search=search_type()).runtime()
            registry.add((cls.__name__, search_type.__name__, runtime.__name__))
    assert rows == registry, (f"in the docs only: {sorted(rows - registry)}; in the registry "
                              f"only: {sorted(registry - rows)}")


def test_a_new_search_family_trains_after_one_registration():
    """Issue 44: a search family added outside the library (`register_family`, nothing else)
    trains: AlphaZero takes the config of a registered family no algorithm names, self-play
    stores its policy as the target and acts on it by `acting`, evaluation plays its action.
    The toy family: the network's prior over the legal moves, no look-ahead."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from turbozero.search import register_family
    from turbozero.search.api import SearchResult, two_player_values
    from turbozero.training import Trainer

    @dataclasses.dataclass(frozen=True)
    class PriorOnly:
        family = "test-prior-only"

        def for_evaluation(self):
            return self

    calls = []

    def run(env, evaluator, variables, states, key, config, risk_beta=None):
        calls.append(type(config).__name__)  # traced once per compiled call
        logits, value = evaluator(variables, states.observation)
        legal = states.legal_action_mask
        policy = jax.nn.softmax(jnp.where(legal, logits, -jnp.inf), axis=-1)
        action = jnp.argmax(jnp.where(legal, logits, -jnp.inf), axis=-1).astype(jnp.int32)
        return SearchResult(action=action, policy=policy, root_value=value,
                            root_values=two_player_values(value, states.current_player, 2))

    register_family("test-prior-only", PriorOnly, run)
    assert algorithm_for_search(PriorOnly()) is AlphaZero
    cfg = dataclasses.replace(
        get_preset(TTT, "tiny", num_envs=4, collect_steps=5, train_steps=1, batch_size=4,
                   replay_capacity=8, eval_every=0, checkpoint_every=0, eval_opponents=()),
        algorithm=AlphaZero(search=PriorOnly(), acting=TemperatureSchedule(1.0, moves=None)))
    trainer = Trainer(cfg)
    record = trainer.step()
    assert record["positions"] == 20 and np.isfinite(record["loss"])
    assert calls  # the family searched self-play
    buf = trainer.state.buffer
    written = np.asarray(buf.written)
    policy, legal = (np.asarray(x)[written] for x in buf.policy_form.decode(buf.policy_target))
    np.testing.assert_allclose(policy.sum(-1), 1.0, rtol=1e-5)  # the family's prior, stored
    assert (policy[~legal] == 0).all() and (policy[legal] > 0).all()
    state = trainer.state
    acts = trainer.agent_policy(trainer.variables(state.train_state), state.collector.env_state,
                                jax.random.PRNGKey(0))
    assert np.asarray(state.collector.env_state.legal_action_mask)[np.arange(4),
                                                                   np.asarray(acts)].all()


def test_an_env_option_renamed_reads_from_a_stored_run():
    """PyRat's `max_turns` and Paco Sako's `max_steps` became `max_episode_steps` (the
    protocol's name, issue 44 item 5): a stored env_config with the old key reads as the new
    (each env class's `renamed_options`, read by migration.env_config), in a stored config and in a cli.json's overrides; the same
    key of another game is left alone."""
    from turbozero.training.migration import config_from_cli_json

    stored = {"__dataclass__": "turbozero.training.config:TrainConfig", "game": "pyrat",
              "env_config": [["width", 7], ["max_turns", 60]]}
    assert config_from_json(stored).env_config == (("width", 7), ("max_episode_steps", 60))
    stored = dict(stored, game="pacosako", env_config=[["max_steps", 30]])
    assert config_from_json(stored).env_config == (("max_episode_steps", 30),)
    stored = dict(stored, game="gomoku", env_config=[["max_steps", 30]])
    assert config_from_json(stored).env_config == (("max_steps", 30),)
    made = {"game": "pyrat", "preset": "tiny", "overrides": {"env_config": [["max_turns", 9]]}}
    assert config_from_cli_json(made, get_preset).env_config == (("max_episode_steps", 9),)
