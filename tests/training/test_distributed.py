"""The Trainer under jax.distributed: 2 processes on 127.0.0.1 (CPU collectives over gloo),
stopped after 2 iterations, a shard of their newest checkpoint damaged, resumed to 3, end with
the parameters of 1 process with 2 devices and the same global batch trained straight through;
they write one marker, one checkpoint per step and one metrics file. And the launcher's
settings checks."""

import json
import os
import socket
import subprocess
import sys

import jax
import numpy as np
import pytest

from turbozero.training import distributed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM_ITERATIONS = 3
STOP_AT = 2  # the pair stops here, then resumes
CHECKPOINT_EVERY = 1
# parameters after 3 iterations x 2 Adam steps: 2 processes vs 1 process with 2 devices run the
# same XLA program; only the cross-process reductions (gloo vs in-process) may add in another
# order, float32 rounding, far below the distance training moves them (checked below).
# Measured 2026-11-23: bit-equal (max difference 0.0; the largest move from init 0.011)
RTOL, ATOL = 1e-4, 1e-5

# argv: process_id num_processes port run_dir out_prefix iterations resume [other_run_dir]
# num_processes 0: one process with 2 host devices (the reference), no jax.distributed
WORKER = r"""
import json, os, sys, warnings
pid, nproc, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
run_dir, out = sys.argv[4], sys.argv[5]
iterations, resume = int(sys.argv[6]), sys.argv[7] == "1"
warnings.simplefilter("ignore", UserWarning)  # the first leg's "no evaluation happens"
sys.path.insert(0, os.getcwd())
import jax, numpy as np
from turbozero.training import distributed
if nproc:
    distributed.initialize(f"127.0.0.1:{port}", nproc, pid, timeout_s=600)
from turbozero.presets import get_preset
from turbozero.training import Trainer
from turbozero.training.checkpoints import load_checkpoint
cfg = get_preset("pgx/tic_tac_toe", "tiny", num_iterations=%(iters)d, eval_every=%(iters)d,
                 eval_games=8, num_envs=8, collect_steps=9, train_steps=2, batch_size=16,
                 checkpoint_every=%(ckpt)d)
from turbozero.training.checkpoints import DamagedCheckpointWarning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", DamagedCheckpointWarning)
    t = Trainer(cfg, run_dir, resume=resume)
damage = [str(w.message) for w in caught if w.category is DamagedCheckpointWarning]
start = int(t.state.iteration)
init = {jax.tree_util.keystr(p): np.asarray(x) for p, x in
        jax.tree_util.tree_flatten_with_path(t.state.train_state.params)[0]}
t.run(num_iterations=iterations, progress=False)
t.run_dir.close()
flat = lambda tree: {jax.tree_util.keystr(p): np.asarray(x) for p, x in
                     jax.tree_util.tree_flatten_with_path(tree)[0]}
arrays = {"final" + k: v for k, v in flat(t.state.train_state.params).items()}
arrays.update({"init" + k: v for k, v in init.items()})
if len(sys.argv) > 8:  # the other run's checkpoint, restored into this run's state
    restored, step = load_checkpoint(sys.argv[8], t.state)
    arrays.update({"other" + k: v for k, v in flat(restored.train_state.params).items()})
np.savez(f"{out}.npz", **arrays)
leaf = t.state.collector.env_state.observation
with open(f"{out}.json", "w") as f:
    json.dump({"process_index": jax.process_index(), "process_count": jax.process_count(),
               "devices": jax.device_count(), "local_devices": jax.local_device_count(),
               "obs_shards": len(leaf.sharding.device_set), "start": start,
               "damage": damage}, f)
if nproc:
    distributed.shutdown()
""" % {"iters": NUM_ITERATIONS, "ckpt": CHECKPOINT_EVERY}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra):
    """The test's environment, CPU only, no device count, and a persistent compilation cache of
    its own: executables compiled in a gloo multi-process run, loaded later by a one-process
    test from the shared cache, aborted that process inside `compilation_cache` (seen twice in
    CI on 2026-11-23), so the two never share a cache directory."""
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir + "-distributed",
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.5")
    env.pop("XLA_FLAGS", None)
    env.update(extra)
    return env


def _start(args, env, log):
    return subprocess.Popen([sys.executable, "-c", WORKER, *map(str, args)], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)


def _wait(proc, log_path, timeout):
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = "timeout"
    with open(log_path, errors="replace") as f:
        tail = f.read()[-3000:]
    assert rc == 0, f"worker {proc.args[3:5]} ended with {rc}:\n{tail}"


def _params(path, prefix):
    with np.load(path) as z:
        return {k[len(prefix):]: z[k] for k in z.files if k.startswith(prefix)}


def _pair(tmp, run_dir, iterations, resume, leg):
    """Both processes of one leg, to the end."""
    port = _free_port()
    procs = []
    for i in range(2):
        log = open(tmp / f"{leg}{i}.log", "w")
        procs.append(_start([i, 2, port, run_dir, tmp / f"{leg}{i}", iterations, int(resume)],
                            _env(), log))
        log.close()  # the child holds its own copy
    try:
        for i, proc in enumerate(procs):
            _wait(proc, tmp / f"{leg}{i}.log", timeout=1500)
    finally:  # one failed: the other would wait for it until the heartbeat timeout
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _damage_shard_of_process_1(run_dir, step):
    """Cut process 1's data file of `step` short, as a full disk would."""
    d = os.path.join(run_dir, "checkpoints", str(step), "default", "ocdbt.process_1", "d")
    names = os.listdir(d)
    assert names, d
    for name in names:
        path = os.path.join(d, name)
        os.truncate(path, os.path.getsize(path) // 3)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("distributed")
    dist_dir, ref_dir = str(tmp / "two_processes"), str(tmp / "one_process")
    _pair(tmp, dist_dir, STOP_AT, False, "a")
    _damage_shard_of_process_1(dist_dir, STOP_AT)
    _pair(tmp, dist_dir, NUM_ITERATIONS, True, "p")
    # the reference after the pair (the machine has few cores); it also restores their checkpoint
    with open(tmp / "ref.log", "w") as log:
        ref = _start([0, 0, 0, ref_dir, tmp / "ref", NUM_ITERATIONS, 0, dist_dir],
                     _env(XLA_FLAGS="--xla_force_host_platform_device_count=2"), log)
        _wait(ref, tmp / "ref.log", timeout=1200)
    info = [json.load(open(tmp / f"{name}.json")) for name in ("p0", "p1", "ref")]
    return {"dir": dist_dir, "ref_dir": ref_dir, "info": info,
            "p0": _params(tmp / "p0.npz", "final"), "p1": _params(tmp / "p1.npz", "final"),
            "ref": _params(tmp / "ref.npz", "final"), "ref_init": _params(tmp / "ref.npz", "init"),
            "restored": _params(tmp / "ref.npz", "other")}


@pytest.mark.slow
def test_two_processes_see_one_mesh(runs):
    p0, p1, ref = runs["info"]
    assert (p0["process_index"], p1["process_index"]) == (0, 1)
    assert p0["process_count"] == p1["process_count"] == 2
    assert p0["devices"] == p1["devices"] == ref["devices"] == 2
    assert p0["local_devices"] == p1["local_devices"] == 1
    assert p0["obs_shards"] == p1["obs_shards"] == ref["obs_shards"] == 2


@pytest.mark.slow
def test_resume_agrees_on_the_step_before_the_damage(runs):
    p0, p1, ref = runs["info"]
    assert p0["start"] == p1["start"] == STOP_AT - 1 and ref["start"] == 0
    # each process warned once about the damaged step; process 0 alone moved it
    for info in (p0, p1):
        assert len(info["damage"]) == 1
        assert f"checkpoints/{STOP_AT} is damaged" in info["damage"][0]
        assert f"resuming from step {STOP_AT - 1}" in info["damage"][0]
    assert "by process 0" in p1["damage"][0] and "by process 0" not in p0["damage"][0]
    assert os.listdir(os.path.join(runs["dir"], "damaged_checkpoints")) == [str(STOP_AT)]


@pytest.mark.slow
def test_same_parameters_as_one_process(runs):
    p0, p1, ref, init = runs["p0"], runs["p1"], runs["ref"], runs["ref_init"]
    assert sorted(p0) == sorted(ref) == sorted(p1) and len(ref) > 2
    for name in ref:
        # replicated parameters: both processes hold the same copy
        np.testing.assert_array_equal(p0[name], p1[name], err_msg=name)
        np.testing.assert_allclose(p0[name], ref[name], rtol=RTOL, atol=ATOL, err_msg=name)
    # the comparison can fail: training moved the parameters far beyond the tolerance
    moved = max(float(np.max(np.abs(ref[k] - init[k]))) for k in ref)
    assert moved > 100 * ATOL


@pytest.mark.slow
def test_checkpoints_written_once(runs):
    d = runs["dir"]
    assert sorted(os.listdir(d)) == ["checkpoints", "damaged_checkpoints", "metrics.jsonl",
                                     "turbozero_run.json"]
    steps = sorted(os.listdir(os.path.join(d, "checkpoints")))
    # one directory per step (2 written again after the damage), no temporary ones left
    assert steps == ["1", "2", "3"]
    # one orbax step, as the one-process run writes it, plus process 1's own shard directory:
    # not a second copy of the step by another process
    for sub in ("", "default"):
        ref_files = set(os.listdir(os.path.join(runs["ref_dir"], "checkpoints", "3", sub)))
        files = set(os.listdir(os.path.join(d, "checkpoints", "3", sub)))
        assert files - ref_files == ({"ocdbt.process_1"} if sub else set()), sub
    assert sorted(os.listdir(os.path.join(d, "checkpoints", "3", "default", "array_metadatas"))) \
        == ["process_0", "process_1"]
    # the 2-process checkpoint, restored by the 1-process run, holds the 2 processes' final
    # parameters exactly
    for name, value in runs["p0"].items():
        np.testing.assert_array_equal(runs["restored"][name], value, err_msg=name)


@pytest.mark.slow
def test_metrics_written_by_process_zero_only(runs):
    def records(d):
        with open(os.path.join(d, "metrics.jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]

    two, one = records(runs["dir"]), records(runs["ref_dir"])
    # iteration 2 was written, cut on resume (its checkpoint was damaged), and written again
    assert [r["iteration"] for r in two] == list(range(1, NUM_ITERATIONS + 1))
    for a, b in zip(two, one):
        assert a["episodes_finished"] == b["episodes_finished"]
        assert a["positions"] == b["positions"]
        assert a.get("loss") == pytest.approx(b.get("loss"), rel=1e-4, abs=1e-6)
    # the evaluation at the last iteration ran across both processes
    assert two[-1]["eval_random_games"] == 8
    assert two[-1]["eval_random_finished"] == one[-1]["eval_random_finished"]


@pytest.mark.slow
def test_cli_two_processes(tmp_path):
    """`turbozero train ... --coordinator --num-processes --process-id`: both train, process 0
    alone prints and writes cli.json and the metrics."""
    run_dir, port = str(tmp_path / "run"), _free_port()
    cmd = [sys.executable, "-m", "turbozero.cli", "train", "pgx/tic_tac_toe", "--preset", "tiny",
           "--iterations", "2", "--run-dir", run_dir, "--no-progress",
           "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
    for key_value in ("eval_every=2", "eval_games=8", "num_envs=8", "batch_size=16"):
        cmd += ["--set", key_value]
    procs = [subprocess.Popen(cmd + ["--process-id", str(i)], cwd=ROOT, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    try:
        outs = [proc.communicate(timeout=1500) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, err[-3000:]
    assert "run directory:" in outs[0][0] and "random: won " in outs[0][0]
    assert "run directory:" not in outs[1][0] and "loss:" not in outs[1][0]
    assert sorted(os.listdir(run_dir)) == ["checkpoints", "cli.json", "metrics.jsonl",
                                           "turbozero_run.json"]
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        assert [json.loads(line)["iteration"] for line in f if line.strip()] == [1, 2]


# ------------------------------------------------------------ launcher settings (fast)
def test_settings_from_arguments_then_environment():
    environ = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "4",
               "JAX_PROCESS_ID": "3"}
    assert distributed.process_group(environ=environ) == distributed.ProcessGroup(
        "10.0.0.1:1234", 4, 3)
    assert distributed.process_group("h:99", None, 0, environ=environ) == \
        distributed.ProcessGroup("h:99", 4, 0)
    none = distributed.process_group(environ={})
    assert none.detect and none == distributed.ProcessGroup()


@pytest.mark.parametrize("kwargs, setting", [
    (dict(coordinator_address="10.0.0.1", num_processes=2, process_id=0), "coordinator_address"),
    (dict(coordinator_address="h:0", num_processes=2, process_id=0), "coordinator_address"),
    (dict(coordinator_address="h:70000", num_processes=2, process_id=0), "coordinator_address"),
    (dict(coordinator_address="h:1", num_processes=0, process_id=0), "num_processes"),
    (dict(coordinator_address="h:1", num_processes=2, process_id=2), "process_id"),
    (dict(coordinator_address="h:1", num_processes=2, process_id=-1), "process_id"),
    (dict(coordinator_address="h:1", num_processes=2, process_id=True), "process_id"),
    (dict(coordinator_address="h:1", num_processes=2), "process_id"),
    (dict(num_processes=2), "coordinator_address"),
])
def test_bad_settings_name_the_setting(kwargs, setting):
    with pytest.raises(ValueError, match=setting):
        distributed.ProcessGroup(**kwargs)


def test_bad_environment_and_options_name_the_setting():
    with pytest.raises(ValueError, match="JAX_NUM_PROCESSES"):
        distributed.process_group(environ={"JAX_NUM_PROCESSES": "two"})
    with pytest.raises(ValueError, match="cpu_collectives"):
        distributed.initialize("h:1", 2, 0, cpu_collectives="nccl")
    with pytest.raises(ValueError, match="timeout_s"):
        distributed.initialize("h:1", 2, 0, timeout_s=0)


def test_one_process_helpers():
    import jax.numpy as jnp

    assert distributed.is_primary()
    distributed.barrier("nothing to wait for")
    tree = distributed.to_host({"a": jnp.arange(3), "b": jnp.float32(2.5)})
    assert isinstance(tree["a"], np.ndarray) and tree["a"].tolist() == [0, 1, 2]
    assert float(tree["b"]) == 2.5
    assert distributed.agree_min(7) == 7
    mesh = jax.sharding.Mesh(np.asarray(jax.devices()), ("data",))
    placed = distributed.place(np.arange(4), jax.sharding.NamedSharding(
        mesh, jax.sharding.PartitionSpec("data")))
    assert placed.tolist() == [0, 1, 2, 3] and placed.sharding.mesh == mesh


def test_cli_checks_its_process_options(capsys, tmp_path):
    from turbozero import cli

    # both refused before anything joins or trains: exit code 2, one line naming the setting
    assert cli.main(["train", "pgx/tic_tac_toe", "--coordinator", "127.0.0.1:1234",
                     "--num-processes", "2", "--process-id", "0"]) == 2
    assert "--run-dir is needed with several processes" in capsys.readouterr().err
    assert cli.main(["train", "pgx/tic_tac_toe", "--run-dir", str(tmp_path / "r"),
                     "--num-processes", "2", "--process-id", "2",
                     "--coordinator", "127.0.0.1:1234"]) == 2
    assert "process_id must be an int in [0, num_processes=2)" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "r")
