"""A game registers once (issue 44, item 6): `turbozero.games.register_game` makes a game
written outside the library known to `envs.make`, training, presets and the CLI by its name,
in-process or from an installed package's `turbozero.games` entry point."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import envs
import turbozero.games as games
from envs.core import Env, State
from turbozero.games import GameSpec, register_game
from turbozero.networks.value_formats import WDLValue
from turbozero.presets import available_presets, get_preset


@struct.dataclass
class NimState(State):
    stones: jax.Array


class Nim(Env):
    """docs/envs.md's game written outside the library: one heap of 7, take 1-3, whoever takes
    the last stone wins."""

    id, num_players, num_actions = "nim", 2, 3

    def _init(self, key):
        return NimState(current_player=jnp.int32(0), observation=None,
                        rewards=jnp.zeros(2, jnp.float32), terminated=jnp.bool_(False),
                        truncated=jnp.bool_(False), legal_action_mask=jnp.ones(3, bool),
                        step_count=jnp.int32(0), stones=jnp.int32(7))

    def _step(self, state, action, key):
        stones = state.stones - (action + 1)
        won = stones == 0
        rewards = jnp.where(jnp.arange(2) == state.current_player, 1.0, -1.0) * won
        return state.replace(current_player=1 - state.current_player, terminated=won,
                             rewards=rewards.astype(jnp.float32), stones=stones,
                             legal_action_mask=jnp.arange(1, 4) <= stones)

    def _observe(self, state, player_id):
        return jnp.append(jax.nn.one_hot(state.stones, 8),
                          (player_id == state.current_player).astype(jnp.float32))


def _tiny_presets():
    from turbozero.games.preset_parts import kernel_search
    from turbozero.training.acting import TemperatureSchedule
    from turbozero.training.algorithm_configs import AlphaZero

    return {"tiny": dict(num_envs=4, collect_steps=7, train_steps=2, batch_size=8,
                         replay_capacity=28, num_iterations=2, eval_every=0,
                         network={"hidden_sizes": (8,)},
                         algorithm=AlphaZero(search=kernel_search(4),
                                             acting=TemperatureSchedule(1.0, moves=2)),
                         max_self_play_steps=7, max_eval_steps=7, eval_opponents=())}


@pytest.fixture
def registries():
    """The registries as they were, after the test (other test files count the library's
    games: a game registered here must not outlive the test)."""
    saved = (dict(envs._REGISTRY), dict(games.GAMES), dict(games.PRESETS),
             games._plugins_loaded)
    yield
    for live, old in zip((envs._REGISTRY, games.GAMES, games.PRESETS), saved[:3]):
        live.clear()
        live.update(old)
    games._plugins_loaded = saved[3]


def test_a_game_outside_the_library_trains_by_name(registries, tmp_path):
    from turbozero.training import Trainer, read_metrics

    register_game(GameSpec("nim", WDLValue(), "mlp", "docs/envs.md's Nim"), env=Nim,
                  presets=_tiny_presets())
    register_game(GameSpec("nim", WDLValue(), "mlp", "docs/envs.md's Nim"), env=Nim)  # no-op
    assert "nim" in envs.available_envs() and isinstance(envs.make("nim"), Nim)
    assert available_presets("nim") == ("tiny",)
    trainer = Trainer(get_preset("nim", "tiny"), run_dir=str(tmp_path / "run"))
    assert int(trainer.run(progress=False).iteration) == 2
    records = read_metrics(str(tmp_path / "run" / "metrics.jsonl"))
    assert [r["iteration"] for r in records] == [1, 2]
    assert all(np.isfinite(r["loss"]) for r in records), records


def test_a_game_is_found_through_an_installed_packages_entry_point(registries, tmp_path,
                                                                  monkeypatch):
    (tmp_path / "nimplugin").mkdir()
    (tmp_path / "nimplugin" / "__init__.py").write_text(textwrap.dedent("""
        from turbozero.games import GameSpec, register_game
        from turbozero.networks.value_formats import WDLValue
        from test_game_registration import Nim

        register_game(GameSpec("nim-plugin", WDLValue(), "mlp", "Nim from a plugin"), env=Nim,
                      presets={"tiny": dict(num_envs=4)})
    """))
    dist = tmp_path / "nimplugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: nimplugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[turbozero.games]\nnim-plugin = nimplugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    games._plugins_loaded = False
    assert games.game_spec("nim-plugin").notes == "Nim from a plugin"
    assert isinstance(envs.make("nim-plugin"), Nim)
    assert get_preset("nim-plugin", "tiny").num_envs == 4


def test_bad_registrations_are_refused(registries):
    spec = GameSpec("nim-bad", WDLValue(), "mlp", "")
    with pytest.raises(ValueError, match="no env of envs.make"):
        register_game(spec)
    with pytest.raises(ValueError, match="Env subclass or 'module:Class'"):
        register_game(spec, env=object)
    with pytest.raises(ValueError, match="taken by"):
        envs.register("chess", Nim)
    with pytest.raises(ValueError, match="another spec"):
        register_game(GameSpec("chess", WDLValue(), "mlp", "not chess"), env="envs.chess:Chess")
    with pytest.raises(ValueError, match="spec must be"):
        register_game("nim")
