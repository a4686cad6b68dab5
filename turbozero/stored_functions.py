"""Jitted functions stored lowered (`jax.export`), so that a warm start neither traces nor lowers.

The persistent compilation cache (`turbozero.compile_cache`) keys on the lowered program, so a
process with a warm cache still traces and lowers every function before the cache can answer:
about 4 of the 13-14 CPU seconds of a warm start of a small preset (docs/benchmarks.md,
"Start-up and compile time"). A `FunctionStore` keeps each function as a
serialized `jax.export.Exported` in `<compile cache>/turbozero-exported/`; the next process with
the same key deserializes it and calls it (`jax.jit(exported.call)`, a small lowering), and the
XLA compile of that call is a persistent-cache hit.

On a miss the function is exported (one trace and lowering, as jit would do), stored, and run
from the export, so that the compile a later process loads is the one this process made.

The key is a hash of everything that may change the lowered program: jax and jaxlib versions,
the versions of the libraries whose code is traced (flax, optax, mctx, chex, numpy), the jax
flags that change tracing, the backend, device kinds and count, the caller's context (the run's
config as JSON), the function's name, the arguments' tree structure, shapes, dtypes, weak types
and shardings, and a hash of the source of every `.py` file of the packages the function may
trace: turbozero's own (turbozero, envs, equity) and the top-level package of every module the
caller names (a user's own env or network). An edited rule therefore makes a new key; it can
never run stale.

Trees (the choice, and why): `Exported.serialize` must write down every custom pytree node of
the arguments and results, and the Trainer's hold auxiliary data that no file can hold (a
network's bound `apply`, an optax optimizer's closures). Flattening to leaves ourselves would
still need the results' tree, which only a trace gives. So each node type is registered for
jax's serialization under `module:qualname`, and its auxiliary data is written as tagged JSON
where it is plain data; otherwise as a reference to an equal object the loading process holds
already (an auxiliary value of the arguments' own tree, or an object the caller names:
`FunctionStore.jit(..., known=...)`); otherwise, for a tuple, element by element; otherwise, for
a frozen dataclass of one of the run's packages (a replay format), field by field. A result
node none of these fits is not storable, and the function is jitted as usual. Nothing is
unpickled: a stored file names only types of modules already imported (checked on load),
and a loaded tree must equal the call's own (`Exported.call` checks it too). A serialized
export keeps no weak types; they are stored beside it and put back, so loaded results are typed
exactly as jit's.

Any failure (a corrupt or truncated file, a version mismatch, a tree or shape that does not
match) gives one warning line and the function is exported again or, where it cannot be,
jitted as usual: never a wrong result. `TURBOZERO_JAX_CACHE=none` turns this off with the
compile cache; `TURBOZERO_STORED_FUNCTIONS=none` turns off only this.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import tempfile
import threading
import warnings
from typing import Any, Callable, Iterable, Optional, Sequence

import jax

ENV_VAR = "TURBOZERO_STORED_FUNCTIONS"
SUBDIR = "turbozero-exported"
FORMAT = 1  # of the files written here; part of the key
OWN_PACKAGES = ("turbozero", "envs", "equity")
# libraries whose code the functions trace: their versions are part of the key
TRACED_LIBRARIES = ("jax", "jaxlib", "flax", "optax", "mctx", "chex", "numpy")
# jax flags that change what a trace produces
TRACE_FLAGS = ("jax_enable_x64", "jax_default_matmul_precision", "jax_default_prng_impl",
               "jax_threefry_partitionable", "jax_numpy_rank_promotion",
               "jax_numpy_dtype_promotion")
_BUILTIN_NODES = (tuple, list, dict, type(None))
# an argument's abstract value (shape, dtype, weak type): jax.typeof since jax 0.6
_typeof = getattr(jax, "typeof", None) or jax.core.get_aval


def enabled() -> bool:
    """False where `TURBOZERO_STORED_FUNCTIONS=none` (or off/0/false) turns stored functions
    off; the compile cache's own switch is checked by the caller (`store_for_cache`)."""
    return os.environ.get(ENV_VAR, "").strip().lower() not in ("none", "off", "0", "false")


def store_for_cache(cache_dir: Optional[str], context: Any,
                    modules: Iterable[str] = ()) -> Optional["FunctionStore"]:
    """The store beside the compile cache at `cache_dir` (None: the cache is off, so is this),
    or None where stored functions cannot serve: turned off, several devices or processes
    (the exported programs carry no shardings here), a context that is not JSON, or a module
    named without a source file (a notebook's classes)."""
    if cache_dir is None or not enabled():
        return None
    from turbozero.search.checks import evaluator_checks_enabled  # light: jax and numpy only

    if evaluator_checks_enabled():  # its host callbacks cannot be exported (search/checks.py)
        return None
    if jax.process_count() != 1 or jax.device_count() != 1:
        return None
    if importlib.util.find_spec("flatbuffers") is None:  # Exported.serialize needs it
        warnings.warn("stored functions off: the flatbuffers package is missing (pip install "
                      "flatbuffers; a dependency of turbozero)", RuntimeWarning, stacklevel=3)
        return None
    try:
        text = json.dumps(context, sort_keys=True)
    except (TypeError, ValueError):
        return None
    store = FunctionStore(os.path.join(cache_dir, SUBDIR), text, modules)
    # code without a source file to hash (a class defined in a notebook) could change unseen
    return None if any(package_hash(p) is None for p in store.packages) else store


# ------------------------------------------------------------------ source and key
_PACKAGE_HASHES: dict[str, str] = {}
_HASH_LOCK = threading.Lock()


def _package_files(top: str) -> list[tuple[str, str]]:
    """(name within the package, path) of every `.py` file of the top-level package `top`,
    or of the single file of a module; [] where it has no file (a notebook's `__main__`)."""
    module = sys.modules.get(top)
    if module is None:
        # the library's own packages count even before anything imported them: a traced
        # function may import one on use
        spec = importlib.util.find_spec(top) if top in OWN_PACKAGES else None
        roots = list(spec.submodule_search_locations or []) if spec else []
    else:
        roots = list(getattr(module, "__path__", None) or [])
    if module is None and not roots:
        return []
    if not roots:  # a single-file module (or a script run as __main__)
        f = getattr(module, "__file__", None)
        return [(os.path.basename(f), f)] if f else []
    files = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            files.extend((os.path.relpath(os.path.join(dirpath, f), root),
                          os.path.join(dirpath, f)) for f in sorted(filenames)
                         if f.endswith(".py"))
    return files


def package_hash(top: str) -> Optional[str]:
    """sha256 over the name and bytes of every `.py` file of the top-level package `top` (all
    of them, imported or not: a module imported lazily inside a traced function counts too);
    None where it has no source file to hash. Computed once per process."""
    with _HASH_LOCK:
        if top not in _PACKAGE_HASHES:
            files = _package_files(top)
            h = hashlib.sha256(top.encode())
            for name, path in files:
                h.update(name.encode())
                with open(path, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
            _PACKAGE_HASHES[top] = h.hexdigest() if files else None
        return _PACKAGE_HASHES[top]


def modules_of(*objects: Any, depth: int = 4) -> set[str]:
    """The modules that define `objects`, their types and, for dataclasses, dicts, sequences,
    partials and bound methods, what they hold (to `depth` levels): where a user's own code
    comes from."""
    out: set[str] = set()
    seen: set[int] = set()

    def visit(obj: Any, d: int) -> None:
        if id(obj) in seen or d < 0:
            return
        seen.add(id(obj))
        for o in (obj, type(obj)):
            mod = getattr(o, "__module__", None)
            if isinstance(mod, str):
                out.add(mod)
        if isinstance(obj, (str, bytes, int, float, bool, type(None))):
            return
        children: list = []
        if isinstance(obj, dict):
            children = list(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            children = list(obj)
        elif hasattr(obj, "__dataclass_fields__") and not isinstance(obj, type):
            children = [getattr(obj, f, None) for f in obj.__dataclass_fields__]
        for attr in ("func", "__func__", "__self__", "__wrapped__"):
            try:
                if not isinstance(obj, type) and hasattr(obj, attr):
                    children.append(getattr(obj, attr))
            except Exception:  # noqa: BLE001 - an object whose attributes raise: not followed
                pass
        for c in children:
            visit(c, d - 1)

    for o in objects:
        visit(o, depth)
    return out


def _versions() -> dict[str, str]:
    out = {}
    for name in TRACED_LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def _describe_tree(treedef: Any) -> Any:
    """A process-independent description of a tree structure: node types by name, auxiliary
    data as JSON where it is plain data, else its type's name (the tree's own `str` holds
    object addresses)."""
    nd = treedef.node_data()
    if nd is None:
        return "*"
    node, aux = nd
    try:
        aux_text = _encode_plain(aux)
    except TypeError:
        aux_text = f"<{_type_name(type(aux))}>"
    return [_type_name(node), aux_text, [_describe_tree(c) for c in treedef.children()]]


def _describe_args(args: Sequence[Any]) -> Any:
    leaves, treedef = jax.tree_util.tree_flatten((tuple(args), {}))
    avals = []
    for x in leaves:
        aval = _typeof(x)
        sharding = getattr(x, "sharding", None)
        avals.append([str(aval.dtype), list(aval.shape), bool(getattr(aval, "weak_type", False)),
                      repr(sharding) if sharding is not None else None,
                      bool(getattr(x, "committed", getattr(x, "_committed", False)))])
    return [_describe_tree(treedef), avals]


def _type_name(t: type) -> str:
    return f"{t.__module__}:{t.__qualname__}"


# ----------------------------------------------------- auxiliary data of custom nodes
def _plain(value: Any) -> Any:
    """Tagged JSON data of a plain value (tuples stay tuples); TypeError otherwise."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and type(value) is int:
        return value
    if isinstance(value, float) and type(value) is float:
        return {"f": repr(value)}
    if isinstance(value, tuple) and type(value) is tuple:
        return {"t": [_plain(v) for v in value]}
    if isinstance(value, list) and type(value) is list:
        return [_plain(v) for v in value]
    if isinstance(value, dict) and type(value) is dict and all(isinstance(k, str) for k in value):
        return {"d": {k: _plain(v) for k, v in value.items()}}
    raise TypeError(f"not plain data: {type(value).__name__}")


def _unplain(data: Any) -> Any:
    if isinstance(data, list):
        return [_unplain(v) for v in data]
    if isinstance(data, dict):
        (tag, v), = data.items()
        if tag == "f":
            return float(v)
        if tag == "t":
            return tuple(_unplain(x) for x in v)
        if tag == "d":
            return {k: _unplain(x) for k, x in v.items()}
        raise ValueError(f"unknown tag {tag!r}")
    return data


def _encode_plain(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True)


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - an == that is not a bool (arrays): not the same
        return False


class _AuxTable(threading.local):
    """For the serialization or deserialization now running in this thread: the values that
    stored auxiliary data may refer to by index (the arguments' own auxiliary values, their
    tuples' elements and the objects the caller names), and the packages whose config
    dataclasses may be written out field by field."""

    values: Optional[list] = None
    packages: tuple = OWN_PACKAGES


_AUX = _AuxTable()
_REGISTERED: set[type] = set()
_REGISTER_LOCK = threading.Lock()


def _aux_values(treedef: Any, known: Sequence[Any] = ()) -> list:
    """The auxiliary values of the custom nodes of `treedef` and the elements of those that
    are tuples, then `known`: distinct, in a fixed order."""
    out: list = []

    def add(value: Any) -> None:
        if value is not None and not any(_same(a, value) for a in out):
            out.append(value)

    def walk(td: Any) -> None:
        nd = td.node_data()
        if nd is None:
            return
        node, aux = nd
        if node not in _BUILTIN_NODES:
            add(aux)
            if type(aux) is tuple:
                for element in aux:
                    add(element)
        for c in td.children():
            walk(c)

    walk(treedef)
    for value in known:
        add(value)
    return out


def _custom_nodes(treedef: Any, out: dict) -> dict:
    nd = treedef.node_data()
    if nd is not None:
        if nd[0] not in _BUILTIN_NODES:
            out[_type_name(nd[0])] = nd[0]
        for c in treedef.children():
            _custom_nodes(c, out)
    return out


def _encode_aux(aux: Any) -> Any:
    """JSON data of an auxiliary value: plain data as it is, else a reference to an equal
    value of the table, else a tuple element by element, else a frozen dataclass of one of the
    store's packages field by field (a replay format); ValueError where none serves."""
    try:
        plain = _plain(aux)
        if _same(_unplain(plain), aux):
            return {"plain": plain}
    except TypeError:
        pass
    for i, value in enumerate(_AUX.values or []):
        if _same(value, aux):
            return {"arg": i}
    if type(aux) is tuple:
        return {"tuple": [_encode_aux(e) for e in aux]}
    cls = type(aux)
    params = getattr(cls, "__dataclass_params__", None)
    if (params is not None and params.frozen and not isinstance(aux, type)
            and cls.__module__.split(".")[0] in _AUX.packages):
        fields = {f.name: _encode_aux(getattr(aux, f.name))
                  for f in dataclasses.fields(aux) if f.init}
        encoded = {"dataclass": _type_name(cls), "fields": fields}
        if _same(_decode_aux(encoded), aux):
            return encoded
    raise ValueError(f"auxiliary data of a {type(aux).__name__} ({cls.__module__}) is neither "
                     "plain data, nor found in the arguments' tree or among the objects the "
                     "caller names (FunctionStore.jit's known), nor a frozen dataclass of the "
                     "run's packages with storable fields")


def _decode_aux(data: Any) -> Any:
    if "plain" in data:
        return _unplain(data["plain"])
    if "arg" in data:
        table = _AUX.values
        if table is None or not 0 <= data["arg"] < len(table):
            raise ValueError("stored tree refers to an argument's auxiliary value that is "
                             "absent")
        return table[data["arg"]]
    if "tuple" in data:
        return tuple(_decode_aux(e) for e in data["tuple"])
    cls = _resolve(data["dataclass"])
    if cls.__module__.split(".")[0] not in _AUX.packages or not (
            dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen):
        raise ValueError(f"stored tree names {data['dataclass']!r}, not a frozen dataclass "
                         "of the run's packages")
    return cls(**{k: _decode_aux(v) for k, v in data["fields"].items()})


def _serialize_aux(aux: Any) -> bytes:
    return json.dumps(_encode_aux(aux), sort_keys=True).encode()


def _deserialize_aux(data: bytes) -> Any:
    return _decode_aux(json.loads(data))


def _register(node: type) -> None:
    with _REGISTER_LOCK:
        if node in _REGISTERED:
            return
        _REGISTERED.add(node)
        try:
            if issubclass(node, tuple) and hasattr(node, "_fields"):
                jax.export.register_namedtuple_serialization(node,
                                                             serialized_name=_type_name(node))
            else:
                jax.export.register_pytree_node_serialization(
                    node, serialized_name=_type_name(node), serialize_auxdata=_serialize_aux,
                    deserialize_auxdata=_deserialize_aux)
        except ValueError:
            pass  # registered already (by its owner): its own serialization serves


def _resolve(name: str) -> type:
    """A node type named in a stored file, from a module already imported (nothing is
    imported on a stored file's word)."""
    module, _, qualname = name.partition(":")
    if module not in sys.modules:
        raise ValueError(f"stored tree names {name!r}, whose module is not imported")
    obj: Any = sys.modules[module]
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ValueError(f"stored tree names {name!r}, which is not a type")
    return obj


# ------------------------------------------------------------------------- the store
class FunctionStore:
    """Stored exported functions in `directory`, keyed as the module docstring says."""

    def __init__(self, directory: str, context: str, modules: Iterable[str] = ()):
        self.directory = directory
        self.context = context
        tops = set(OWN_PACKAGES)
        for m in modules:
            tops.add(m.split(".")[0])
        tops -= {"builtins"} | set(TRACED_LIBRARIES) | set(sys.stdlib_module_names)
        self.packages = sorted(t for t in tops if t in sys.modules or t in OWN_PACKAGES)
        self._base: Optional[str] = None

    def base_key(self) -> str:
        """The part of the key shared by every function of this store."""
        if self._base is None:
            dev = jax.devices()[0]
            parts = {
                "format": FORMAT,
                "versions": _versions(),
                "flags": {f: str(getattr(jax.config, f, None)) for f in TRACE_FLAGS},
                "backend": jax.default_backend(),
                "devices": [jax.device_count(), dev.platform, dev.device_kind],
                "context": self.context,
                "sources": {p: package_hash(p) for p in self.packages},
            }
            self._base = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
        return self._base

    def key(self, name: str, args: Sequence[Any]) -> str:
        text = json.dumps([self.base_key(), name, _describe_args(args)], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:40]

    def path(self, name: str, key: str) -> str:
        return os.path.join(self.directory, f"{name}-{key}")

    def jit(self, fn: Callable, name: str, donate_argnums: tuple = (),
            known: Sequence[Any] = ()) -> "StoredFunction":
        """`jax.jit(fn, donate_argnums=...)`, stored under `name` (one name per function of a
        store: the key tells calls with other arguments or configs apart). `known`: objects
        of this process that the results' tree may hold as auxiliary data though the
        arguments' tree does not (a network's `apply`, an optimizer)."""
        return StoredFunction(self, fn, name, tuple(donate_argnums), tuple(known))


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=4)


class StoredFunction:
    """A jitted function that, on its first call, loads its stored export (a hit), or exports
    and stores itself (a miss), or, where neither works, stays a plain jit. Later calls with
    arguments of the same structure, shapes and dtypes go to the same compiled program; other
    arguments go to the plain jit."""

    def __init__(self, store: FunctionStore, fn: Callable, name: str, donate_argnums: tuple,
                 known: tuple = ()):
        self.store, self.fn, self.name = store, fn, name
        self.donate_argnums, self.known = donate_argnums, known
        self.plain = jax.jit(fn, donate_argnums=donate_argnums)
        self.loaded: Optional[bool] = None  # once resolved: True a hit, False not
        self._call: Optional[Callable] = None
        self._signature: Any = None
        self._out_shapes: Any = None

    def __call__(self, *args: Any) -> Any:
        if self._call is None:
            self._set(self._resolve(args), args)
        elif (jax.tree_util.tree_structure(args), _avals(args)) != self._signature:
            return self.plain(*args)
        return self._call(*args)

    def load_stored(self, *args: Any) -> bool:
        """Load the stored export for these arguments now, if there is one that loads (then
        the first call neither traces nor lowers); whether it did. Nothing is exported."""
        if self._call is None:
            path = self._path(args)
            exported = self._try_load(path, args) if path is not None else None
            if exported is not None:
                self._set(self._wrap(exported), args)
                self._out_shapes = jax.tree_util.tree_unflatten(
                    exported.out_tree,
                    [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in exported.out_avals])
        return bool(self.loaded)

    def output_shapes(self) -> Any:
        """The results' shape structs of the export `load_stored` loaded (what
        `jax.eval_shape` of the function would give, without tracing it); None if none."""
        return self._out_shapes

    def trace(self, *args: Any) -> Any:
        """The plain jit's trace (for inspection: benchmarks lower and time it)."""
        return self.plain.trace(*args)

    def lower(self, *args: Any) -> Any:
        return self.plain.lower(*args)

    def _set(self, call: Callable, args: tuple) -> None:
        self._call = call
        self._signature = jax.tree_util.tree_structure(args), _avals(args)

    def _wrap(self, exported: Any) -> Callable:
        return jax.jit(exported.call, donate_argnums=self.donate_argnums)

    def _path(self, args: tuple) -> Optional[str]:
        try:
            return self.store.path(self.name, self.store.key(self.name, args))
        except Exception as err:  # noqa: BLE001 - a key that cannot be made: plain jit
            _warn(f"stored function {self.name}: no key ({type(err).__name__}: {err}); jitted "
                  "as usual")
            return None

    def _try_load(self, path: str, args: tuple) -> Any:
        """The stored export at `path`, or None (nothing stored, or unusable: warned)."""
        if not (os.path.exists(path + ".exported") or os.path.exists(path + ".json")):
            return None
        try:
            exported = self._load(path, args)
        except Exception as err:  # noqa: BLE001 - any failure: export again, never wrong
            _warn(f"stored function {self.name} at {path}.exported unusable "
                  f"({type(err).__name__}: {err}); traced again")
            return None
        self.loaded = True
        return exported

    def _resolve(self, args: tuple) -> Callable:
        self.loaded = False
        path = self._path(args)
        if path is None:
            return self.plain
        exported = self._try_load(path, args)
        if exported is not None:
            return self._wrap(exported)
        try:
            exported = self._export(path, args)
        except Exception as err:  # noqa: BLE001 - not exportable or not storable: plain jit
            first = str(err).splitlines()[0] if str(err) else ""
            _warn(f"stored function {self.name} not stored ({type(err).__name__}: {first}); "
                  "jitted as usual")
            return self.plain
        return self._wrap(exported)

    def _tables(self, in_tree: Any) -> None:
        _AUX.values = _aux_values(in_tree, self.known)
        _AUX.packages = tuple(self.store.packages)

    def _export(self, path: str, args: tuple) -> Any:
        exported = jax.export.export(self.plain)(*args)
        nodes = _custom_nodes(exported.in_tree, {})
        _custom_nodes(exported.out_tree, nodes)
        for node in nodes.values():
            _register(node)
        self._tables(exported.in_tree)
        try:
            blob = exported.serialize()
        finally:
            _AUX.values = None
        # a serialized export keeps no weak types: stored beside it, so that a loaded
        # function's results are typed as jit's (a weakly typed step count stays weak, and
        # the next function's key and promotions stay those of the process that stored it)
        manifest = {"format": FORMAT, "name": self.name, "nodes": sorted(nodes),
                    "sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob),
                    "in_weak": [bool(a.weak_type) for a in exported.in_avals],
                    "out_weak": [bool(a.weak_type) for a in exported.out_avals]}
        os.makedirs(self.store.directory, exist_ok=True)
        # the export first, then the manifest that vouches for it; each written whole
        # (a temporary file renamed), so a reader sees no half-written file
        _write_atomic(path + ".exported", blob)
        _write_atomic(path + ".json", json.dumps(manifest, sort_keys=True).encode())
        return exported

    def _load(self, path: str, args: tuple) -> Any:
        with open(path + ".json", "rb") as f:
            manifest = json.loads(f.read())
        with open(path + ".exported", "rb") as f:
            blob = f.read()
        if manifest.get("format") != FORMAT or manifest.get("name") != self.name:
            raise ValueError("manifest of another format or function")
        if hashlib.sha256(blob).hexdigest() != manifest.get("sha256"):
            raise ValueError("file does not match its manifest's sha256 (corrupt or truncated)")
        for name in manifest["nodes"]:
            _register(_resolve(name))
        in_tree = jax.tree_util.tree_structure((tuple(args), {}))
        self._tables(in_tree)
        try:
            exported = jax.export.deserialize(bytearray(blob))
        finally:
            _AUX.values = None
        # what `Exported.call` would refuse at trace time, checked here where a refusal can
        # still fall back (a serialized export keeps no weak types; the key holds them)
        if exported.in_tree != in_tree:
            raise ValueError("stored argument tree differs from the call's")
        if [(a.shape, a.dtype) for a in exported.in_avals] != [
                (a.shape, a.dtype) for a in _avals(args)]:
            raise ValueError("stored argument shapes or dtypes differ from the call's")
        if jax.default_backend() not in exported.platforms:
            raise ValueError(f"stored for {exported.platforms}, running on "
                             f"{jax.default_backend()}")
        if exported.nr_devices != 1:
            raise ValueError(f"stored for {exported.nr_devices} devices")
        weak = {"in_avals": manifest["in_weak"], "out_avals": manifest["out_weak"]}
        if any(len(w) != len(getattr(exported, f)) for f, w in weak.items()):
            raise ValueError("manifest's weak types do not match the export")
        return dataclasses.replace(exported, **{
            f: tuple(a.update(weak_type=bool(wt)) for a, wt in zip(getattr(exported, f), w))
            for f, w in weak.items()})


def _avals(args: tuple) -> tuple:
    return tuple(_typeof(x) for x in jax.tree_util.tree_leaves(args))


def _write_atomic(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
