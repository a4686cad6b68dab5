"""Fair timing for the benchmark scripts: warm up, then time only calls of compiled code, and
refuse (raise `UnfairTiming`) when a timed call compiles, traces or runs a JAX op eagerly.

    from benchmarks.tools.timing import time_compiled   # with the repository root on sys.path
    t = time_compiled({"kernel": kernel_fn, "mctx": mctx_fn}, args=(variables, states, key))
    t["kernel"].median, t["kernel"].min     # seconds per call

Why refuse rather than warn: throughput/cpu_search.py once built its start states with an un-jitted
`jax.vmap(env.init)` inside the JAX side's timed region. That eager vmap re-traced and dispatched
op by op on every call (2.8 s of a 3.24 s measurement, issue 34), so the C++ path looked
2.7-3.6x faster than the all-JAX kernel, which it is not when both are timed fairly
(docs/benchmarks.md, "Fair timing"). Nothing in the printed figures showed it.

What a timed call may do: call jitted functions that are already compiled for the arguments
given (from Python, with NumPy or JAX arrays, any number of times; host-side code between them
is fine and is timed), move data between host and device, and block on results. What it may
not do, each detected as follows (measured with jax 0.10.2, see tests/test_timing.py):

- compile or trace: jax reports every jaxpr trace, lowering and XLA compile through
  `jax.monitoring` ('/jax/core/compile/jaxpr_trace_duration', '.../jaxpr_to_mlir_module_duration',
  '.../backend_compile_duration'; '/jax/compilation_cache/...' when the persistent cache is
  asked). A jitted call that hits its cache reports none of them.
- run a transformation eagerly (`jax.vmap(f)(x)`, `jax.grad(f)(x)` outside jit): these build a
  new `Trace` object on every call, even when everything under them is cached. The second and
  later calls of an eager vmap report no compile event at all (its per-primitive executables
  are cached), so this is the check that catches the bench_cpu_search case after warm-up.
- dispatch a primitive eagerly (`jax.random.PRNGKey(i)`, `x + 1` or `x[0]` on a jax Array,
  `lax.*` outside jit): every such bind reaches `EvalTrace.process_primitive`. A cached jitted
  call from Python takes jax's C++ fast path and binds nothing there; when that fast path does
  not apply, the call binds the 'jit' primitive there once, which is still a call of compiled
  code and is allowed, as are the transfers 'device_put' and 'stage' (`jnp.asarray` of a NumPy
  array: what passing that array to a jitted function does anyway).

A jnp function that is itself a jitted function (`jnp.add(a, b)` on two jax Arrays) is, after
its first call, exactly a cached jitted call and is not told apart; anything that converts,
broadcasts or indexes eagerly first is.

Library code a benchmark must time whole but cannot change may do eager ops of its own (the C++
path's `make_state_pool`, the `cpu` search family): `allow_eager_in` names such functions per
timed fn; eager ops inside them are counted (`Timing.allowed_eager_per_call`, for the benchmark
to print) instead of refused. Compiles and eager transformations are never let through.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator, Mapping, Sequence

import jax
from jax import monitoring
from jax._src import core as _jax_core

# monitoring events that only fire when something is traced, lowered or compiled
_COMPILE_EVENT_PREFIXES = ("/jax/core/compile/", "/jax/compilation_cache/")
# primitives bound eagerly that are not an un-jitted computation: 'jit' is a jitted function
# called from Python off jax's C++ fast path (its executable is cached, or a compile event
# fires too); 'device_put' and 'stage' (what `jnp.asarray(numpy_array)` binds: an identity that
# lifts a host value) move host data to the device
ALLOWED_EAGER_PRIMITIVES = frozenset({"jit", "device_put", "stage"})
# frames of these packages are left out of the "where" of a report
_INTERNAL = ("/jax/", "/jaxlib/", "/flax/", "/contextlib.py", "/timing.py", "/threading.py")


class UnfairTiming(RuntimeError):
    """A timed call compiled, traced or ran a JAX op eagerly, so its time is not the compiled
    code's: move that work out of the timed call (jit it, or do it once before timing)."""


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds per call of one timed function."""

    median: float
    min: float
    times: tuple[float, ...]
    # eager primitive binds per timed call that `allow_eager_in` let through (0: none)
    allowed_eager_per_call: float = 0.0


@dataclasses.dataclass
class _Record:
    """What one watched region saw; `where` keeps the first caller outside jax for each kind;
    `allow`: (file suffix, function name) pairs inside which eager ops are counted in
    `allowed` instead of refused."""

    allow: tuple = ()
    compiles: list = dataclasses.field(default_factory=list)
    traces: list = dataclasses.field(default_factory=list)
    eager: list = dataclasses.field(default_factory=list)
    allowed: list = dataclasses.field(default_factory=list)
    where: dict = dataclasses.field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.compiles or self.traces or self.eager)

    def note(self, kind: str, what: str) -> None:
        getattr(self, kind).append(what)
        if kind not in self.where:  # one stack walk per kind: the hooks stay cheap
            self.where[kind] = _user_frame()

    def describe(self) -> str:
        lines = []
        if self.compiles:
            lines.append(f"compiled or traced: {_counts(self.compiles)}"
                         f"{self.where.get('compiles', '')}")
        if self.traces:  # a compile builds traces too; alone they mean an eager transformation
            lines.append("built JAX traces (an un-jitted vmap/grad/..., or tracing for a "
                         f"compile): new {_counts(self.traces)}{self.where.get('traces', '')}")
        if self.eager:
            lines.append(f"ran JAX ops eagerly (not under jit): {_counts(self.eager)}"
                         f"{self.where.get('eager', '')}")
        return "; ".join(lines)


def _inside(allow: tuple) -> bool:
    """Whether a frame of one of the `allow` functions is on the current thread's stack (frame
    objects only: no source lines read, so this is cheap enough to run per primitive)."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        for suffix, name in allow:
            if code.co_name == name and code.co_filename.endswith(suffix):
                return True
        frame = frame.f_back
    return False


def _parse_allowance(entry: str) -> tuple[str, str]:
    suffix, sep, name = entry.rpartition(":")
    if not sep or not suffix.endswith(".py") or not name.isidentifier():
        raise ValueError(f"allow_eager_in entries are 'path/to/file.py:function', got {entry!r}")
    return suffix, name


def _counts(items: list) -> str:
    counts: dict = {}
    for x in items:
        counts[x] = counts.get(x, 0) + 1
    return ", ".join(f"{k} x{n}" for k, n in counts.items())


def _user_frame() -> str:
    """Where the offending work was asked for: the innermost frame outside jax and, when it is
    deeper, the frame of the timed function itself (the one `time_compiled` called), which is
    where the fix usually goes (the innermost is often library code, say inside `env.init`)."""
    stack = traceback.extract_stack()[:-3]
    starts = [i for i, f in enumerate(stack)
              if f.filename.endswith("timing.py") and f.name == "time_compiled"]
    user = [f for f in stack[starts[-1] + 1 if starts else 0:]
            if not any(part in f.filename for part in _INTERNAL)]
    if not user:
        return ""
    inner = f"{user[-1].filename}:{user[-1].lineno}, in {user[-1].name}"
    if len(user) > 1 and starts:
        return (f" (first at {inner}; called from the timed function at "
                f"{user[0].filename}:{user[0].lineno}, in {user[0].name})")
    return f" (first at {inner})"


class _Hooks:
    """jax's monitoring listeners plus two wrapped methods (`Trace.__init__`,
    `EvalTrace.process_primitive`), installed while at least one region is watched and
    removed after, so that code outside a timed region runs untouched."""

    def __init__(self):
        self.lock = threading.Lock()
        self.active: list[_Record] = []
        self.saved: tuple | None = None

    def _note(self, kind: str, what: str) -> None:
        for rec in list(self.active):
            rec.note(kind, what)

    def _note_eager(self, what: str) -> None:
        for rec in list(self.active):
            if rec.allow and _inside(rec.allow):
                rec.allowed.append(what)
            else:
                rec.note("eager", what)

    def _on_duration(self, event: str, duration: float, **kwargs) -> None:
        if event.startswith(_COMPILE_EVENT_PREFIXES):
            fun = kwargs.get("fun_name")
            self._note("compiles", f"{event.rsplit('/', 1)[-1]}" + (f" of {fun}" if fun else ""))

    def _on_event(self, event: str, **kwargs) -> None:
        if event.startswith(_COMPILE_EVENT_PREFIXES):
            self._note("compiles", event.rsplit("/", 1)[-1])

    def install(self) -> None:
        trace_init = _jax_core.Trace.__init__
        process_primitive = _jax_core.EvalTrace.process_primitive
        hooks = self

        def watched_trace_init(trace, *args, **kwargs):
            hooks._note("traces", type(trace).__name__)
            trace_init(trace, *args, **kwargs)

        def watched_process_primitive(trace, primitive, args, params, /):
            if primitive.name not in ALLOWED_EAGER_PRIMITIVES:
                hooks._note_eager(primitive.name)
            return process_primitive(trace, primitive, args, params)

        _jax_core.Trace.__init__ = watched_trace_init
        _jax_core.EvalTrace.process_primitive = watched_process_primitive
        monitoring.register_event_duration_secs_listener(self._on_duration)
        monitoring.register_event_listener(self._on_event)
        self.saved = (trace_init, process_primitive)

    def uninstall(self) -> None:
        trace_init, process_primitive = self.saved
        _jax_core.Trace.__init__ = trace_init
        _jax_core.EvalTrace.process_primitive = process_primitive
        monitoring.unregister_event_duration_listener(self._on_duration)
        monitoring.unregister_event_listener(self._on_event)
        self.saved = None


_HOOKS = _Hooks()


@contextlib.contextmanager
def forbid_compiles_and_eager_ops(label: str = "timed call",
                                  allow_eager_in: Sequence[str] = ()) -> Iterator[_Record]:
    """Raise `UnfairTiming` at the end of the block if anything in it (any thread) compiled,
    traced, ran a JAX transformation eagerly or dispatched a JAX primitive outside jit.

    `allow_eager_in`: 'path/to/file.py:function' entries (the path a suffix of the file's); a
    primitive dispatched eagerly while such a function is on the stack is counted in the
    yielded record's `allowed` list instead of refused. For library code a benchmark cannot
    change and must time whole; compiles and eager transformations are never allowed."""
    rec = _Record(allow=tuple(_parse_allowance(e) for e in allow_eager_in))
    with _HOOKS.lock:
        if not _HOOKS.active:
            _HOOKS.install()
        _HOOKS.active.append(rec)
    try:
        yield rec
    finally:
        with _HOOKS.lock:
            _HOOKS.active.remove(rec)
            if not _HOOKS.active:
                _HOOKS.uninstall()
    # only when the block itself succeeded: its own exception says more than ours
    if not rec.empty():
        raise UnfairTiming(
            f"{label}: {rec.describe()}. The timed region must only call compiled code: jit "
            "that work or do it before timing.")


def time_compiled(fns: Mapping[str, Callable[..., Any]],
                  args: Sequence[Any] | Callable[[int], Sequence[Any]] = (),
                  repeats: int = 5, warmup: int = 1,
                  allow_eager_in: Mapping[str, Sequence[str]] | None = None
                  ) -> dict[str, Timing]:
    """Seconds per call of each fn, called with the same args, after `warmup` untimed calls each.

    The timed calls interleave: each repetition calls every fn once, in order, then in reverse
    order the next repetition, so load from other processes on a shared machine falls on all
    of them alike and no fn always runs right after the same other one. Each call is blocked
    until its results are ready (`jax.block_until_ready`) before its clock stops. Every timed
    call is watched (`forbid_compiles_and_eager_ops`); one that compiles, traces or runs a JAX
    op eagerly raises `UnfairTiming` naming the fn and what it did.

    `args`: a tuple for every call, or `args(r) -> tuple` for repetition r (warm-up calls get
    r = -1, -2, ...), built before the clock starts and outside the watch, so its own eager
    ops (say, `jax.random.fold_in`) are neither timed nor refused.
    `allow_eager_in`: {name: ['path/to/file.py:function', ...]}, eager ops inside those
    functions let through for that fn (`forbid_compiles_and_eager_ops`) and counted in its
    `Timing.allowed_eager_per_call`, which a benchmark should print.
    Returns {name: Timing(median, min, times, allowed_eager_per_call)}.
    """
    allow_eager_in = dict(allow_eager_in or {})
    unknown = set(allow_eager_in) - set(fns)
    if unknown:
        raise ValueError(f"allow_eager_in names no timed function: {sorted(unknown)}")
    if repeats < 1 or warmup < 1:
        raise ValueError("time_compiled needs repeats >= 1 and warmup >= 1 (the warm-up call "
                         "compiles what the timed calls run)")
    args_of = args if callable(args) else (lambda r, a=tuple(args): a)
    for w in range(warmup):
        for name, fn in fns.items():
            jax.block_until_ready(fn(*args_of(-1 - w)))
    times: dict[str, list[float]] = {name: [] for name in fns}
    allowed = {name: 0 for name in fns}
    for r in range(repeats):
        order = list(fns) if r % 2 == 0 else list(fns)[::-1]
        for name in order:
            call_args = args_of(r)
            jax.block_until_ready(call_args)
            with forbid_compiles_and_eager_ops(f"timed call {r + 1} of {name!r}",
                                               allow_eager_in.get(name, ())) as rec:
                t0 = time.perf_counter()
                jax.block_until_ready(fns[name](*call_args))
                times[name].append(time.perf_counter() - t0)
            allowed[name] += len(rec.allowed)
    return {name: Timing(statistics.median(t), min(t), tuple(t), allowed[name] / repeats)
            for name, t in times.items()}


def with_cpu_time(fn: Callable[..., Any], record: list) -> Callable[..., Any]:
    """`fn` that also appends the process CPU seconds of each call (waited for) to `record`:
    on a machine shared with other jobs the wall time of a call moves with their load, its CPU
    time much less."""

    def timed(*args: Any) -> Any:
        c0 = time.process_time()
        out = jax.block_until_ready(fn(*args))
        record.append(time.process_time() - c0)
        return out

    return timed
