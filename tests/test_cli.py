"""The command line: `--set` parsing against the config's field types, help and presets, the
gnubg extra, and `eval` / `--resume` on a run directory made from Python."""

import dataclasses
import json
import os
import sys

import pytest

from turbozero import cli
from turbozero.presets import get_preset
from turbozero.search.mcgs import MCGSConfig
from turbozero.games.chess.adjudication import MaterialScore
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.mctx_policies import MctxConfig
from turbozero.search.one_ply import OnePlyConfig
from turbozero.search.roots import PUCTRoot
from turbozero.training.checkpoints import MARKER
from turbozero.training.algorithms import evaluation_search
from turbozero.training.run_config import (
    config_from_json,
    config_to_json,
    parse_overrides,
    with_overrides,
)

GAME = "pgx/tic_tac_toe"


def _err_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # one line, no traceback
    return err[0]


def _mctx_base():
    """A config searching with mctx (the backgammon AlphaZero presets are on the kernel now):
    the --set tests below read MctxConfig's fields."""
    base = get_preset("backgammon", "az-tiny")
    return dataclasses.replace(base, algorithm=dataclasses.replace(
        base.algorithm, search=MctxConfig(num_simulations=8)))


# ----------------------------------------------------------------------- --set parsing
def test_set_parses_each_field_type():
    base = _mctx_base()
    new = parse_overrides(base, [
        "num_envs=8", "optimizer.learning_rate=3e-3", "search.num_simulations=16",
        "search.algorithm=gumbel", "search.max_depth=none", "eval_opponents=greedy",
        'network={"extra": 1}',
    ])
    assert new["num_envs"] == 8 and new["optimizer"].learning_rate == 3e-3
    # search.x is algorithm.search.x (the key of earlier versions, kept)
    assert new["algorithm"].search == MctxConfig(num_simulations=16, algorithm="gumbel",
                                                 max_depth=None)
    # a single name is a one-element tuple, not the letters of the name
    assert new["eval_opponents"] == ("greedy",)
    # dicts merge into the preset's instead of replacing it
    assert new["network"] == {"hidden_sizes": (64, 64), "extra": 1}
    # env_config holds the env's options (backgammon: features=): chess's ply cap
    chess = get_preset("chess", "tiny")
    assert parse_overrides(chess, ["env_config.max_plies=50"])["env_config"] == (
        ("max_plies", 50),)
    assert parse_overrides(base, ["eval_opponents=random,greedy"])["eval_opponents"] == (
        "random", "greedy")
    assert parse_overrides(base, ["network.hidden_sizes=32,16"])["network"] == {
        "hidden_sizes": (32, 16)}
    assert parse_overrides(base, ['network={"hidden_sizes": [8]}'])["network"] == {
        "hidden_sizes": (8,)}
    # a JSON object merges into a nested config too; later keys build on earlier ones
    new = parse_overrides(base, ['search={"num_simulations": 4}', "search.pb_c_init=0.5"])
    assert new["algorithm"].search == MctxConfig(num_simulations=4, pb_c_init=0.5)
    pyrat = get_preset("pyrat", "tiny")
    assert parse_overrides(pyrat, ["search.capacity=40"])["algorithm"].search == (
        dataclasses.replace(pyrat.algorithm.search, capacity=40))
    assert parse_overrides(pyrat, ["algorithm.search.capacity=40"]) == parse_overrides(
        pyrat, ["search.capacity=40"])
    assert isinstance(pyrat.algorithm.search, MCGSConfig)


@pytest.mark.parametrize("pair, message", [
    ("num_envs=abc", "--set num_envs: expected an int, got 'abc'"),
    ("num_envs=1.5", "--set num_envs: expected an int, got '1.5'"),
    ("optimizer.learning_rate=fast",
     "--set optimizer.learning_rate: expected a float, got 'fast'"),
    ("search.num_simulations=x", "--set search.num_simulations: expected an int, got 'x'"),
    ("search.algorithm=alphabeta",
     "--set search.algorithm: expected one of 'muzero', 'gumbel', got 'alphabeta'"),
    ("network.hidden_sizes=64,wide", "--set network.hidden_sizes[1]: expected an int, got 'wide'"),
    ('network={"hidden_sizes": "wide"}',
     "--set network.hidden_sizes: expected a tuple (a,b or a JSON array), got 'wide'"),
    ("network=[1, 2]", "--set network: expected a JSON object"),
    ("bogus=1", "--set bogus: TrainConfig has no field 'bogus'"),
    ("search.bogus=1", "--set search.bogus: MctxConfig has no field 'bogus'"),
    ("num_envs.x=1", "--set num_envs.x: num_envs is an int, it has no field 'x'"),
    ("num_envs", "--set expects KEY=VALUE, got 'num_envs'"),
])
def test_set_rejects_values_that_do_not_fit(pair, message):
    with pytest.raises(ValueError) as err:
        parse_overrides(_mctx_base(), [pair])
    assert str(err.value).startswith(message)


def test_set_error_on_the_command_line_is_one_line(capsys):
    assert cli.main(["train", GAME, "--set", "num_envs=abc"]) == 2
    assert _err_line(capsys) == "turbozero: error: --set num_envs: expected an int, got 'abc'"


@pytest.mark.parametrize("game, pair, message", [
    # was: accepted here, then a TypeError traceback from envs.make or a run of another game
    ("backgammon", "game=chess", "--set game: the game is not a setting: it is the GAME "
     "argument (turbozero train GAME), and a run keeps the game it was made with"),
    ("gomoku", "env_config.nosuch=1", "--set env_config.nosuch: gomoku has no option 'nosuch'; "
     "its options: size, win_length, num_players, view, max_episode_steps, rewards_by_place, "
     "max_steps"),
    ("gomoku", 'env_config={"size": 9, "nosuch": 1}', "--set env_config.nosuch: gomoku has no "
     "option 'nosuch'; its options: size, "),
    ("gomoku", 'env_config={"size": "big"}', "--set env_config.size: expected an int, got 'big'"),
    ("gomoku", "env_config.size.x=1", "--set env_config.size.x: env_config.size is one option, "
     "it has no field 'x'"),
    ("gomoku", "env_config=9", "--set env_config: expected a JSON object of env options"),
    ("chess", "env_config.size=9", "--set env_config.size: chess has no option 'size'; its "
     "options: max_episode_steps, max_plies"),
    ("gomoku", "search.nosuch=1", "--set search.nosuch: MuZeroConfig has no field 'nosuch'; its "
     "fields: search, "),
])
def test_set_names_unknown_keys_at_every_level(game, pair, message):
    with pytest.raises(ValueError) as err:
        parse_overrides(get_preset(game, "tiny"), [pair])
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_set_merges_a_json_object_into_env_config():
    """Was: "dictionary update sequence element #0 has length 1"."""
    base = get_preset("gomoku", "tiny")
    new = parse_overrides(base, ['env_config={"size": 7, "max_steps": 40}'])["env_config"]
    assert dict(new) == {**dict(base.env_config), "size": 7, "max_steps": 40}
    assert dict(parse_overrides(base, ["env_config.view=none"])["env_config"])["view"] is None
    # an array of pairs, as a run stores env_config, replaces it
    assert parse_overrides(base, ['env_config=[["size", 7]]'])["env_config"] == (("size", 7),)


@pytest.mark.parametrize("game, preset", [("gomoku", "tiny"), ("backgammon", "az-tiny"),
                                          ("pyrat", "tiny"), (GAME, "tiny"), ("chess", "tiny")])
def test_search_num_simulations_is_one_key_for_every_game(game, preset):
    """Was: refused for gomoku, whose MuZero search nests them at search.search. (Backgammon's
    tiny is afterstate TD, which has no simulations: its AlphaZero preset here.)"""
    from turbozero.training.algorithms import tree_config

    base = get_preset(game, preset)
    cfg = with_overrides(base, parse_overrides(
        base, ["search.num_simulations=3", "eval_search.num_simulations=2"]))
    assert tree_config(cfg.algorithm.search).num_simulations == 3
    assert tree_config(cfg.algorithm.eval_search).num_simulations == 2
    assert type(cfg.algorithm.search) is type(base.algorithm.search)


def test_unknown_network_and_env_options_are_one_line_before_anything_is_built(tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    argv = ["train", "gomoku", "--run-dir", run_dir, "--set"]
    assert cli.main(argv + ["network.nosuch=1"]) == 2  # was: a TypeError traceback from flax
    assert _err_line(capsys) == (
        "turbozero: error: network: the MuZero network has no option 'nosuch'; its options: "
        "channels, representation_blocks, dynamics_blocks, prediction_blocks, projection_dim, "
        "head_hidden, projection_channels")
    assert cli.main(argv + ["game=chess"]) == 2
    assert "the game is not a setting" in _err_line(capsys)
    assert not os.path.exists(run_dir)
    # from Python: the same check of env_config when the Trainer is built
    from turbozero.training import Trainer

    with pytest.raises(ValueError, match="env_config: pgx/tic_tac_toe has no option 'size'"):
        Trainer(get_preset(GAME, "tiny", env_config=(("size", 3),)))


def test_changed_search_carries_a_derived_evaluation_search():
    base = _mctx_base()
    cfg = with_overrides(base, parse_overrides(base, ["search.num_simulations=5"]))
    assert cfg.algorithm.eval_search is None  # derived when the algorithm is built
    assert evaluation_search(cfg.algorithm.search) == MctxConfig(num_simulations=5, dirichlet_fraction=0.0)
    # the kernel's nested root noise is turned off too
    base = get_preset(GAME, "tiny")
    cfg = with_overrides(base, parse_overrides(base, ["search.root.dirichlet_fraction=0.5"]))
    assert cfg.algorithm.search.root.dirichlet_fraction == 0.5
    assert evaluation_search(cfg.algorithm.search).root.dirichlet_fraction == 0.0
    # a preset's own evaluation search stays
    small = get_preset("pyrat", "small")
    cfg = with_overrides(small, parse_overrides(small, ["search.num_simulations=8"]))
    assert cfg.algorithm.eval_search == small.algorithm.eval_search


def test_a_field_of_a_derived_evaluation_search_can_be_set():
    """`eval_search.num_simulations=1` on a derived (None) evaluation search starts from the
    derivation of the self-play search as set on the same command line."""
    base = get_preset(GAME, "tiny")
    assert base.algorithm.eval_search is None
    cfg = with_overrides(base, parse_overrides(
        base, ["search.num_simulations=6", "eval_search.num_simulations=1"]))
    assert cfg.algorithm.eval_search == dataclasses.replace(
        evaluation_search(dataclasses.replace(base.algorithm.search, num_simulations=6)), num_simulations=1)
    assert cfg.algorithm.eval_search.root.dirichlet_fraction == 0.0


def test_set_takes_a_config_of_another_class_tagged_as_stored():
    """A field typed `Any` (`eval_search`, `truncated_games`) takes a config of another class
    from a JSON object tagged the way run configs store it; its other keys are checked fields."""
    base = get_preset(GAME, "tiny")
    one_ply = '{"__dataclass__": "turbozero.search.one_ply:OnePlyConfig"}'
    assert parse_overrides(base, [f"eval_search={one_ply}"]) == {
        "algorithm": dataclasses.replace(base.algorithm, eval_search=OnePlyConfig())}
    chess = get_preset("chess", "small")
    assert isinstance(chess.algorithm.eval_search, OnePlyConfig)
    tree = ('{"__dataclass__": "turbozero.search.kernel:TreeSearchConfig", '
            '"num_simulations": 4, "root": {"dirichlet_fraction": 0.0}}')
    new = parse_overrides(chess, [f"eval_search={tree}", "eval_search.num_simulations=4"])
    assert new["algorithm"].eval_search == TreeSearchConfig(
        num_simulations=4, root=PUCTRoot(dirichlet_fraction=0.0))
    score = '{"__dataclass__": "turbozero.games.chess.adjudication:MaterialScore", "scale": 5}'
    assert parse_overrides(chess, [f"truncated_games={score}"])["truncated_games"] == (
        MaterialScore(5.0))
    # a field with a dataclass annotation keeps its class
    with pytest.raises(ValueError, match="--set temperature_schedule: expected a JSON object "
                                         "of TemperatureSchedule fields"):
        parse_overrides(base, [f"temperature_schedule={one_ply}"])
    with pytest.raises(ValueError, match="--set eval_search names the class 'os:path', which "
                                         "is not one of turbozero's"):
        parse_overrides(base, ['eval_search={"__dataclass__": "os:path"}'])
    with pytest.raises(ValueError, match="--set eval_search.num_simulations: expected an int"):
        parse_overrides(base, ["eval_search=" + tree.replace("4", '"x"')])
    # a duck-typed field's own check still applies to what the tag gives
    with pytest.raises(ValueError, match="optimizer must be"):
        with_overrides(base, parse_overrides(base, [f"optimizer={one_ply}"]))


# ------------------------------------------------------------------------ config JSON
@pytest.mark.parametrize("game, preset", [("backgammon", "tiny"), ("backgammon", "az-tiny"),
                                          ("pyrat", "small"),
                                          ("chess", "large"), ("pacosako", "small"),
                                          (GAME, "tiny")])
def test_config_json_round_trip(game, preset):
    config = get_preset(game, preset, eval_opponents=("random", "greedy"))
    text = json.dumps(config_to_json(config))
    assert config_from_json(json.loads(text)) == config


def test_config_json_is_generic_and_guarded():
    data = config_to_json(_mctx_base())
    search = data["algorithm"]["search"]
    assert data["algorithm"]["__dataclass__"] == "turbozero.training.algorithm_configs:AlphaZero"
    assert search["__dataclass__"] == "turbozero.search.mctx_policies:MctxConfig"
    # a field a later version added is missing from an older file: its default is used
    del search["pb_c_base"]
    assert config_from_json(data).algorithm.search.pb_c_base == MctxConfig().pb_c_base
    search["warp_factor"] = 9
    with pytest.raises(ValueError, match="MctxConfig has no field 'warp_factor'"):
        config_from_json(data)
    data["algorithm"]["search"] = {"__dataclass__": "subprocess:Popen"}
    with pytest.raises(ValueError, match="not one of turbozero's"):
        config_from_json(data)


# ---------------------------------------------------------------------- help, presets
def test_train_help_lists_games_and_the_default_preset(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["train", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for game in ("backgammon", "chess", "pacosako", "pgx/tic_tac_toe", "pyrat"):
        assert game in out
    assert "default: tiny" in out


def test_presets_prints_sizes_and_times(capsys):
    assert cli.main(["presets", "pyrat"]) == 0
    lines = capsys.readouterr().out.splitlines()
    tiny = next(line for line in lines if line.startswith("tiny"))
    assert tiny.split()[1:4] == ["32", "32", "20"]  # num_envs, simulations, iterations
    assert "num_filters=16" in tiny and "4 min 50 s" in tiny
    large = next(line for line in lines if line.startswith("large"))
    assert large.endswith("not measured")


def test_unknown_game_is_an_error(capsys):
    assert cli.main(["presets", "go"]) == 2
    assert "no presets for game 'go'" in _err_line(capsys)
    with pytest.raises(SystemExit) as done:
        cli.main(["train", "go"])
    assert done.value.code == 2
    assert "invalid choice: 'go'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- gnubg
def test_gnubg_opponent_without_gnubg_names_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "gnubg", None)  # `import gnubg` raises ImportError
    run_dir = tmp_path / "bg"
    argv = ["train", "backgammon", "--run-dir", str(run_dir), "--set",
            "eval_opponents=random,gnubg"]
    assert cli.main(argv) == 2
    assert _err_line(capsys) == ("turbozero: error: the gnubg opponent needs the gnubg package: "
                                 'pip install -e ".[backgammon]"')
    assert not run_dir.exists()  # refused before building a trainer
    # eval: checked right after reading the run's config
    run_dir.mkdir()
    (run_dir / MARKER).write_text(json.dumps({"config": config_to_json(
        get_preset("backgammon", "tiny"))}))
    assert cli.main(["eval", str(run_dir), "--opponent", "gnubg"]) == 2
    assert 'pip install -e ".[backgammon]"' in _err_line(capsys)


def test_main_job_evaluates_against_gnubg_only_where_installed(monkeypatch):
    """The backgammon tiny preset (the README's main job) plays gnubg when the extra is
    installed; without it the preset still runs and `turbozero train` says why gnubg is left
    out, in one line."""
    from turbozero import presets

    args = cli.build_parser().parse_args(["train", "backgammon"])
    if presets._installed("backgammon", "gnubg"):
        assert get_preset("backgammon", "tiny").eval_opponents == ("random", "gnubg")
        assert cli.skipped_opponent_notes(args, "tiny") == []
    monkeypatch.setitem(sys.modules, "gnubg", None)  # as if not installed
    assert get_preset("backgammon", "tiny").eval_opponents == ("random",)
    assert get_preset("backgammon", "tiny", eval_opponents=("random", "gnubg")).eval_opponents \
        == ("random", "gnubg")  # asked for by name: kept (and refused by the CLI, above)
    assert cli.skipped_opponent_notes(args, "tiny") == [
        'gnubg: not installed, so not an evaluation opponent (pip install -e ".[backgammon]" '
        "adds it)"]
    chosen = cli.build_parser().parse_args(["train", "backgammon", "--set",
                                            "eval_opponents=random"])
    assert cli.skipped_opponent_notes(chosen, "tiny") == []
    assert cli.skipped_opponent_notes(args, "az-tiny") == []  # no optional opponent


def test_backgammon_extra_brings_gnubg():
    import tomllib

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    names = lambda reqs: {r.split("=")[0].split(">")[0].split("<")[0].strip() for r in reqs}  # noqa: E731
    assert {"gnubg", "gnubg-nn"} <= names(extras["backgammon"])
    assert {"gnubg", "gnubg-nn"} <= names(extras["test"])


# ------------------------------------------------------------------------- --resume
def test_resume_with_another_preset_is_an_error(tmp_path, capsys):
    run_dir = tmp_path / "py"  # as `Trainer(config, run_dir)` leaves it: a config, no cli.json
    run_dir.mkdir()
    (run_dir / MARKER).write_text(json.dumps({"config": config_to_json(get_preset(GAME, "tiny"))}))
    argv = ["train", GAME, "--resume", "--run-dir", str(run_dir)]
    assert cli.main(argv + ["--preset", "tiny"]) == 2
    assert "was not made with that preset" in _err_line(capsys)
    assert cli.main(["train", "chess", "--resume", "--run-dir", str(run_dir)]) == 2
    assert _err_line(capsys).endswith(f"is a run of {GAME}, not chess")


def test_run_made_before_configs_were_stored_is_read_from_its_cli_json(tmp_path):
    from turbozero.runs import load_run_config

    (tmp_path / MARKER).write_text(json.dumps({"game": GAME, "network": {}}))
    (tmp_path / "cli.json").write_text(json.dumps(
        {"game": GAME, "preset": "tiny", "overrides": {"eval_every": 2, "eval_games": 8}}))
    assert load_run_config(str(tmp_path)) == get_preset(GAME, "tiny", eval_every=2, eval_games=8)
    (tmp_path / "cli.json").unlink()
    with pytest.raises(ValueError, match="did not store the run's config"):
        load_run_config(str(tmp_path))


def test_resume_of_a_missing_directory_is_an_error(tmp_path, capsys):
    missing = str(tmp_path / "nothing")
    assert cli.main(["train", GAME, "--resume", "--run-dir", missing]) == 2
    assert _err_line(capsys) == f"turbozero: error: {missing} does not exist"
    assert cli.main(["train", GAME, "--resume"]) == 2
    assert "--resume needs --run-dir" in _err_line(capsys)
    assert not os.path.exists(missing)


def test_a_referee_only_plays_the_game_that_registers_it():
    from turbozero.cli import check_opponents

    with pytest.raises(ValueError, match="the gnubg opponent does not play chess"):
        check_opponents("chess", ("random", "gnubg"))
