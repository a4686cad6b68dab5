"""Games are plug-ins (issue 35, item 1): the generic packages (`turbozero.search`,
`turbozero.training`, `turbozero.networks`) name no game in their code: no import of a game's
module and no string naming a game (docstrings and comments aside: they may give examples).
What a game brings to training lives in `turbozero/games/` (its GameSpec, opponents, referees,
records, adjudication) and its rules in its package `envs/<game>/`."""

import ast
import pathlib

import pytest

import envs

ROOT = pathlib.Path(__file__).resolve().parents[2]
GENERIC = ("turbozero/search", "turbozero/training", "turbozero/networks")
# the registered games, and the outside programs that belong to one game each
NAMES = sorted({name.split("/")[-1] for name in envs.available_envs()} - {"tic_tac_toe"}
               | {"gnubg", "stockfish", "python-chess"})


def _docstrings(tree: ast.AST) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _mentions(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
        elif isinstance(node, ast.ImportFrom):
            text = node.module or ""
        elif isinstance(node, ast.Import):
            text = " ".join(a.name for a in node.names)
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        if text is None:
            continue
        low = text.lower()
        for name in NAMES:
            if name in low:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {name} in {text[:60]!r}")
    return found


def test_the_game_list_is_the_registry():
    assert {"backgammon", "chess", "gomoku", "pacosako", "pyrat", "gnubg"} <= set(NAMES)


@pytest.mark.parametrize("package", GENERIC)
def test_generic_packages_name_no_game(package):
    found = [m for p in sorted((ROOT / package).rglob("*.py")) for m in _mentions(p)]
    assert not found, "\n".join(found)


def test_the_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('"""Docstrings may say chess."""\nfrom envs.chess import Chess\n'
                   'if env.id == "backgammon":\n    pass\n', encoding="utf-8")
    found = _mentions(bad, tmp_path)
    assert [f.split(":")[1] for f in found] == ["2", "3"], found


def test_each_game_is_one_package_on_the_training_side():
    """Every game with presets has its package `turbozero/games/<game>/`: the `GameSpec` that
    `turbozero.games.GAMES` holds comes from there, and so do its presets; the shared files
    (`turbozero/games/__init__.py`, `spec.py`, `turbozero/presets.py`) hold no game's settings
    (no GameSpec built and no preset written there)."""
    import importlib

    from turbozero.games import GAMES, PRESETS, presets_of

    for game, name in PRESETS.items():
        module = importlib.import_module(name)
        package = name.rsplit(".", 1)[0]
        assert name == f"{package}.presets"
        own = importlib.import_module(package)
        specs = getattr(own, "SPECS", None) or (own.SPEC,)
        assert GAMES[game] in specs, game
        assert presets_of(game) is module.PRESETS
    for shared in ("turbozero/games/__init__.py", "turbozero/games/spec.py",
                   "turbozero/presets.py"):
        tree = ast.parse((ROOT / shared).read_text(encoding="utf-8"))
        specs = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == "GameSpec"]
        settings = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.keyword)
                    and n.arg == "num_envs"]
        assert not specs and not settings, (
            f"{shared} builds a GameSpec (lines {specs}) or a preset (lines {settings}): a "
            "game's settings belong in its package")


def test_each_game_is_one_package_on_the_env_side():
    """Every registered game is the package `envs/<game>/`: its public module is the package
    (`envs.<game>`, the env class), and its rules, encodings, notation and rendering sit beside
    it. The shared env modules (`envs/*.py` but the registry) name no game; the pgx adapter
    names pgx's own game ids (its stochastic games, pgx's backgammon among them, are refused)."""
    from envs import _REGISTRY

    for game, target in _REGISTRY.items():
        module = target.split(":")[0]
        assert module == f"envs.{game}", (game, target)
        assert (ROOT / "envs" / game / "__init__.py").is_file(), game
    assert not (ROOT / "envs" / "_src").exists()
    shared = [p for p in sorted((ROOT / "envs").glob("*.py"))
              if p.name not in ("__init__.py", "pgx_adapter.py")]
    found = [m for p in shared for m in _mentions(p)]
    assert not found, "\n".join(found)
