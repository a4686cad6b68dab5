"""Sizes bounded by memory before anything is built (issue 45 item 2): a loop state or an
evaluation larger than the device's memory is one ValueError line naming the settings, in about
a second and with nothing written (was: minutes of nothing, or an XLA out-of-memory traceback
naming no setting)."""

import os
import time

import pytest

from turbozero.presets import get_preset
from turbozero.training import Trainer
from turbozero.training.memory import ENV_VAR, parse_limit

GAME = "pgx/tic_tac_toe"


def test_a_replay_larger_than_memory_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    run_dir = tmp_path / "run"
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:  # 484 GiB of replay
        Trainer(get_preset(GAME, "tiny", num_envs=2**20, replay_capacity=2**12), str(run_dir))
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("the run's state needs about 484.1 GiB (replay 484.0 GiB; ")
    assert "lower num_envs=1048576 x replay_capacity=4096 positions" in text
    assert time.perf_counter() - start < 60  # shapes only: no allocation, no compile
    assert not run_dir.exists()


def test_an_evaluation_larger_than_memory_is_refused(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(ValueError, match=r"^an evaluation of eval_games=268435456 games needs "
                                         r"about .* GiB for its games alone, more than the "):
        Trainer(get_preset(GAME, "tiny", eval_games=2**28))


def test_the_limit_can_be_set(monkeypatch):
    """TURBOZERO_MEMORY_LIMIT replaces the device's memory (a shared machine, a wrong
    estimate): a small state refused under 1 MiB, 'none' turns the check off."""
    monkeypatch.setenv(ENV_VAR, "1MiB")
    # a seed of its own: a state stored by an earlier build is not built (nor checked) again
    cfg = get_preset(GAME, "tiny", num_envs=64, replay_capacity=512, seed=4501)
    with pytest.raises(ValueError, match=rf"more than the 1.0 MiB of {ENV_VAR}: lower num_envs"):
        Trainer(cfg)
    assert parse_limit("64GiB") == 64 * 2**30 and parse_limit("500MB") == 500 * 10**6
    assert parse_limit("none") is None and parse_limit("1024") == 1024
    with pytest.raises(ValueError, match=f"^{ENV_VAR}='lots': give bytes"):
        parse_limit("lots")
    monkeypatch.setenv(ENV_VAR, "none")
    Trainer(cfg)  # builds
    assert os.environ[ENV_VAR] == "none"
