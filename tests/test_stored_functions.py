"""Stored (exported) Trainer functions (turbozero/stored_functions.py): a later Trainer build
loads them and gives bit-identical results to the plain jit path; the key changes with the
source and the config; a damaged file falls back with a warning."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import shutil
import sys
import uuid
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from turbozero import stored_functions as sf
from turbozero.presets import get_preset
from turbozero.training import Trainer

GAME = "pgx/tic_tac_toe"
STORED = ("init_state", "collect", "key_split", "train_keys", "train_step", "train_summary")


def _config(**kw):
    base = dict(num_iterations=1, eval_every=0, checkpoint_every=0, collect_steps=9,
                train_steps=2, num_envs=8, batch_size=8)
    base.update(kw)
    return get_preset(GAME, "tiny", **base)


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def _same_bits(a, b) -> bool:
    la, lb = _leaves(a), _leaves(b)
    return len(la) == len(lb) and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(la, lb))


def _record(r: dict) -> dict:
    return {k: v for k, v in r.items() if not k.endswith("_per_s")}


@pytest.fixture(scope="module")
def store_dir():
    """A subdirectory of the compile cache of its own (the XLA compiles stay shared and warm),
    removed afterwards; stored functions on while the module's Trainers are built."""
    name = f"turbozero-exported-test-{uuid.uuid4().hex[:8]}"
    old_subdir, old_env = sf.SUBDIR, os.environ.get(sf.ENV_VAR)
    sf.SUBDIR = name
    os.environ[sf.ENV_VAR] = "on"
    path = os.path.join(jax.config.jax_compilation_cache_dir, name)
    yield path
    sf.SUBDIR = old_subdir
    if old_env is None:
        os.environ.pop(sf.ENV_VAR, None)
    else:
        os.environ[sf.ENV_VAR] = old_env
    shutil.rmtree(path, ignore_errors=True)


def _step(cfg, stored: bool):
    if stored:
        trainer = Trainer(cfg)
    else:
        os.environ[sf.ENV_VAR] = "none"
        try:
            trainer = Trainer(cfg)
        finally:
            os.environ[sf.ENV_VAR] = "on"
    record = trainer.step()
    return trainer, record


@pytest.fixture(scope="module")
def runs(store_dir):
    cfg = _config()
    plain = _step(cfg, stored=False)
    first = _step(cfg, stored=True)   # a miss: exported, stored, run from the export
    second = _step(cfg, stored=True)  # a hit: loaded, neither traced nor lowered
    return cfg, plain, first, second


def _loaded(trainer) -> dict:
    fns = {"init_state": trainer._init_state_fn, "collect": trainer._collect,
           "train_step": trainer._train_steps.step,
           "train_keys": trainer._train_steps._keys,
           "train_summary": trainer._train_steps._summarize}
    return {name: f.loaded for name, f in fns.items()}


def test_second_build_loads_and_matches_plain_jit(runs, store_dir):
    _, (plain, rec_plain), (first, rec_first), (second, rec_second) = runs
    assert plain._store is None and not hasattr(plain._collect, "loaded")
    assert set(_loaded(first).values()) == {False}
    assert set(_loaded(second).values()) == {True}
    stored = sorted(os.listdir(store_dir))
    for name in STORED:
        assert sum(f.startswith(name + "-") and f.endswith(".exported") for f in stored) == 1
    # bit-identical to jax.jit's results: the whole loop state after one iteration
    assert _same_bits(plain.state, first.state) and _same_bits(plain.state, second.state)
    assert _record(rec_plain) == _record(rec_first) == _record(rec_second)
    assert rec_plain["replay_samples"] > 0 and "loss" in rec_plain  # it trained


def test_key_changes_with_source_and_config(runs, monkeypatch):
    cfg, _, (first, _), _ = runs
    args = (first.state,)
    key = first._store.key("collect", args)
    assert Trainer(cfg)._store.key("collect", args) == key  # same source, same config
    # an edited traced file: its package's hash is the input that changes
    monkeypatch.setitem(sf._PACKAGE_HASHES, "envs", "edited")
    assert Trainer(cfg)._store.key("collect", args) != key
    monkeypatch.undo()
    assert Trainer(cfg)._store.key("collect", args) == key
    # another config
    other = Trainer(dataclasses.replace(cfg, seed=cfg.seed + 1))
    assert other._store.key("collect", args) != key
    # other argument shapes
    small = jax.tree_util.tree_map(lambda x: x[:1] if x.ndim else x, first.state.collector)
    assert first._store.key("collect", (small,)) != first._store.key(
        "collect", (first.state.collector,))


def test_user_package_source_is_in_the_key(tmp_path, monkeypatch):
    pkg = tmp_path / "my_games_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rules.py").write_text("class Rules:\n    reward = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rules = importlib.import_module("my_games_pkg.rules")
    modules = sf.modules_of({"env": rules.Rules()})
    assert "my_games_pkg.rules" in modules
    store = sf.FunctionStore(str(tmp_path / "store"), "{}", modules)
    assert "my_games_pkg" in store.packages
    before = store.key("f", (jnp.ones(2),))
    (pkg / "rules.py").write_text("class Rules:\n    reward = 2\n")
    sf._PACKAGE_HASHES.pop("my_games_pkg")
    after = sf.FunctionStore(str(tmp_path / "store"), "{}", modules).key("f", (jnp.ones(2),))
    assert before != after
    sf._PACKAGE_HASHES.pop("my_games_pkg", None)
    for name in [m for m in sys.modules if m.startswith("my_games_pkg")]:
        monkeypatch.delitem(sys.modules, name)


def test_own_packages_are_hashed_even_before_they_are_imported(monkeypatch):
    """A traced function may import one of the library's packages on use, after the key was
    made: each is in the key whether imported yet or not, hashed from its files."""
    monkeypatch.delitem(sys.modules, "equity")
    monkeypatch.delitem(sf._PACKAGE_HASHES, "equity", raising=False)
    store = sf.FunctionStore("/nonexistent", "{}")
    assert set(sf.OWN_PACKAGES) <= set(store.packages)
    assert sf.package_hash("equity") is not None
    monkeypatch.delitem(sf._PACKAGE_HASHES, "equity")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "manifest"])
def test_damaged_file_falls_back_with_a_warning(runs, store_dir, damage):
    cfg, (plain, rec_plain), _, _ = runs
    (path,) = [os.path.join(store_dir, f) for f in os.listdir(store_dir)
               if f.startswith("collect-") and f.endswith(".exported")]
    blob = open(path, "rb").read()
    if damage == "garbage":
        open(path, "wb").write(b"\x00not an export" * 100)
    elif damage == "truncated":
        open(path, "wb").write(blob[: len(blob) // 2])
    else:
        open(path[: -len(".exported")] + ".json", "w").write("{not json")
    with pytest.warns(RuntimeWarning, match=r"stored function collect .* unusable"):
        trainer, record = _step(cfg, stored=True)
    assert trainer._collect.loaded is False  # exported again and stored whole
    assert _same_bits(plain.state, trainer.state) and _record(record) == _record(rec_plain)
    # stored again, whole: the new file matches its manifest (serialization is not
    # byte-for-byte repeatable, so not the old bytes)
    manifest = json.load(open(path[: -len(".exported")] + ".json"))
    assert hashlib.sha256(open(path, "rb").read()).hexdigest() == manifest["sha256"]
    assert len(blob) > 1000


# ------------------------------------------------ trees the serialization must carry
class Pair(NamedTuple):
    a: jax.Array
    b: jax.Array


@struct.dataclass
class Holder:
    x: Any
    fn: Any = struct.field(pytree_node=False)  # an object JSON cannot hold
    sizes: tuple = struct.field(pytree_node=False, default=(1, (2, 3)))


def _triple(x):
    return x * 3


def test_custom_nodes_round_trip(tmp_path):
    store = sf.FunctionStore(str(tmp_path), "{}")

    def f(h: Holder):
        return Pair(h.x.a + 1, h.x.b * 2), h.replace(x=h.x.a.sum()), {"n": h.sizes[1][0]}

    args = (Holder(Pair(jnp.arange(3.0), jnp.ones(2, jnp.int32)), _triple),)
    want = jax.jit(f)(*args)
    first = store.jit(f, "f")
    got1 = first(*args)
    again = sf.FunctionStore(str(tmp_path), "{}").jit(f, "f")
    got2 = again(*args)
    assert first.loaded is False and again.loaded is True
    for got in (got1, got2):
        assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
        assert _same_bits(got, want)
    # other shapes: the plain jit, same results
    other = (Holder(Pair(jnp.arange(4.0), jnp.ones(2, jnp.int32)), _triple),)
    assert _same_bits(again(*other), jax.jit(f)(*other))


def test_switches(tmp_path, monkeypatch):
    monkeypatch.setenv(sf.ENV_VAR, "on")
    assert sf.store_for_cache(str(tmp_path), {"a": 1}) is not None
    assert sf.store_for_cache(None, {"a": 1}) is None  # TURBOZERO_JAX_CACHE=none
    assert sf.store_for_cache(str(tmp_path), {"a": object()}) is None  # not JSON
    monkeypatch.setenv(sf.ENV_VAR, "none")
    assert sf.store_for_cache(str(tmp_path), {"a": 1}) is None


def test_a_replay_of_env_states_stores_the_loop_state_build(store_dir):
    """A replay that keeps env states (`EnvStates`, chess `large`'s) holds the env in its
    form, auxiliary data of the loop state that no file can hold: the build names the env as
    known, so it is stored and a second Trainer loads it with its own env in the form (was:
    "stored function init_state not stored (auxiliary data of a Chess is neither plain data,
    ...)" on every chess `large` start)."""
    from turbozero.training.stored_observations import EnvStates

    cfg = get_preset("chess", "tiny", replay_observations=EnvStates(), num_envs=2,
                     replay_capacity=4, eval_games=2, batch_size=4, seed=4503,
                     network={"num_filters": 4, "num_blocks": 1, "value_hidden": 4})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # "... not stored" is one
        first = Trainer(cfg)
        second = Trainer(cfg)
    assert not first._init_state_fn.loaded and second._init_state_fn.loaded
    assert second.state.buffer.form.env is second.env
    assert _same_bits(first.state, second.state)
