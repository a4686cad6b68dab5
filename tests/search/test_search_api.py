"""The one search contract (`turbozero.search.api`): every family answers `search(...)` with a
`SearchResult`, dispatch goes through the registry, bad configs and options are refused with
the family named, a run that stored the old `SearchConfig` name still loads, and `search/` and
`training/` import no module in a circle."""

from __future__ import annotations

import ast
import dataclasses
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.search import (
    MCGSConfig,
    MctxConfig,
    NetworkEvaluator,
    OnePlyConfig,
    PUCTRoot,
    SearchResult,
    TreeSearchConfig,
    available_families,
    family_of,
    random_actions,
    register_family,
    search,
)
from turbozero.training.run_config import config_from_json, config_to_json

ROOT = pathlib.Path(__file__).resolve().parents[2]
TTT = envs.make("pgx/tic_tac_toe")


def _ttt_apply(variables, obs):
    """A fixed network: logits from the board, value 0.1 for the mover."""
    del variables
    flat = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
    logits = jnp.sin(flat[:, :9] * 3.0 + jnp.arange(9.0))
    return logits, jnp.full((obs.shape[0],), 0.1)


EVAL = NetworkEvaluator(_ttt_apply)


@pytest.fixture(scope="module")
def ttt_states():
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    states = jax.vmap(TTT.init)(keys)
    return jax.vmap(TTT.step)(states, random_actions(states, jax.random.PRNGKey(1)))


@pytest.mark.parametrize("config", [
    TreeSearchConfig(num_simulations=8, root=PUCTRoot(dirichlet_fraction=0.0)),
    MctxConfig(num_simulations=8, dirichlet_fraction=0.0),
    OnePlyConfig(),
], ids=["tree", "mctx", "one-ply"])
def test_turn_based_families_answer_with_one_result_type(ttt_states, config):
    out = jax.jit(lambda s, k: search(TTT, EVAL, None, s, k, config))(
        ttt_states, jax.random.PRNGKey(2))
    assert type(out) is SearchResult
    b = ttt_states.step_count.shape[0]
    assert out.action.shape == (b,) and out.policy.shape == (b, TTT.num_actions)
    assert out.root_value.shape == (b,) and out.root_values.shape == (b, 2)
    legal = np.asarray(ttt_states.legal_action_mask)
    assert legal[np.arange(b), np.asarray(out.action)].all()
    np.testing.assert_allclose(np.asarray(out.policy).sum(-1), 1.0, rtol=1e-5)
    assert not np.asarray(out.policy)[~legal].any()
    # root_values are per seat: the mover's is root_value, the other's its negation
    mover = np.asarray(ttt_states.current_player)
    values = np.asarray(out.root_values)
    np.testing.assert_allclose(values[np.arange(b), mover], np.asarray(out.root_value), rtol=1e-6)
    np.testing.assert_allclose(values.sum(-1), 0.0, atol=1e-6)
    for v in out.stats.values():
        assert np.asarray(v).shape[0] == b


def test_the_graph_family_answers_for_a_simultaneous_game():
    env = envs.make("pyrat")
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), 2))

    def apply(variables, obs):  # a two-player network: logits [B, 2, A], values [B, 2]
        del variables
        b = obs.shape[0]
        return jnp.zeros((b, 2, env.num_actions)), jnp.zeros((b, 2))

    out = search(env, NetworkEvaluator(apply), None, states, jax.random.PRNGKey(1),
                 MCGSConfig(num_simulations=6))
    assert type(out) is SearchResult
    assert out.action.shape == (2, 2) and out.policy.shape == (2, 2, env.num_actions)
    assert out.root_values.shape == (2, 2) and out.root_value.shape == (2,)
    assert np.asarray(out.stats["nodes_used"]).shape == (2,)


def test_every_library_family_is_registered_by_name():
    assert {"tree", "mctx", "graph", "one-ply", "afterstate"} <= set(available_families())
    assert family_of(TreeSearchConfig()).name == "tree"
    assert family_of(MctxConfig()).name == "mctx"
    assert family_of(MCGSConfig()).name == "graph"
    assert family_of(OnePlyConfig()).name == "one-ply"


def test_what_is_not_a_search_config_is_refused_naming_the_families(ttt_states):
    with pytest.raises(ValueError, match="not a search config.*families: .*mctx.*tree"):
        search(TTT, EVAL, None, ttt_states, jax.random.PRNGKey(0), {"num_simulations": 8})
    with pytest.raises(ValueError, match="risk term.*'mctx'"):
        search(TTT, EVAL, None, ttt_states, jax.random.PRNGKey(0), MctxConfig(),
               risk_beta=jnp.zeros((3, 2)))
    with pytest.raises(ValueError, match="risk term.*'one-ply'"):
        search(TTT, EVAL, None, ttt_states, jax.random.PRNGKey(0), OnePlyConfig(),
               risk_beta=jnp.zeros((3, 2)))


def test_mctx_refuses_more_than_two_players():
    env = envs.make("gomoku", size=5, win_length=3, num_players=3, view=5)
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    # an evaluator of gomoku's width (EVAL's 9 logits are refused first, issue 45 item 6)
    evaluator = NetworkEvaluator(lambda v, obs: (jnp.zeros((obs.shape[0], env.num_actions)),
                                                 jnp.zeros(obs.shape[0])))
    with pytest.raises(ValueError, match="3 players.*TreeSearchConfig"):
        search(env, evaluator, None, states, jax.random.PRNGKey(0), MctxConfig())


def test_a_family_registers_with_a_config_naming_it():
    @dataclasses.dataclass(frozen=True)
    class Unnamed:
        num_simulations: int = 1

    with pytest.raises(ValueError, match="Unnamed.family must be 'mine'"):
        register_family("mine", Unnamed, lambda *a: None)
    with pytest.raises(ValueError, match="dataclass type"):
        register_family("mine", int, lambda *a: None)

    @dataclasses.dataclass(frozen=True)
    class FirstLegal:
        family = "test-first-legal"

    def run(env, evaluator, variables, states, key, config, risk_beta=None):
        action = jnp.argmax(states.legal_action_mask, -1).astype(jnp.int32)
        zero = jnp.zeros(action.shape)
        return SearchResult(action=action, policy=jax.nn.one_hot(action, env.num_actions),
                            root_value=zero, root_values=jnp.stack([zero, zero], -1))

    register_family("test-first-legal", FirstLegal, run)
    states = jax.vmap(TTT.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    out = search(TTT, EVAL, None, states, jax.random.PRNGKey(0), FirstLegal())
    assert list(np.asarray(out.action)) == [0, 0]
    assert "test-first-legal" in available_families()


def test_a_run_that_stored_the_old_mctx_config_name_still_loads():
    # a run written before the rename (issue 33) stores the old class name; no Python alias
    # keeps it (training/migration.py reads it as MctxConfig)
    import turbozero.search as search_package

    assert not hasattr(search_package, "SearchConfig")
    from turbozero.presets import get_preset

    data = config_to_json(get_preset("pgx/tic_tac_toe", "tiny"))
    data["search"] = {"__dataclass__": "turbozero.search.mctx_policies:SearchConfig",
                      "num_simulations": 7}
    loaded = config_from_json(data)
    assert isinstance(loaded.algorithm.search, MctxConfig) and loaded.algorithm.search.num_simulations == 7


def _lazy_exports(path: pathlib.Path) -> dict:
    """A package `__init__`'s `_LAZY_EXPORTS` (name -> module that defines it; the names it
    loads on first use), or {}."""
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "_LAZY_EXPORTS"):
            return ast.literal_eval(node.value)
    return {}


def _imports(path: pathlib.Path, modules: dict, lazy: dict = {}) -> set:
    """The library modules `path` imports, at module level or inside functions: a name a
    package loads lazily counts as its module (`lazy`: package -> `_LAZY_EXPORTS`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules
                          else lazy.get(node.module, {}).get(alias.name, node.module))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & set(modules)


def _packages_above(module: str, modules: dict) -> set:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))} & set(modules)


@pytest.mark.parametrize("packages", [("turbozero/search",), ("turbozero/training",),
                                      ("turbozero", "envs", "equity")])
def test_no_import_circle(packages):
    """Modules of the library never import each other in a circle, not even from inside a
    function (kernel, mctx_policies and one_ply once did, through function-level imports;
    presets -> training.loop -> run_config -> presets and equity.met <-> equity.value too).
    A package's `__init__` counts as the package: each game's public module is one
    (`envs.chess`), and a rules module importing it back would be a circle. Importing a module
    runs the `__init__`s of the packages above it first, so that counts as importing them
    (an eager `turbozero/training/__init__.py` once made `turbozero.games` and
    `turbozero.training` import each other that way); a name a package loads lazily counts as
    an import of the module that defines it."""
    modules = {}
    for path in (p for package in packages for p in (ROOT / package).rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    if "envs" in packages:
        assert "envs.chess" in modules  # the games' public modules are in the graph
    lazy = {m: _lazy_exports(p) for m, p in modules.items() if p.name == "__init__.py"}
    graph = {}
    for m, p in modules.items():
        deps = _imports(p, modules, lazy) - {m}
        # the packages above an import run first, but not those above `m`: they are running
        graph[m] = deps.union(*(_packages_above(d, modules) for d in deps)) - (
            _packages_above(m, modules) | {m})
    state: dict = {}

    def visit(m, stack):
        state[m] = "open"
        for dep in sorted(graph[m]):
            if state.get(dep) == "open":
                cycle = stack[stack.index(dep):] + [dep]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep, stack + [dep])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def _function_imports_without_reason(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """`path:line: module` of each import inside a function that gives no reason: a comment
    on its line, or directly above it or above the run of imports it belongs to."""
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    # `try: import x` / `except ImportError:` says its reason itself (x is optional)
    optional = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
                and any("ImportError" in ast.unparse(h.type or ast.Name("")) for h in t.handlers)
                for n in ast.walk(t) if isinstance(n, (ast.Import, ast.ImportFrom))}
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in optional:
                continue
            row = node.lineno - 1
            reason = any("#" in lines[r] for r in range(row, node.end_lineno))
            while not reason and row > 0:
                above = lines[row - 1].strip()
                if above.startswith("#"):
                    reason = True
                elif not above.startswith(("import ", "from ")):
                    break
                row -= 1
            if not reason:
                module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                found.append(f"{path.relative_to(root)}:{node.lineno}: {module}")
    return found


def test_imports_inside_functions_give_their_reason():
    """An import inside a function is for an optional dependency, an expensive import kept off
    a cheap path, or an import-order constraint of package `__init__`s; each says which, in a
    comment on its line or above it (issue 35, item 3; docs/architecture.md, "Imports"). Circles are not a reason:
    `test_no_import_circle` counts these imports too."""
    found = [m for package in ("turbozero", "envs", "equity")
             for p in sorted((ROOT / package).rglob("*.py"))
             for m in _function_imports_without_reason(p)]
    assert not found, "imports inside functions without a reason:\n" + "\n".join(found)


def test_the_import_reason_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    import os\n    return os\n\n\ndef g():\n"
                   "    # gnubg is optional (the backgammon extra)\n    import gnubg\n"
                   "    import gnubg.x\n    return gnubg\n\n\ndef h():\n    try:\n"
                   "        import tensorboardX\n    except ImportError:\n        return None\n",
                   encoding="utf-8")
    assert _function_imports_without_reason(bad, tmp_path) == ["bad.py:2: os"]
