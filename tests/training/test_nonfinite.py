"""A run that cannot learn stops (issue 45 item 3): a non-finite learning rate is refused up
front, a step that would make the parameters non-finite is skipped, and an iteration whose
every update was skipped stops the run in one line (`--allow-nonfinite` trains on)."""

import dataclasses
import json
import os

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from turbozero import cli
from turbozero.presets import get_preset
from turbozero.training import Trainer
from turbozero.training.nonfinite import NonFiniteTraining, untrained_reason
from turbozero.training.types import Experience, TrainState
from turbozero.training.updates import (SGD, Adam, ClipByGlobalNorm, MaskedWeightDecay,
                                        Optimizer, WarmupCosine, train_step)

GAME = "pgx/tic_tac_toe"
# a learning rate that is finite but so large that the first updates leave the network's
# activations overflowing: every later loss is infinite or NaN
HUGE_RATE = 1e38


def _config(**kw):
    base = dict(num_iterations=4, eval_every=0, eval_opponents=(), checkpoint_every=1,
                collect_steps=9, train_steps=4, num_envs=8)
    base.update(kw)
    return get_preset(GAME, "tiny", **base)


@pytest.mark.parametrize("make, field", [
    (lambda v: Optimizer(learning_rate=v), "learning_rate"),
    (lambda v: WarmupCosine(end_fraction=v), "end_fraction"),
    (lambda v: ClipByGlobalNorm(max_norm=v), "max_norm"),
    (lambda v: MaskedWeightDecay(weight_decay=v), "weight_decay"),
    (lambda v: Adam(b1=v), "b1"),
    (lambda v: Adam(eps=v), "eps"),
    (lambda v: SGD(momentum=v), "momentum"),
])
@pytest.mark.parametrize("value", [float("inf"), float("nan"), "0.1", True])
def test_optimizer_parts_refuse_what_is_not_a_finite_number(make, field, value):
    """Was: learning_rate=inf accepted, every step then skipped with nothing said."""
    with pytest.raises(ValueError, match=f"^{field} must be a finite number"):
        make(value)


def test_optimizer_refusals_reach_the_command_line(capsys):
    assert cli.main(["train", GAME, "--set", "optimizer.learning_rate=inf"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["turbozero: error: learning_rate must be a finite number > 0.0, got inf"]
    with pytest.raises(ValueError, match="^warmup_steps must be an integer"):
        WarmupCosine(warmup_steps=2.5)
    with pytest.raises(ValueError, match="^params must be a tuple of parameter names"):
        MaskedWeightDecay(params="kernel")  # was: masked nothing (the letters of the name)


def test_a_step_that_makes_the_parameters_non_finite_is_skipped():
    """Finite loss and gradients, but a rate so large that the update overflows: the step
    changes nothing and is counted (was: applied, the network lost to infinities)."""
    ts = TrainState.create(apply_fn=None, params={"w": jnp.zeros(3)}, tx=optax.sgd(3e38))
    exp = Experience(observation=jnp.zeros((1, 1)), policy=jnp.ones((1, 1)),
                     legal_action_mask=jnp.ones((1, 1), bool), returns=jnp.zeros((1, 1)),
                     current_player=jnp.zeros(1, jnp.int32))

    def loss(params, train_state, experience):  # gradient -20 per weight: 20 * 3e38 overflows
        return jnp.sum(jnp.square(params["w"] - 10.0)), ({}, {})

    new, metrics = train_step(ts, exp, loss)
    assert int(metrics["skipped_nonfinite"]) == 1
    assert int(new.step) == 0
    np.testing.assert_array_equal(np.asarray(new.params["w"]), np.zeros(3))


def test_untrained_reason():
    assert untrained_reason({"replay_samples": 0}, 4) is None  # nothing to train on yet
    assert untrained_reason({"loss": 1.0, "skipped_nonfinite": 3.0}, 4) is None
    assert untrained_reason({"loss": float("nan"), "skipped_nonfinite": 4.0}, 4) == (
        "all 4 of its updates were skipped as non-finite")
    assert untrained_reason({"loss": float("inf"), "skipped_nonfinite": 0}, 4) == (
        "its loss is inf")


@pytest.fixture(scope="module")
def diverging():
    """A Trainer whose learning rate blows the network up during its first iteration."""
    cfg = _config()
    return dataclasses.replace(cfg, optimizer=dataclasses.replace(cfg.optimizer,
                                                                  learning_rate=HUGE_RATE))


def test_a_run_that_cannot_learn_stops_and_can_be_told_to_go_on(diverging):
    trainer = Trainer(diverging)
    records = []
    with pytest.raises(NonFiniteTraining) as stop:
        trainer.run(progress=False, callback=records.append)
    it = stop.value.iteration
    assert it < diverging.num_iterations and int(trainer.state.iteration) == it
    assert [r["iteration"] for r in records] == list(range(1, it + 1))
    assert records[-1]["skipped_nonfinite"] == diverging.train_steps
    assert "\n" not in str(stop.value) and "--allow-nonfinite" in str(stop.value)
    # the parameters stayed finite: the steps that would have broken them were skipped
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in
               __import__("jax").tree_util.tree_leaves(trainer.state.train_state.params))
    trainer.run(progress=False, stop_on_nonfinite=False)  # the documented switch: trains on
    assert int(trainer.state.iteration) == diverging.num_iterations


def test_the_command_line_stops_in_one_line_and_leaves_the_run_resumable(tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    argv = ["train", GAME, "--run-dir", run_dir, "--no-progress", "--iterations", "4",
            "--set", "eval_every=0", "--set", "eval_opponents=[]", "--set", "checkpoint_every=1", "--set", "train_steps=4",
            "--set", "num_envs=8", "--set", "collect_steps=9",
            "--set", f"optimizer.learning_rate={HUGE_RATE}"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        last = json.loads(f.read().splitlines()[-1])
    it = last["iteration"]
    assert it < 4 and last["skipped_nonfinite"] == 4
    assert err[0].startswith(f"turbozero: iteration {it} trained nothing: all 4 of its updates "
                             "were skipped as non-finite")
    assert f"{run_dir} resumes from the checkpoint of iteration {it}" in err[0]
