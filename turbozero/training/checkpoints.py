"""orbax checkpoints of the whole loop state, in a run directory the library owns.

A run directory holds `turbozero_run.json` (the game, network, shapes and full `TrainConfig`
that made it), `checkpoints/<step>/` (orbax) and `metrics.jsonl`. The library refuses to write
into a non-empty directory without that marker, and refuses to resume a run of another game,
network or loop-state shape; orbax's `max_to_keep` only ever removes checkpoints inside
`checkpoints/`, which we created. A run directory is never overwritten by accident: a new run
into a directory that already holds a run refuses unless told `overwrite=True`, and resuming a
directory with no checkpoint refuses instead of starting again at iteration 1.

Damage. orbax writes a step into `checkpoints/<step>.orbax-checkpoint-tmp-<time>/` and renames
it to `checkpoints/<step>/` when every file is written, so a run killed mid-save leaves only a
temporary directory, which orbax never lists as a step (and which the next run deletes). The
marker and metrics are replaced by rename too. A step damaged after the fact (a truncated data
file, an empty `_METADATA`, a cut manifest: a full disk, a copy that stopped half way) is found
on restore: it is named in one warning line, set aside into `damaged_checkpoints/`, and the
newest intact step is restored; if no step is intact, restoring refuses with the reasons.
Evaluation and resuming judge a step by the same rule (`restore_intact`): its metadata files are
whole, the arrays read from it read, and the network's variables among them are finite.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Iterator, Optional

import jax
import numpy as np
import orbax.checkpoint as ocp

from turbozero.training import distributed
from turbozero.training.metrics import metric_lines
from turbozero.training.migration import stored_state_shapes

MARKER = "turbozero_run.json"
# agree_min's stand-in for "no checkpoint": larger than any step, so any real step wins
NO_STEP = 2**31 - 1
DAMAGED = "damaged_checkpoints"
# after a failed restore, its other TensorStore reads finish (and print) for a while: wait until
# the held output has been quiet this long, or at most _STRAGGLERS_MAX_S
_STRAGGLERS_QUIET_S = 0.5
_STRAGGLERS_MAX_S = 5.0


class DamagedCheckpointWarning(UserWarning):
    """A checkpoint step could not be restored and an older one is used instead."""


def _shapes(tree: Any) -> dict[str, list[int]]:
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {jax.tree_util.keystr(p): list(x.shape) for p, x in flat}


def write_json_atomic(path: str, data: Any) -> None:
    """Write JSON to a temporary file, then rename it over `path`: a reader (or a run killed
    mid-write) sees the old file or the new one, never half of one."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_marker(path: str) -> dict[str, Any]:
    """The marker of the run directory `path`, with a one-line error when it is missing or
    unreadable."""
    marker = os.path.join(path, MARKER)
    if not os.path.exists(marker):
        raise ValueError(f"{path} is not a turbozero run directory (no {MARKER})")
    try:
        with open(marker, encoding="utf-8") as f:
            found = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{marker} is damaged: {_reason(err)}") from None
    if not isinstance(found, dict):
        raise ValueError(f"{marker} is damaged: a JSON {type(found).__name__}, not an object")
    return found


def _reason(err: BaseException) -> str:
    """One line saying why: orbax and TensorStore errors run to pages."""
    lines = str(err).strip().splitlines()
    first = lines[0].strip() if lines else ""
    first = first.split(" See full TensorStore details")[0]  # then a repr of a bound method
    if len(first) > 160:
        first = first[:157] + "..."
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


def _first_difference(found: dict[str, list[int]], want: dict[str, list[int]]) -> str:
    for key in sorted(set(found) | set(want)):
        if found.get(key) != want.get(key):
            return (f"{key or 'state'} is {found.get(key, 'absent')} there, "
                    f"{want.get(key, 'absent')} here")
    return ""


def _manager(directory: str, *, max_to_keep: Optional[int] = None,
             write: bool) -> ocp.CheckpointManager:
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep,
        create=write,
        # the temporary directory of a save that was killed: never a step, only litter
        cleanup_tmp_directories=write,
    )
    return ocp.CheckpointManager(directory, options=options)


def _restore_step(manager: ocp.CheckpointManager, step: int, like: Any) -> Any:
    abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, like)
    return manager.restore(step, args=ocp.args.StandardRestore(abstract))


def _unraisable_to_fd2(unraisable: Any) -> None:
    """Print an unraisable exception to file descriptor 2 itself (`sys.stderr` may be another
    file, as under pytest), where `_stderr_held_back` holds it."""
    text = "".join(traceback.format_exception(
        unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback))
    os.write(2, text.encode(errors="replace"))


def _wait_until_quiet(fd: int) -> None:
    """Wait until nothing has been written to the file behind `fd` for _STRAGGLERS_QUIET_S."""
    deadline = time.monotonic() + _STRAGGLERS_MAX_S
    size, quiet_since = os.fstat(fd).st_size, time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < _STRAGGLERS_QUIET_S:
        time.sleep(0.05)
        now = os.fstat(fd).st_size
        if now != size:
            size, quiet_since = now, time.monotonic()


@contextlib.contextmanager
def _stderr_held_back() -> Iterator[list[bool]]:
    """Hold what is written to file descriptor 2 until the block ends; it is written out unless
    the block sets `drop[0] = True`. When TensorStore fails to read one array of a damaged
    step, its other reads still in flight call back into orbax's closed event loop and print
    hundreds of lines of "Event loop is closed" tracebacks from C++, some during the next
    step's restore; the one-line reason we give says everything they do. Without damage, the
    output (orbax's warnings) goes through."""
    sys.stderr.flush()
    saved = os.dup(2)
    drop = [False]
    hook = sys.unraisablehook  # the tracebacks arrive as unraisable exceptions
    # a damaged step's reads that orbax dropped unstarted warn that they were never awaited,
    # when dropped or when collected: the one-line reason says it all, so no such warning
    # leaves this block
    with tempfile.TemporaryFile() as held, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        os.dup2(held.fileno(), 2)
        sys.unraisablehook = _unraisable_to_fd2
        try:
            yield drop
        finally:
            if drop[0]:
                # the failed reads' coroutines report when they are collected (an unraisable
                # exception): collect them here, while their reports are held back, not at
                # some later moment in the user's output
                gc.collect()
            sys.stderr.flush()
            sys.unraisablehook = hook
            os.dup2(saved, 2)
            os.close(saved)
            if not drop[0]:
                held.seek(0)
                text = held.read().decode(errors="replace")
                if text:
                    sys.stderr.write(text)


def restore_network(manager: ocp.CheckpointManager, step: int, like: Any) -> Any:
    """Only what an evaluation needs (the network's variables and the iteration) out of a loop
    state checkpoint: orbax's partial restore, so a checkpoint whose replay or collector layout
    differs from `like`'s (another library version) still evaluates."""
    ts = like.train_state
    item = {"train_state": {"params": ts.params}, "iteration": like.iteration}
    if ts.batch_stats is not None:
        item["train_state"]["batch_stats"] = ts.batch_stats
    abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, item)
    out = manager.restore(step, args=ocp.args.PyTreeRestore(
        item=abstract, restore_args=ocp.checkpoint_utils.construct_restore_args(abstract),
        partial_restore=True))
    restored = out["train_state"]
    return like.replace(
        train_state=ts.replace(params=restored["params"],
                               batch_stats=restored.get("batch_stats", ts.batch_stats)),
        iteration=out["iteration"])


# the files of a step that every orbax of the pinned range writes and reads as JSON: the
# step's own metadata (optional: not every version writes it) and the item's tree metadata.
# orbax's partial restore (`restore_network`, what `turbozero eval` reads) does not need the
# tree metadata and would use a step without it, which the whole-state restore of a resume
# calls damaged: both check these files first, so a step is damaged for both or for neither.
_STEP_JSON = (("_CHECKPOINT_METADATA", False), (os.path.join("default", "_METADATA"), True))


def step_damage(directory: str, step: int) -> Optional[str]:
    """Why the metadata of step `step` in the checkpoint directory `directory` is damaged (a
    file missing, empty or cut), or None when it is whole."""
    for name, required in _STEP_JSON:
        path = os.path.join(directory, str(step), name)
        if not os.path.exists(path):
            if required:
                return f"{name} is missing"
            continue
        try:
            with open(path, encoding="utf-8") as f:
                json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            return f"{_reason(err)} (in {name})"
    return None


def newest_whole_step(run_path: str) -> Optional[int]:
    """The newest checkpoint step of a run directory whose metadata is whole (`step_damage`),
    read from the listing without restoring or changing anything; None when there is none.
    (A step whose arrays are damaged is found only by restoring it.)"""
    directory = os.path.join(run_path, "checkpoints")
    if not os.path.isdir(directory):
        return None
    steps = sorted((int(n) for n in os.listdir(directory) if n.isdigit()), reverse=True)
    return next((s for s in steps if step_damage(directory, s) is None), None)


def nonfinite_variables(state: Any) -> Optional[str]:
    """The first network variable (parameter or BatchNorm statistic) of a restored loop state
    that holds a NaN or an infinity, or None. Training from such parameters only spreads them
    (every step's loss is then non-finite and skipped), so such a step counts as damaged."""
    ts = state.train_state
    network = {"params": ts.params, "batch_stats": ts.batch_stats}
    for path, leaf in jax.tree_util.tree_flatten_with_path(network)[0]:
        # replicated: every process holds the whole array in its first shard
        data = leaf.addressable_shards[0].data if isinstance(leaf, jax.Array) else leaf
        if not np.all(np.isfinite(np.asarray(data))):
            return jax.tree_util.keystr(path)
    return None


def restore_intact(manager: ocp.CheckpointManager, directory: str, like: Any,
                   restore: Any = _restore_step,
                   ) -> tuple[Optional[Any], Optional[int], dict[int, str]]:
    """(state, step, damaged): the newest step of `manager` that restores into the structure
    (and shardings) of `like`, trying older ones when a step is damaged; `damaged` maps each
    skipped step to its reason. (None, None, {}) when there is no checkpoint at all; a
    ValueError listing the reasons when there are steps but none is intact. `restore(manager,
    step, like)` reads one step (default: the whole loop state).

    The one rule for damage, for evaluation and resuming alike: a step is damaged when its
    metadata files are missing or cut (`step_damage`), when reading it fails, or when the
    network variables read from it are not all finite (`nonfinite_variables`)."""
    damaged: dict[int, str] = {}
    with _stderr_held_back() as drop:
        for step in sorted(manager.all_steps(), reverse=True):
            reason = step_damage(directory, step)
            if reason is None:
                try:
                    state = restore(manager, step, like)
                except Exception as err:  # noqa: BLE001 - any failure to read a step is damage
                    reason = _reason(err)
                    drop[0] = True
                    _wait_until_quiet(2)  # the failed step's reads still in flight report there
                else:
                    bad = nonfinite_variables(state)
                    if bad is None:
                        return state, step, damaged
                    reason = f"non-finite network variables: {bad} holds NaN or infinity"
            damaged[step] = reason
    if damaged:
        reasons = "; ".join(f"step {s}: {r}" for s, r in damaged.items())
        raise ValueError(f"no intact checkpoint in {directory}: {reasons}")
    return None, None, damaged


def check_network_shapes(run_path: str, params: Any) -> None:
    """A one-line ValueError when the run's stored network parameter shapes (its marker) are
    not those of `params`, the network this config builds: e.g. an observation encoding
    (env_config) of another width than the run's, which orbax would report as every step
    damaged. Markers without shapes are not checked."""
    try:
        found = read_marker(run_path).get("param_shapes")
    except (OSError, ValueError):
        return  # no readable marker: the restore names what is wrong
    if found is None:
        return
    diff = _first_difference(found, _shapes(params))
    if diff:
        raise ValueError(f"{run_path} holds a network of other shapes than this config builds "
                         f"({diff}): use the run's own env_config (its observation encoding, "
                         "hence the network's input width) and network")


def load_checkpoint(run_path: str, like: Any, restore: Any = None) -> tuple[Any, int]:
    """Restore the newest intact checkpoint of a run directory, reading only (for
    `turbozero eval`): damaged steps are warned about and left where they are. `restore`
    reads one step (default: the whole loop state; `restore_network`: only the network's
    variables and the iteration, into `like`)."""
    directory = os.path.join(os.path.abspath(run_path), "checkpoints")  # orbax wants absolute
    if not os.path.isdir(directory):
        raise ValueError(f"no checkpoint in {run_path}")
    check_network_shapes(run_path, like.train_state.params)
    manager = _manager(directory, write=False)
    try:
        state, step, damaged = restore_intact(manager, directory, like,
                                              _restore_step if restore is None else restore)
    finally:
        manager.close()
    for bad, reason in damaged.items():
        warnings.warn(f"checkpoint {os.path.join(directory, str(bad))} is damaged ({reason}); "
                      f"using step {step}", DamagedCheckpointWarning, stacklevel=2)
    if step is None:
        raise ValueError(f"no checkpoint in {run_path}")
    return state, step


# what the library (and its CLI) writes into a run directory: what overwrite=True removes.
# Anything else there (a user's notes, a script's own files) is left alone.
RUN_FILES = (MARKER, "checkpoints", DAMAGED, "metrics.jsonl", "metrics.png", "cli.json")


class RunDirectory:
    """Owns one run directory: its marker, its checkpoints and its metrics file.

    `identity` (game, network, config, ...) is stored in the marker; `params` and `state` give
    the shapes a resumed run must match. A run directory is never overwritten by accident:

    * `resume=True` needs a run there with at least one checkpoint; the marker is rewritten
      (with the config the run continues with) only once `resume()` has restored a step;
    * a new run (`resume=False`) needs a missing or empty directory, or `overwrite=True`,
      which removes the run found there (`RUN_FILES` only) once every check has passed.
    """

    def __init__(self, path: str, identity: dict[str, Any], params: Any, *, resume: bool,
                 overwrite: bool = False, max_to_keep: int = 3, state: Any = None):
        self.path = os.path.abspath(path)
        self.max_to_keep = max_to_keep
        self.identity = dict(identity, param_shapes=_shapes(params))
        if state is not None:
            self.identity["state_shapes"] = _shapes(state)
        if resume and overwrite:
            raise ValueError("resume and overwrite exclude each other: resume continues the run "
                             f"in {self.path}, overwrite starts it again from iteration 1")
        exists = os.path.isdir(self.path) and bool(os.listdir(self.path))
        # several processes (jax.distributed) share one directory, which must be one file
        # system to them all (orbax writes each process's shards there): every process checks
        # it before any writes, then the primary alone writes the marker and the metrics file
        if resume and not exists:
            raise ValueError(f"cannot resume {self.path}: no run there (the directory "
                             f"{'is empty' if os.path.isdir(self.path) else 'does not exist'})")
        if exists:
            if not os.path.exists(os.path.join(self.path, MARKER)):
                raise ValueError(
                    f"{self.path} exists, is not empty and was not created by turbozero; "
                    "choose another run directory"
                )
            found = read_marker(self.path)
            if resume:
                self._check_compatible(found)
                if not self._has_checkpoints():
                    raise ValueError(
                        f"cannot resume {self.path}: {self._checkpoints_found()}, so there is "
                        "nothing to continue from; start the run again with --overwrite "
                        "(Python: overwrite=True) or train into another run directory")
            elif not overwrite:
                resumable = ("continue it with --resume (Python: resume=True), "
                             if self._has_checkpoints() else "")
                raise ValueError(
                    f"{self.path} already holds a run of {found.get('game', '?')} "
                    f"({self._contents()}): {resumable}replace it with --overwrite (Python: "
                    "overwrite=True), or choose another run directory")
        distributed.barrier("turbozero run directory checked")
        # what overwrite=True removed (`turbozero train --overwrite` lists it), else []
        self.replaced: list[str] = []
        if distributed.is_primary():
            if exists and overwrite:
                self.replaced = self._remove_run()
            os.makedirs(self.path, exist_ok=True)
            if not resume:  # a resumed run rewrites it once a checkpoint is restored
                self._write_marker()
        distributed.barrier("turbozero run directory written")
        # orbax's manager is itself multi-process: every process saves its own shards of each
        # step, the primary its metadata, and the step is renamed into place once all are done
        self.manager = _manager(self.checkpoint_dir, max_to_keep=max_to_keep, write=True)

    def _write_marker(self) -> None:
        write_json_atomic(os.path.join(self.path, MARKER), self.identity)

    def _remove_run(self) -> list[str]:
        """Remove the run found here (overwrite=True): the files the library writes only.
        What it removed, each with what it held (`replaced`)."""
        removed = []
        for name in RUN_FILES:
            target = os.path.join(self.path, name)
            if name == "checkpoints" and os.path.isdir(target):
                steps = self._steps()
                removed.append("checkpoints/ (" + (f"iterations {', '.join(map(str, steps))})"
                                                    if steps else "no step)"))
            elif name == "metrics.jsonl" and os.path.exists(target):
                removed.append(f"metrics.jsonl ({self._metrics_lines()})")
            elif os.path.isdir(target):
                removed.append(f"{name}/")
            elif os.path.lexists(target):
                removed.append(name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            elif os.path.lexists(target):
                os.remove(target)
        return removed

    def _steps(self) -> list[int]:
        d = self.checkpoint_dir
        return sorted(int(n) for n in os.listdir(d) if n.isdigit()) if os.path.isdir(d) else []

    def _checkpoints_found(self) -> str:
        """What checkpoints/ holds when it holds no step, for the refusal to resume."""
        d = self.checkpoint_dir
        if not os.path.isdir(d):
            found = "it has no checkpoints/ directory (the run stopped before its first checkpoint)"
        else:
            names = sorted(os.listdir(d))
            killed = [n for n in names if ".orbax-checkpoint-tmp" in n]
            if killed:
                found = (f"checkpoints/ holds no step, only {', '.join(killed)} (a save that "
                         "was killed)")
            else:
                found = "checkpoints/ holds no step"
        damaged = os.path.join(self.path, DAMAGED)
        if os.path.isdir(damaged) and os.listdir(damaged):
            found += f" (damaged steps set aside in {DAMAGED}/: {', '.join(sorted(os.listdir(damaged)))})"
        return found

    def _contents(self) -> str:
        """What a run directory holds, for the refusal to write a new run into it."""
        steps = self._steps()
        parts = [f"checkpoints of iterations {', '.join(map(str, steps))}" if steps
                 else "no checkpoint"]
        if os.path.exists(self.metrics_path):
            parts.append(self._metrics_lines())
        return "; ".join(parts)

    def _metrics_lines(self) -> str:
        """"N lines of metrics" of the metrics file (which exists)."""
        with open(self.metrics_path, encoding="utf-8", errors="replace") as f:
            lines = sum(1 for line in f if line.strip())
        return f"{lines} line{'s' if lines != 1 else ''} of metrics"

    def _check_compatible(self, found: dict[str, Any]) -> None:
        for field in ("game", "network"):
            if found.get(field) != self.identity.get(field):
                raise ValueError(
                    f"{self.path} holds a run with {field}={found.get(field)!r}, "
                    f"not {self.identity.get(field)!r}"
                )
        if found.get("param_shapes") != self.identity["param_shapes"]:
            diff = _first_difference(found.get("param_shapes") or {},
                                     self.identity["param_shapes"])
            raise ValueError(f"{self.path} holds a run with other network parameter shapes "
                             f"({diff}): resume with the run's env_config and network")
        # older markers hold no state shapes: orbax then names the mismatch on restore
        if "state_shapes" in found and "state_shapes" in self.identity:
            here = self.identity["state_shapes"]
            diff = _first_difference(stored_state_shapes(found["state_shapes"], here), here)
            if diff:
                raise ValueError(
                    f"{self.path} holds a loop state of other shapes ({diff}): resume with the "
                    "run's num_envs, replay_capacity and env_config"
                )

    @property
    def checkpoint_dir(self) -> str:
        return os.path.join(self.path, "checkpoints")

    def _has_checkpoints(self) -> bool:
        return bool(self._steps())

    @property
    def metrics_path(self) -> str:
        return os.path.join(self.path, "metrics.jsonl")

    def latest_step(self) -> Optional[int]:
        return self.manager.latest_step()

    def save(self, step: int, tree: Any) -> None:
        self.manager.save(step, args=ocp.args.StandardSave(tree))
        self.manager.wait_until_finished()

    def restore(self, like: Any, step: Optional[int] = None) -> Any:
        """Restore `step` (default: the newest intact one, see `resume`) into the structure
        (and shardings) of `like`; a damaged step (the rule of `restore_intact`) is a
        ValueError naming the reason."""
        if step is None:
            return self.resume(like)[0]
        if step not in self.manager.all_steps():
            raise ValueError(f"no checkpoint of step {step} in {self.checkpoint_dir}")
        where = os.path.join(self.checkpoint_dir, str(step))
        reason = step_damage(self.checkpoint_dir, step)
        if reason is not None:
            raise ValueError(f"checkpoint {where} is damaged ({reason})")
        try:
            state = _restore_step(self.manager, step, like)
        except Exception as err:  # noqa: BLE001 - any failure to read a step is damage
            raise ValueError(f"checkpoint {where} is damaged ({_reason(err)})") from None
        bad = nonfinite_variables(state)
        if bad is not None:
            raise ValueError(f"checkpoint {where} is damaged (non-finite network variables: "
                             f"{bad} holds NaN or infinity)")
        return state

    def resume(self, like: Any) -> tuple[Any, int]:
        """(state, step) of the newest intact checkpoint; a ValueError when there is none
        (the directory is left as it was). The marker is rewritten once a step is restored.

        Damaged newer steps are moved to `damaged_checkpoints/` (the run will write those step
        numbers again) with one warning line each. With several processes, each reads its own
        shards, so one may find damage another does not: all resume from the oldest step any
        of them settled on, and the primary sets aside every newer step.
        """
        try:
            state, step, damaged = restore_intact(self.manager, self.checkpoint_dir, like)
        except ValueError as err:  # every step damaged: say what to do (eval only reads)
            raise ValueError(f"{err}; start the run again with --overwrite (Python: "
                             "overwrite=True) or train into another run directory") from None
        if jax.process_count() > 1:
            agreed = distributed.agree_min(NO_STEP if step is None else step)
            if agreed != (NO_STEP if step is None else step):  # another process found damage
                for newer in sorted(s for s in self.manager.all_steps() if s > agreed):
                    damaged.setdefault(newer, "damaged on another process")
                step = None if agreed == NO_STEP else agreed
                state = None if step is None else _restore_step(self.manager, step, like)
        if damaged:
            self.manager.close()
            for bad, reason in damaged.items():
                src = os.path.join(self.checkpoint_dir, str(bad))
                dest = (self._set_aside(src, bad) if distributed.is_primary()
                        else f"{os.path.join(self.path, DAMAGED)} by process 0")
                warnings.warn(f"checkpoint {src} is damaged ({reason}); moved to {dest}, "
                              f"resuming from step {step}", DamagedCheckpointWarning, stacklevel=3)
            distributed.barrier("turbozero damaged checkpoints set aside")
            self.manager = _manager(self.checkpoint_dir, max_to_keep=self.max_to_keep, write=True)
        if step is None:
            raise ValueError(
                f"cannot resume {self.path}: {self._checkpoints_found()}, so there is nothing "
                "to continue from; start the run again with --overwrite (Python: "
                "overwrite=True) or train into another run directory")
        if distributed.is_primary():  # the marker describes the config the run continues with
            self._write_marker()
        distributed.barrier("turbozero run directory marker written")
        return state, step

    def _set_aside(self, src: str, step: int) -> str:
        root = os.path.join(self.path, DAMAGED)
        os.makedirs(root, exist_ok=True)
        dest, n = os.path.join(root, str(step)), 1
        while os.path.exists(dest):  # the same step damaged twice: keep both
            n += 1
            dest = os.path.join(root, f"{step}-{n}")
        shutil.move(src, dest)
        return dest

    def truncate_metrics(self, iteration: int) -> None:
        """Keep the metric records of iterations <= `iteration` (the restored one): the resumed
        run writes the later ones again. A half-written last line (a run killed mid-write) is
        dropped too. Rewritten by rename, like the marker; by the primary process only, the
        one that writes metrics."""
        if not distributed.is_primary() or not os.path.exists(self.metrics_path):
            return
        kept = [line if line.endswith("\n") else line + "\n"
                for line, record in metric_lines(self.metrics_path)
                if record.get("iteration", 0) <= iteration]
        tmp = f"{self.metrics_path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(kept)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.metrics_path)

    def close(self) -> None:
        self.manager.close()
