"""The one replay writer (turbozero/training/replay.py, `write` / `add`; docs/training.md, "One
replay writer"): the column writes of the jitted collector and the slot scatter of the C++ path
give the same replay, each algorithm's replay keeps the optional fields it declares and no
others, a field declared but not given (or given but not kept) is a ValueError, and a
checkpoint of the layout before (every replay kept the trajectory fields) resumes."""

from __future__ import annotations

import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

import envs
from turbozero.networks.value_formats import MoverRelativeValues, SeatValues, WDLValue
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.mcgs import MCGSConfig
from turbozero.training import replay
from turbozero.training.algorithms import AlphaZeroAlgorithm, GraphSearchAlgorithm
from turbozero.training.muzero import MuZeroAlgorithm, MuZeroConfig

E, T, P, A = 3, 5, 2, 4
FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                       "ttt_run")
TRAJECTORY = ("action", "search_values", "written_at")


def _positions(key, step: int) -> replay.Positions:
    k = jax.random.split(key, 5)
    legal = jax.random.bernoulli(k[0], 0.7, (E, A)).at[:, 0].set(True)
    policy = jnp.where(legal, jax.random.uniform(k[1], (E, A)), 0.0)
    return replay.Positions(
        observation=jax.random.normal(k[2], (E, 6)), policy=policy / policy.sum(-1, keepdims=True),
        legal_action_mask=legal, current_player=(jnp.arange(E) + step) % P,
        episode_id=jnp.arange(E, dtype=jnp.int32) + E * (step // 3),
        return_before=jax.random.normal(k[3], (E, P)),
        action=jnp.argmax(legal, -1).astype(jnp.int32),
        search_values=jax.random.uniform(k[4], (E, P), minval=-1, maxval=1),
        search_record={"root_wdl": jnp.full((E, 3), 1 / 3), "soft_value": jnp.full((E,), 0.5)})


def _empty(fields=None) -> replay.ReplayBuffer:
    return replay.init_buffer(E, T, jnp.zeros((6,)), (A,), P, fields)


def test_the_column_writes_and_the_slot_scatter_give_the_same_replay():
    """Seven moves of every game (the ring wraps) written column by column, as the jitted
    collector does, and as scattered slots, as the C++ path does, give equal leaves; the write
    counter, episode and bookkeeping are the ring's."""
    fields = dict(replay.trajectory_fields(P),
                  search_record={"root_wdl": jnp.zeros(3), "soft_value": jnp.zeros(())})
    by_column, by_slot = _empty(fields), _empty(fields)
    for step in range(7):
        pos = _positions(jax.random.PRNGKey(step), step)
        by_column = replay.add(by_column, pos)
        rows = jnp.arange(E + 1, dtype=jnp.int32)  # a padding entry past the last game: dropped
        pad = jax.tree_util.tree_map(lambda x: jnp.concatenate([x, x[:1]]), pos)
        cols = jnp.full((E + 1,), step % T, jnp.int32)
        by_slot = replay.add(by_slot, pad._replace(
            written_at=jnp.full((E + 1,), step, jnp.int32)), rows, cols).replace(
                ptr=jnp.int32((step + 1) % T), num_writes=jnp.int32(step + 1))
    for (path, a), b in zip(jax.tree_util.tree_flatten_with_path(by_column)[0],
                            jax.tree_util.tree_leaves(by_slot)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=str(path))
    assert int(by_column.ptr) == 7 % T and int(by_column.num_writes) == 7
    # column c holds the newest of the writes c, c + T: 5, 6 on the first two, then 2, 3, 4
    np.testing.assert_array_equal(np.asarray(by_column.written_at[0]), [5, 6, 2, 3, 4])
    assert bool(jnp.all(by_column.written)) and not bool(jnp.any(by_column.has_target))
    last = _positions(jax.random.PRNGKey(6), 6)
    np.testing.assert_array_equal(np.asarray(by_column.action[:, 1]), np.asarray(last.action))


def test_finished_positions_have_their_targets_and_undeclared_fields_are_not_kept():
    """Positions of games already over (the C++ path's) get their returns and a target; a
    replay that declares nothing keeps none of the optional fields, whatever is given."""
    buf = _empty()
    for name in replay.OPTIONAL_FIELDS:
        assert getattr(buf, name) is None
    pos = _positions(jax.random.PRNGKey(0), 0)
    returns = jnp.asarray([[1.0, -1.0], [0.0, 0.0], [-1.0, 1.0]])
    out = replay.add(buf, pos._replace(returns=returns))
    np.testing.assert_array_equal(np.asarray(out.returns[:, 0]), np.asarray(returns))
    assert bool(jnp.all(out.has_target[:, 0])) and int(replay.num_samples(out)) == E
    policy, legal = replay.policy_targets(out, jnp.arange(E), jnp.zeros(E, jnp.int32))
    np.testing.assert_array_equal(np.asarray(policy), np.asarray(pos.policy))
    np.testing.assert_array_equal(np.asarray(legal), np.asarray(pos.legal_action_mask))
    assert out.action is None and out.search_values is None and out.written_at is None


def test_what_is_declared_must_be_given_and_only_what_is_kept_is_written():
    with pytest.raises(ValueError, match="no optional field 'root_values'"):
        replay.init_buffer(E, T, jnp.zeros((6,)), (A,), P, {"root_values": jnp.zeros(P)})
    traj = _empty(replay.trajectory_fields(P))
    with pytest.raises(ValueError, match="keeps 'search_values'"):
        replay.add(traj, _positions(jax.random.PRNGKey(0), 0)._replace(search_values=None))
    with pytest.raises(ValueError, match="keeps no 'action'"):
        replay.write(_empty(), {"action": jnp.zeros((E,), jnp.int32)})
    with pytest.raises(ValueError, match="'search_record'"):
        bad = {"root_wdl": jnp.zeros((E, 3))}  # the soft value missing
        replay.write(_empty({"search_record": {"root_wdl": jnp.zeros(3),
                                               "soft_value": jnp.zeros(())}}),
                     {"search_record": bad})
    with pytest.raises(ValueError, match="write counter"):
        replay.consecutive(_empty(), jnp.zeros(2, jnp.int32), jnp.zeros(2, jnp.int32), 3)


def _ttt_apply(variables, obs, train=False):
    del variables, train
    return jnp.zeros(obs.shape[:1] + (9,)), jnp.zeros(obs.shape[:1] + (3,))


def test_each_algorithm_declares_only_the_fields_it_reads():
    """MuZero's replay keeps the trajectory (its windows read it); AlphaZero's keeps none of it,
    and its root WDL only with a WDL head on the kernel; GraphSearch's nothing optional."""
    ttt = envs.make("pgx/tic_tac_toe")
    states = jax.vmap(ttt.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    kernel = TreeSearchConfig(num_simulations=2)
    wdl = AlphaZeroAlgorithm(ttt, _ttt_apply, WDLValue(), kernel).init_replay(2, 4, states)
    assert set(wdl.search_record) == {"root_wdl", "soft_value"}
    scalar = AlphaZeroAlgorithm(ttt, _ttt_apply, SeatValues(2), kernel).init_replay(2, 4, states)
    for buf in (wdl, scalar):
        assert all(getattr(buf, name) is None for name in TRAJECTORY)
    assert scalar.search_record is None

    gomoku = envs.make("gomoku")
    g_states = jax.vmap(gomoku.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    mz = MuZeroAlgorithm(gomoku, _ttt_apply, MoverRelativeValues(gomoku.num_players),
                         MuZeroConfig()).init_replay(2, 4, g_states)
    assert mz.search_record is None
    assert mz.action.shape == (2, 4) and mz.search_values.shape == (2, 4, gomoku.num_players)
    np.testing.assert_array_equal(np.asarray(mz.written_at), -1)  # an empty slot: never written

    pyrat = envs.make("pyrat")
    p_states = jax.vmap(pyrat.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    gs = GraphSearchAlgorithm(pyrat, _ttt_apply, SeatValues(pyrat.num_players),
                              MCGSConfig(num_simulations=2)).init_replay(2, 4, p_states)
    assert all(getattr(gs, name) is None for name in replay.OPTIONAL_FIELDS)


def test_a_checkpoint_of_the_earlier_layout_resumes_without_the_trajectory(tmp_path):
    """tests/data/ttt_run was written when every replay kept the trajectory fields: resuming it
    reads every leaf today's AlphaZero replay keeps, equal to the stored ones, and drops those."""
    from turbozero.training import Trainer
    from turbozero.training.checkpoints import read_marker
    from turbozero.runs import load_run_config

    run = str(tmp_path / "run")
    shutil.copytree(FIXTURE, run)
    stored_shapes = read_marker(run)["state_shapes"]
    assert all(f".buffer.{name}" in stored_shapes for name in TRAJECTORY)  # the old layout
    stored = ocp.StandardCheckpointer().restore(os.path.join(run, "checkpoints", "2", "default"))
    trainer = Trainer(load_run_config(run), run_dir=run, resume=True)
    try:
        buf = jax.device_get(trainer.state.buffer)
        assert int(trainer.state.iteration) == 2
        assert all(getattr(buf, name) is None for name in TRAJECTORY)
        old = stored["buffer"]
        for name in ("observation", "current_player", "returns", "return_before", "episode_id",
                     "written", "has_target", "ptr", "num_writes"):
            np.testing.assert_array_equal(np.asarray(getattr(buf, name)), old[name], name)
        for name in ("root_wdl", "soft_value"):
            np.testing.assert_array_equal(buf.search_record[name], old["search_record"][name])
        np.testing.assert_array_equal(buf.policy_target.policy, old["policy_target"]["policy"])
        assert bool(np.any(buf.written))
        # the marker is rewritten in today's layout once the step is restored
        assert not any(f".buffer.{name}" in read_marker(run)["state_shapes"] for name in TRAJECTORY)
    finally:
        trainer.run_dir.close()
