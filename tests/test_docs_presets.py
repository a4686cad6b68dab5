"""Every preset value a doc quotes equals the preset's (issue 45, item 7).

The docs quote presets in prose ("`small` (64 games x 32 moves, 60 iterations, ...)"), in
`field=value` mentions ("`small` ... (`max_self_play_steps=40`)"), as parts with their keywords
("`SpecPUCT(c_puct=1.5, fpu_base=1.0)`": the preset's first part of that class has those
values) and in tables whose columns are presets (docs/chess.md "Training settings"). This test reads all three from docs/*.md and the
README, ties each quoted value to the preset named nearest before it in the same sentence (or
table column), and compares it with `turbozero.presets.get_preset` of that game and preset.

A sentence may quote a value a preset no longer has only when it says so: it names the past
("then", "former", "earlier", "no longer", "was", ...). Everything else that differs fails,
naming the file, the quoted text and the preset's value. The scan itself is checked: it must find
a floor of claims (so a parser that silently matches nothing cannot pass), and a doctored
sentence must fail it.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
import sys
from typing import Any, Callable, Iterator, NamedTuple

import pytest

from turbozero.games import PRESETS, presets_of
from turbozero.presets import get_preset
from turbozero.training.algorithms import evaluation_search

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

GAMES = {g: tuple(presets_of(g) or ()) for g in PRESETS}
# how the docs name a game in a sentence (lower-cased); a game's own page names it implicitly
GAME_WORDS = {"chess": "chess", "backgammon": "backgammon", "pyrat": "pyrat", "gomoku": "gomoku",
              "paco ŝako": "pacosako", "pacosako": "pacosako", "tic-tac-toe": "pgx/tic_tac_toe",
              "pgx/tic_tac_toe": "pgx/tic_tac_toe"}
PAGE_GAME = {"chess.md": "chess", "backgammon.md": "backgammon", "pyrat.md": "pyrat",
             "gomoku.md": "gomoku", "pacosako.md": "pacosako"}
_NAMES = sorted({p for ps in GAMES.values() for p in ps}, key=len, reverse=True)
# a preset named: `small`, --preset small, "the tiny preset"
PRESET_MENTION = re.compile(
    r"`(?P<a>" + "|".join(map(re.escape, _NAMES)) + r")`(?!\s*(?:family|search family))"
    r"|--preset (?P<b>[\w-]+)"
    r"|\b(?P<c>" + "|".join(map(re.escape, _NAMES)) + r") preset\b")
GAME_MENTION = re.compile("|".join(map(re.escape, sorted(GAME_WORDS, key=len, reverse=True))))
# a sentence that says it quotes the past may differ from today's preset
PAST = re.compile(r"\b(then|former|formerly|earlier|no longer|is now|was|were|used to|before|old)\b",
                  re.IGNORECASE)


def _find(obj: Any, name: str) -> Any:
    """The first field `name` in a nest of dataclasses / NamedTuples, breadth first."""
    queue = [obj]
    while queue:
        node = queue.pop(0)
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            fields = {f.name: getattr(node, f.name) for f in dataclasses.fields(node)}
        elif isinstance(node, tuple) and hasattr(node, "_fields"):
            fields = node._asdict()
        else:
            continue
        if name in fields:
            return fields[name]
        queue.extend(fields.values())
    return None


def _env_option(config, key: str) -> Any:
    return dict(config.env_config).get(key)


def _learning_rate(config) -> float:
    return config.optimizer.learning_rate


def _eval_simulations(config) -> Any:
    search = config.algorithm.eval_search          # None: the self-play search made
    if search is None:                             # deterministic (docs/training.md)
        search = evaluation_search(config.algorithm.search)
    return _find(search, "num_simulations")


def _num_simulations(config) -> Any:
    return _find(config.algorithm.search, "num_simulations")


# (pattern, [(group, what the doc calls it, accessor)]); the group's text is read as a number
Accessor = Callable[[Any], Any]
QUANTITIES: list[tuple[re.Pattern, list[tuple[int, str, Accessor]]]] = [
    (re.compile(r"\b(\d[\d,]*) games x (\d+) moves"),
     [(1, "num_envs", lambda c: c.num_envs), (2, "collect_steps", lambda c: c.collect_steps)]),
    (re.compile(r"\b(\d[\d,]*) games(?! x)(?: of| against| won| lost| drawn| each|\))"),
     []),  # results, not settings
    (re.compile(r"^\(?(\d[\d,]*) games,"), [(1, "num_envs", lambda c: c.num_envs)]),
    (re.compile(r"\b(\d+) updates of (\d+)"),
     [(1, "train_steps", lambda c: c.train_steps), (2, "batch_size", lambda c: c.batch_size)]),
    (re.compile(r"(?<![-\w])(\d[\d,]*) iterations(?! (?:of|at|with|before|into|in|per))"),
     [(1, "num_iterations", lambda c: c.num_iterations)]),
    (re.compile(r"(?<![-\w.])(\d+)(?:-playout eval| evaluation (?:playouts|simulations))"),
     [(1, "eval_search.num_simulations", _eval_simulations)]),
    (re.compile(r"(?<![-\w.])(\d+) (?:PUCT |self-play )?(?:simulations|playouts)(?! (?:a|per) second)"),
     [(1, "search.num_simulations", _num_simulations)]),
    (re.compile(r"\bsimulations (\d+)$"), [(1, "search.num_simulations", _num_simulations)]),
    (re.compile(r"\b(\d+)-block (\d+)-filter"),
     [(1, "network.num_blocks", lambda c: c.network.get("num_blocks")),
      (2, "network.num_filters", lambda c: c.network.get("num_filters"))]),
    (re.compile(r"\b(\d+) filters x (\d+) blocks|^network \D*?(\d+) x (\d+)\b"),
     [(1, "network.num_filters", lambda c: c.network.get("num_filters")),
      (2, "network.num_blocks", lambda c: c.network.get("num_blocks")),
      (3, "network.num_filters", lambda c: c.network.get("num_filters")),
      (4, "network.num_blocks", lambda c: c.network.get("num_blocks"))]),
    (re.compile(r"^game length (\d+) plies"),
     [(1, "env max_plies", lambda c: _env_option(c, "max_plies") or 512)]),
    (re.compile(r"\b(\d+) ?x ?(\d+)(?:, (\d+) in a row| / (\d+))"),
     [(1, "env size", lambda c: _env_option(c, "size")),
      (2, "env size", lambda c: _env_option(c, "size")),
      (3, "env win_length", lambda c: _env_option(c, "win_length")),
      (4, "env win_length", lambda c: _env_option(c, "win_length"))]),
    (re.compile(r"\b(\d+) players\b"), [(1, "env num_players",
                                        lambda c: _env_option(c, "num_players"))]),
    (re.compile(r"^optimizer Adam at ([\d.e-]+)|^optimizer same at ([\d.e-]+)"),
     [(1, "optimizer.learning_rate", _learning_rate), (2, "optimizer.learning_rate",
                                                       _learning_rate)]),
]
# `field=value` for a TrainConfig field: a literal, or a class called without arguments
FIELD_VALUE = re.compile(r"`(?P<field>[a-z_]+(?:\.[a-z_]+)*)=(?P<value>[^`]+)`")
TRAIN_FIELDS = {f.name for f in dataclasses.fields(type(get_preset("chess", "tiny")))}
# a part of the preset by its class and keywords: `SpecPUCT(c_puct=1.5, fpu_base=1.0)`
CALL = re.compile(r"`(?P<cls>[A-Z]\w*)\((?P<args>[^`()]*)\)`")


class Claim(NamedTuple):
    doc: str
    game: str
    preset: str
    what: str
    quoted: Any
    text: str      # the clause around the quote, for the failure message
    past: bool     # the sentence says it quotes an earlier preset


def _sentences(text: str) -> Iterator[str]:
    """Paragraphs flattened to sentences; a table row's cells read as '`P` <label> <cell>'."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and re.match(
                r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                presets = [h for h in header if re.fullmatch(r"`[\w-]+`", h)]
                if presets and len(cells) == len(header):
                    for h, cell in zip(header[1:], cells[1:]):
                        if h in presets:   # a cell is one clause: its colons cut nothing
                            yield f"{h} {cells[0]} {cell.replace(': ', ', ')}"
                else:
                    yield " ".join(cells)
                i += 1
            continue
        para = []
        while i < len(lines) and lines[i].strip() and not (
                lines[i].lstrip().startswith("|") and para):
            para.append(lines[i].strip())
            i += 1
        if para:
            flat = " ".join(para)
            yield from re.split(r"(?<=[.;:])\s+(?=[A-Z`(*])", flat)
        else:
            i += 1


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _literal(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def claims() -> Iterator[Claim]:
    for path in DOCS:
        page = PAGE_GAME.get(path.name)
        for sentence in _sentences(path.read_text(encoding="utf-8")):
            mentions = list(PRESET_MENTION.finditer(sentence))
            if not mentions:
                continue
            past = bool(PAST.search(sentence))
            for k, m in enumerate(mentions):
                preset = m.group("a") or m.group("b") or m.group("c")
                before = [g.group(0).lower() for g in GAME_MENTION.finditer(sentence[:m.start()])]
                after = GAME_MENTION.search(sentence[m.end():m.end() + 25].lower())
                game = (GAME_WORDS[before[-1]] if before else page) or (
                    GAME_WORDS[after.group(0)] if after else None)
                if sentence.startswith("`turbozero train "):
                    game = sentence.split()[2].strip("`")
                if game not in GAMES or preset not in GAMES[game]:
                    continue
                end = mentions[k + 1].start() if k + 1 < len(mentions) else len(sentence)
                clause = sentence[m.end():end].strip()
                # "`small` trains 250 iterations: the margin reaches ... at 512 playouts": what
                # follows a colon is a result, unless the colon opens the clause ("`tiny`: 9x9")
                colon = clause.find(": ", 1)
                clause = clause if colon < 0 else clause[:colon]
                # a command's own flags change the preset: --iterations N, --set k=v
                overridden = {o for o in re.findall(r"--set ([\w.]+)=", clause)}
                if "--iterations" in clause:
                    overridden.add("num_iterations")
                taken: list[tuple[int, int]] = []
                for pattern, groups in QUANTITIES:
                    for q in pattern.finditer(clause):
                        if any(a <= q.start() < b for a, b in taken):
                            continue
                        taken.append(q.span())
                        for g, what, _ in groups:
                            if q.group(g) is not None and what not in overridden:
                                yield Claim(path.name, game, preset, what, _number(q.group(g)),
                                            clause[:160], past)
                for c in CALL.finditer(clause):
                    try:
                        call = ast.parse(f"f({c.group('args')})", mode="eval").body
                        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
                    except (SyntaxError, ValueError):
                        continue
                    for name, value in kwargs.items():
                        yield Claim(path.name, game, preset, f"{c.group('cls')}.{name}", value,
                                    clause[:160], past)
                for f in FIELD_VALUE.finditer(clause):
                    top = f.group("field").split(".")[0]
                    if top in TRAIN_FIELDS and f.group("field") not in overridden:
                        yield Claim(path.name, game, preset, f.group("field"),
                                    _literal(f.group("value")), clause[:160], past)


def _part(config: Any, cls: str) -> Any:
    """The first object of class `cls` in the preset's config (breadth first); None."""
    queue = [config]
    while queue:
        node = queue.pop(0)
        if type(node).__name__ == cls:
            return node
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            queue.extend(getattr(node, f.name) for f in dataclasses.fields(node))
        elif isinstance(node, tuple):
            queue.extend(node)
    return None


MISSING = "<no such part>"


def _accessor(what: str) -> Accessor:
    head, _, field = what.partition(".")
    if head[:1].isupper():   # `SpecPUCT(fpu_base=0)`: that part's field
        return lambda c: getattr(_part(c, head), field, MISSING)
    for _, groups in QUANTITIES:
        for _, name, get in groups:
            if name == what:
                return get
    def field(config):
        value = config
        for part in what.split("."):
            value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
        return value
    return field


def _equal(quoted: Any, actual: Any) -> bool:
    if isinstance(quoted, str) and re.fullmatch(r"[A-Z]\w*\(\)", quoted):
        return type(actual).__name__ == quoted[:-2]   # `EnvStates()`: the class, defaults
    if isinstance(quoted, (int, float)) and not isinstance(quoted, bool) and isinstance(
            actual, (int, float)) and not isinstance(actual, bool):
        return float(quoted) == float(actual)
    if isinstance(quoted, tuple) and isinstance(actual, tuple):
        return quoted == actual
    return quoted == actual


def mismatches(found: list[Claim]) -> list[str]:
    bad = []
    for c in found:
        actual = _accessor(c.what)(get_preset(c.game, c.preset))
        if not _equal(c.quoted, actual) and not c.past:
            bad.append(f"docs {c.doc}: {c.game} `{c.preset}` {c.what} quoted {c.quoted!r}, "
                       f"the preset has {actual!r} (in: {c.text!r})")
    return bad


CLAIMS = list(claims())


def test_the_scan_finds_the_docs_preset_quotes():
    # 76 claims when this was written, in chess.md, gomoku.md, pacosako.md, pyrat.md,
    # training.md, learning.md, benchmarks.md ...; a parser that matches nothing must not pass
    assert len(CLAIMS) >= 40, CLAIMS
    assert {c.doc for c in CLAIMS} >= {"chess.md", "gomoku.md", "pacosako.md", "training.md"}
    whats = {c.what for c in CLAIMS}
    assert {"search.num_simulations", "num_iterations", "num_envs", "network.num_filters",
            "env size"} <= whats, whats


def test_every_preset_value_a_doc_quotes_is_the_presets():
    bad = mismatches(CLAIMS)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("doctored, expected", [
    # a number changed in a real sentence of the Paco Ŝako page
    ("`turbozero train pacosako --preset small` (64 games x 32 moves, 61 iterations, the tree "
     "kernel with a Gumbel root at 8 simulations in self-play) is the set-up.",
     "num_iterations quoted 61.0"),
    # a table cell of the chess page
    ("| setting | `large` | `small` | `tiny` | source |\n| --- | --- | --- | --- | --- |\n"
     "| simulations | 800 | 16 | 9 | §5 |", "search.num_simulations quoted 9.0"),
    # a part of the preset by its class and keywords, and a part the preset does not have
    ("| setting | `large` | `small` |\n| --- | --- | --- |\n"
     "| search | `SpecPUCT(c_puct=1.5, fpu_base=0.5)` | `SpecPUCT(fpu_base=0)` |",
     "SpecPUCT.fpu_base quoted 0.5, the preset has 1.0"),
    ("| setting | `large` |\n| --- | --- |\n| search | `GumbelRoot(max_considered=8)` |",
     "GumbelRoot.max_considered quoted 8, the preset has '<no such part>'"),
    # a field=value mention
    ("**Capped games.** `small` therefore cuts self-play games at 40 plies "
     "(`max_self_play_steps=41`).", "max_self_play_steps quoted 41"),
    ("**Presets.** `tiny`: 9x9, 5 in a row, 3 players.", "env win_length quoted 5.0"),
])
def test_a_drifted_quote_fails(tmp_path, monkeypatch, doctored, expected):
    doc = tmp_path / ("pacosako.md" if "pacosako" in doctored else
                      "gomoku.md" if "in a row" in doctored else "chess.md")
    doc.write_text(doctored + "\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "DOCS", [doc])
    bad = mismatches(list(claims()))
    assert len(bad) == 1 and expected in bad[0], bad


def test_a_quote_of_the_past_may_differ(tmp_path, monkeypatch):
    doc = tmp_path / "chess.md"
    doc.write_text("The former `small` (32 simulations) stayed flat.\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "DOCS", [doc])
    found = list(claims())
    assert [c.quoted for c in found] == [32.0] and found[0].past
    assert mismatches(found) == []
