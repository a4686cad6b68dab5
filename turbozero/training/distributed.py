"""Several processes, one training run: `jax.distributed` set-up and the few host-side steps
that must know about the other processes.

The Trainer's jitted steps need nothing of this: they run on a `Mesh` of every device of every
process (`jax.devices()` is global once `jax.distributed.initialize` has run), every process runs
the same program, and XLA's collectives (gloo on CPU, NCCL on GPU) join the shards. What does
need care is the host: reading a value back (a process holds only its own shards), and the run
directory (one marker, one metrics file, one checkpoint per step, however many processes).
docs/training.md, "Several processes and machines", shows how to launch a run.

Settings come from the arguments, else from the environment variables JAX itself reads
(`JAX_COORDINATOR_ADDRESS`) or that a launcher script sets (`JAX_NUM_PROCESSES`,
`JAX_PROCESS_ID`); when none is given at all, JAX detects the cluster itself (Slurm, Open MPI,
Kubernetes, Cloud TPU).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

COORDINATOR_ENV = "JAX_COORDINATOR_ADDRESS"
NUM_PROCESSES_ENV = "JAX_NUM_PROCESSES"
PROCESS_ID_ENV = "JAX_PROCESS_ID"
# the CPU backend's cross-process collectives; without one, a CPU computation spanning
# processes fails to compile ("collectives not supported"). "gloo" ships with jaxlib.
CPU_COLLECTIVES = ("gloo", "mpi")
PRIMARY = 0  # the process that writes the run directory's own files


@dataclasses.dataclass(frozen=True)
class ProcessGroup:
    """Where this process stands in a run of several: all None means "let JAX detect the
    cluster" (Slurm, Open MPI, ...)."""

    coordinator_address: Optional[str] = None  # "host:port" of process 0's coordinator service
    num_processes: Optional[int] = None
    process_id: Optional[int] = None

    def __post_init__(self) -> None:
        given = [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]
        if given and len(given) != 3:
            missing = sorted({"coordinator_address", "num_processes", "process_id"} - set(given))
            raise ValueError(f"give all of coordinator_address, num_processes and process_id, "
                             f"or none (JAX then detects the cluster); missing {missing}")
        if not given:
            return
        host, sep, port = self.coordinator_address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"coordinator_address must be host:port, got "
                             f"{self.coordinator_address!r}")
        if isinstance(self.num_processes, bool) or not isinstance(self.num_processes, int) \
                or self.num_processes < 1:
            raise ValueError(f"num_processes must be an int >= 1, got {self.num_processes!r}")
        if isinstance(self.process_id, bool) or not isinstance(self.process_id, int) \
                or not 0 <= self.process_id < self.num_processes:
            raise ValueError("process_id must be an int in "
                             f"[0, num_processes={self.num_processes}), got {self.process_id!r}")

    @property
    def detect(self) -> bool:
        return self.coordinator_address is None


def _env_int(environ: Mapping[str, str], name: str) -> Optional[int]:
    text = environ.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {text!r}") from None


def process_group(coordinator_address: Optional[str] = None,
                  num_processes: Optional[int] = None,
                  process_id: Optional[int] = None,
                  environ: Optional[Mapping[str, str]] = None) -> ProcessGroup:
    """The settings to start with: each argument, else its environment variable."""
    environ = os.environ if environ is None else environ
    return ProcessGroup(
        coordinator_address if coordinator_address is not None
        else (environ.get(COORDINATOR_ENV) or None),
        num_processes if num_processes is not None else _env_int(environ, NUM_PROCESSES_ENV),
        process_id if process_id is not None else _env_int(environ, PROCESS_ID_ENV),
    )


def initialize(coordinator_address: Optional[str] = None,
               num_processes: Optional[int] = None,
               process_id: Optional[int] = None,
               *,
               cpu_collectives: Optional[str] = "gloo",
               timeout_s: int = 300) -> ProcessGroup:
    """Join this process to the run: `jax.distributed.initialize` with checked settings.

    Call it first, before anything touches a device (JAX refuses later). Every process of the
    run calls it with the same coordinator address and process count and its own id. On CPU,
    `cpu_collectives` picks the cross-process collectives ("gloo"; None leaves JAX's setting);
    it has no effect on GPU or TPU. `timeout_s` bounds the wait for the other processes.
    """
    if cpu_collectives is not None and cpu_collectives not in CPU_COLLECTIVES:
        raise ValueError(f"cpu_collectives must be one of {CPU_COLLECTIVES} or None, got "
                         f"{cpu_collectives!r}")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int) or timeout_s < 1:
        raise ValueError(f"timeout_s must be an int >= 1, got {timeout_s!r}")
    group = process_group(coordinator_address, num_processes, process_id)
    if cpu_collectives is not None:
        jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    jax.distributed.initialize(group.coordinator_address, group.num_processes, group.process_id,
                               initialization_timeout=timeout_s)
    # gloo sets up its context for a set of devices at the first collective over them and gives
    # the other processes 30 s to arrive (not configurable in jax 0.10); on a loaded machine one
    # process reached the first collective of `Trainer` more than 30 s after the other and the
    # run failed ("Gloo context initialization failed: ... GetKeyValue() timed out"). Here,
    # just after every process has joined, they arrive together; later collectives over the
    # same devices reuse the context (XLA keeps one per device set, as we read it), and the
    # 8 two-process runs here since have not failed this way (a few runs: not a proof).
    barrier("turbozero: every process joined")
    return group


def shutdown() -> None:
    """Leave the run. JAX also does this at exit, but a process that exits while another is
    still finishing its last step can trip the coordinator's shutdown barrier; calling it at the
    end of the script, where every process arrives after the same last collective, is cleaner."""
    jax.distributed.shutdown()


def is_primary() -> bool:
    """Whether this process writes the run directory's own files (marker, metrics)."""
    return jax.process_index() == PRIMARY


def barrier(name: str) -> None:
    """Wait until every process has reached the barrier `name` (nothing with one process).
    Every process must pass the same barriers in the same order."""
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(name)


def place(x: Any, sharding: jax.sharding.Sharding) -> jax.Array:
    """`x`, a value equal on every process, onto `sharding`, each process keeping its shards.

    With one process this is `jax.device_put`. With several, `device_put` first checks that `x`
    is equal on every process by gathering all of it from all of them (an all-gather of the
    whole replay at start); the Trainer's values are equal by construction (same seed, same
    program), so each process takes its own slices instead. An array that is already spread
    over several processes (restored by orbax) is moved by `device_put` as usual."""
    if jax.process_count() == 1 or (isinstance(x, jax.Array) and not x.is_fully_addressable):
        return jax.device_put(x, sharding)
    host = np.asarray(jnp.asarray(x))  # a Python scalar as JAX would type it (int32, not int64)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def to_host(tree: Any) -> Any:
    """A pytree of arrays as numpy arrays on every process.

    A replicated array (every scalar an XLA step returns, the parameters) is read from this
    process's own copy; an array split over the devices of several processes is gathered."""
    def one(x):
        if isinstance(x, jax.Array) and not (x.is_fully_addressable or x.is_fully_replicated):
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(x)

    return jax.tree_util.tree_map(one, tree)


def agree_min(value: int) -> int:
    """The smallest of one int per process (the value itself with one process)."""
    if jax.process_count() == 1:
        return int(value)
    gathered = multihost_utils.process_allgather(np.asarray(value, np.int32))
    return int(np.min(gathered))
