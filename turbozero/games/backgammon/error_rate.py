"""Error rate as the field measures it: a player's mean equity loss per decision, x1000, judged by
gnubg at n plies on a fixed, seeded set of positions from gnubg self-play, split contact / race.

`turbozero error-rate RUN_DIR` (docs/learning.md, "Error rate judged by gnubg") prints the run's
complete-move player beside gnubg 0-ply, PubEval and a random player on the same positions, so a
reader sees where the player sits on gnubg's scale (gnubg 0-ply about 10, PubEval about 40).

* **Positions** (`self_play_decisions`): gnubg 0-ply plays itself from the opening with dice from
  `numpy.random.default_rng(seed)`; each decision with at least two distinct complete moves is
  kept with probability `KEEP`, until `count` are kept. A decision is a position, a roll and its
  phase by gnubg's classification of the position before the move: contact (contact, crashed)
  or race (race, bear-off).
* **The judge** (`Judge`): the cubeless money equity of the position after a move, for the mover,
  gnubg's evaluation at n plies with the opponent on roll (what gnubg's own analysis scores a
  move by; `gnubg.findbestmoves`' scores are the same numbers); the best move is the first of
  `gnubg.findbestmoves` at n plies with gnubg's move filters and pruning nets (its
  "world class" setting at 2 plies).
* **A decision's error**: the best move's equity minus the chosen move's, floored at 0 (a move
  the filters left out may score above gnubg's best: then the player made no error, as in
  gnubg's analysis, which adds the played move to the list). The error rate of a phase is the
  mean error over its decisions x1000, with its standard error.

Judging is the slow part (gnubg at 2 plies, ~0.2 s a position on a loaded core), so the best
equities and every judged move are kept on disk (`JudgeCache`, plain JSON, keyed by the
position set and the judge); the position set itself is made again from its seed each time
(gnubg 0-ply self-play: a second or two).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Callable, Iterable, NamedTuple, Optional, Sequence

import jax
import numpy as np

from envs.backgammon import from_gnubg_board, notation
from envs.backgammon.gnubg_bridge import rules_flip_np
from turbozero.play import load_agent
from turbozero.training.checkpoints import write_json_atomic

GnubgBoard = tuple[tuple[int, ...], tuple[int, ...]]  # (opponent, on roll), gnubg's order
Player = Callable[["Decision", list], GnubgBoard]  # (decision, legal results) -> a result

CONTACT, RACE = "contact", "race"
PHASES = (CONTACT, RACE)
DEFAULT_POSITIONS = 500
DEFAULT_JUDGE_PLIES = 2
# gnubg's move filters (`gnubg.getevalhintfilter`) are defined for 1 to 4 plies: beyond, its
# analysis has no filters to prune with (and 3 plies already take seconds a position)
MAX_JUDGE_PLIES = 4
KEEP = 0.25  # the chance a self-play decision joins the set: spread over many games
MAX_GAME_TURNS = 400  # a self-play game longer than this is cut (none is, in practice)
OPENING_ID = "4HPwATDgc/ABMA"
CACHE_VERSION = 1


class Decision(NamedTuple):
    board: GnubgBoard  # the position, the player on roll second
    dice: tuple[int, int]
    phase: str  # CONTACT or RACE


def check_judge_plies(plies: object) -> int:
    """The judge's ply count, or a one-line ValueError naming the range."""
    if isinstance(plies, bool) or not isinstance(plies, int) or not 0 <= plies <= MAX_JUDGE_PLIES:
        raise ValueError(f"judge plies {plies!r}: gnubg judges at 0 to {MAX_JUDGE_PLIES} plies "
                         f"(its move filters stop at {MAX_JUDGE_PLIES}); 2 is its world-class "
                         "analysis, 3 takes seconds a position")
    return plies


def check_positions(count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"positions {count!r}: the position set needs at least 1 position")
    return count


def import_gnubg():
    """(gnubg, gnubg_nn), or a one-line ValueError naming the install."""
    try:
        import gnubg
        import gnubg_nn
    except ImportError:
        raise ValueError('the error rate is judged by gnubg, which is not installed: '
                         'pip install -e ".[backgammon]"') from None
    return gnubg, gnubg_nn


def _board(pair) -> GnubgBoard:
    return tuple(int(x) for x in pair[0]), tuple(int(x) for x in pair[1])


def legal_results(board: GnubgBoard, dice: Sequence[int]) -> list[GnubgBoard]:
    """The distinct positions a complete legal move of `dice` leaves, each as (opponent, mover)
    with the mover still second (gnubg-nn's move generator), in gnubg-nn's order."""
    _, gnubg_nn = import_gnubg()
    keys = gnubg_nn.moves([list(board[0]), list(board[1])], int(dice[0]), int(dice[1]))
    return [_board(gnubg_nn.board_from_position_key(k)) for k in keys]


def phase_of(board: GnubgBoard) -> str:
    """CONTACT or RACE: gnubg's class of the position (contact and crashed are contact; race and
    bear-off are race)."""
    _, gnubg_nn = import_gnubg()
    cls = gnubg_nn.classify([list(board[0]), list(board[1])])
    return CONTACT if cls in (gnubg_nn.c_contact, gnubg_nn.c_crashed) else RACE


def self_play_decisions(count: int, seed: int) -> list[Decision]:
    """`count` decisions met in gnubg 0-ply self-play, the same for the same seed."""
    gnubg, gnubg_nn = import_gnubg()
    rng = np.random.default_rng(seed)
    judge0 = Judge(0)
    start = _board(gnubg_nn.board_from_position_id(OPENING_ID))
    out: list[Decision] = []
    while len(out) < count:
        board = start
        for _ in range(MAX_GAME_TURNS):
            dice = tuple(int(d) for d in rng.integers(1, 7, 2))
            results = legal_results(board, dice)
            if len(results) >= 2 and rng.random() < KEEP:
                out.append(Decision(board, dice, phase_of(board)))
                if len(out) == count:
                    break
            if not results:  # no move: the opponent rolls
                board = (board[1], board[0])
                continue
            after = max(results, key=lambda r: judge0.equity(r))
            if sum(after[1]) == 0:  # borne off: the game is over
                break
            board = (after[1], after[0])
    return out


class Judge:
    """gnubg's cubeless money equity of moves at `plies` (pruning nets on, as gnubg's analysis)."""

    def __init__(self, plies: int, prune: bool = True):
        gnubg, _ = import_gnubg()
        self.plies = check_judge_plies(plies)
        self._gnubg = gnubg
        self._cube = gnubg.cubeinfo()
        self._ctx = gnubg.evalcontext(0, self.plies, 1, int(prune), 0.0)

    def equity(self, result: GnubgBoard) -> float:
        """The mover's equity after a move leaving `result` (opponent, mover): gnubg evaluates
        with the opponent on roll; a finished game gives its points (+1, +2 or +3)."""
        opp, me = result
        return -float(self._gnubg.evaluate((me, opp), self._cube, self._ctx)[5])

    def best(self, decision: Decision) -> float:
        """The equity of gnubg's best move at `plies` (its move filters prune the candidates)."""
        found = self._gnubg.findbestmoves(decision.board, self._cube, self._ctx,
                                          tuple(decision.dice))
        return float(found[0]["score"])


def decision_error(best: float, chosen: float) -> float:
    """The equity a move gives up against the judge's best, never below 0."""
    return max(best - chosen, 0.0)


@dataclasses.dataclass(frozen=True)
class PhaseRate:
    decisions: int
    rate: Optional[float]  # mean error x1000 (None without decisions)
    se: Optional[float]  # its standard error x1000 (None below two decisions)


def error_rates(errors: Sequence[float], phases: Sequence[str]) -> dict[str, PhaseRate]:
    """{contact, race, all: PhaseRate}: mean error per decision x1000 and its standard error."""
    errors, phases = np.asarray(errors, np.float64), np.asarray(phases)
    out = {}
    for name in PHASES + ("all",):
        e = errors if name == "all" else errors[phases == name]
        rate = float(e.mean()) * 1000 if e.size else None
        se = float(e.std(ddof=1) / np.sqrt(e.size)) * 1000 if e.size >= 2 else None
        out[name] = PhaseRate(int(e.size), rate, se)
    return out


class JudgeCache:
    """The judge's results for one position set on disk (JSON): the best equity of each decision
    and the equity of each judged result position (by gnubg position ID). `path` None: memory
    only."""

    def __init__(self, path: Optional[str], key: dict):
        self.path, self.key = path, key
        self.best: dict[str, float] = {}
        self.equity: dict[str, float] = {}
        self.dirty = False
        if path and os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
            except (OSError, ValueError):
                data = {}  # unreadable: judged again and written anew
            if data.get("key") == key:
                self.best = {k: float(v) for k, v in data.get("best", {}).items()}
                self.equity = {k: float(v) for k, v in data.get("equity", {}).items()}

    def save(self) -> None:
        if not self.path or not self.dirty:
            return
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        write_json_atomic(self.path, {"key": self.key, "best": self.best, "equity": self.equity})
        self.dirty = False


def default_cache_path(count: int, seed: int, plies: int) -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "turbozero-error-rate",
                        f"gnubg-selfplay-{count}-seed{seed}-judge{plies}ply.json")


def _position_id(board: GnubgBoard) -> str:
    gnubg, _ = import_gnubg()
    return gnubg.positionid(board)


def judge_players(decisions: Sequence[Decision], players: dict[str, Player], judge: Judge,
                  cache: Optional[JudgeCache] = None,
                  progress: Optional[Callable[[int, int], None]] = None,
                  moves: Callable[[GnubgBoard, tuple], list] = legal_results,
                  position_key: Callable[[GnubgBoard], str] = None,
                  ) -> dict[str, list[float]]:
    """{player: the error of its move at each decision}. `moves` lists a decision's legal
    results and `position_key` names a position in the cache (gnubg's by default)."""
    cache = cache or JudgeCache(None, {})
    position_key = position_key or _position_id
    errors: dict[str, list[float]] = {name: [] for name in players}
    for i, d in enumerate(decisions):
        did = f"{position_key(d.board)}:{d.dice[0]}{d.dice[1]}"
        if did not in cache.best:
            cache.best[did], cache.dirty = judge.best(d), True
        best = cache.best[did]
        results = moves(d.board, d.dice)
        for name, play in players.items():
            chosen = play(d, results)
            if chosen not in results:  # a player's move must be one of the position's
                raise ValueError(f"{name} chose a position no legal move of {d.dice} leaves")
            pid = position_key(chosen)
            if pid not in cache.equity:
                cache.equity[pid], cache.dirty = judge.equity(chosen), True
            errors[name].append(decision_error(best, cache.equity[pid]))
        if progress is not None:
            progress(i + 1, len(decisions))
        if cache.dirty and (i + 1) % 50 == 0:
            cache.save()  # a long judging interrupted keeps what it did
    cache.save()
    return errors


# ---------------------------------------------------------------- the reference players
def gnubg_player(plies: int = 0) -> Player:
    """gnubg at `plies` choosing among the results by its own equity (its 0-ply move)."""
    judge = Judge(plies)
    return lambda decision, results: max(results, key=judge.equity)


def pubeval_player() -> Player:
    """Tesauro's PubEval (gnubg-nn's `pub_eval_score` of the result, the opponent to roll; the
    move it scores highest, which is gnubg-nn's `pub_best_move`)."""
    _, gnubg_nn = import_gnubg()

    def play(decision, results):
        return max(results, key=lambda r: gnubg_nn.pub_eval_score([list(r[1]), list(r[0])]))

    return play


def random_player(seed: int) -> Player:
    """A uniform choice among the distinct complete moves, seeded."""
    rng = np.random.default_rng(seed)
    return lambda decision, results: results[int(rng.integers(len(results)))]


def agent_player(agent) -> Player:
    """A run's complete-move player (`turbozero.play.load_agent`): its chosen move's result."""
    def play(decision, results):
        state = from_gnubg_board(decision.board, decision.dice)
        moves, chosen, _ = agent.choose(state)
        slot = int(chosen)
        after = jax.tree_util.tree_map(lambda x: np.asarray(x[slot]), moves.states)
        board = rules_flip_np(after.board) if bool(after.is_chance) else after.board
        return _board(notation.board_to_gnubg(board))

    return play


REFERENCE_NOTES = {
    "gnubg 0-ply": "GNU Backgammon's neural net without lookahead (the gnubg opponent)",
    "pubeval": "Tesauro's PubEval, a linear evaluation (1993): the field's beginner yardstick",
    "random": "a uniform choice among the distinct complete moves",
}


def position_set_key(count: int, seed: int, plies: int) -> dict:
    gnubg, _ = import_gnubg()
    return {"version": CACHE_VERSION, "positions": count, "seed": seed, "judge_plies": plies,
            "gnubg": getattr(gnubg, "version", "?"), "keep": KEEP}


def analyse(players: dict[str, Player], count: int = DEFAULT_POSITIONS, seed: int = 0,
            plies: int = DEFAULT_JUDGE_PLIES, cache_path: Optional[str] = "default",
            progress: Optional[Callable[[int, int], None]] = None
            ) -> tuple[list[Decision], dict[str, dict[str, PhaseRate]]]:
    """The error rates of `players` (and, with them, of the references) on the position set of
    (`count`, `seed`) judged at `plies`: (decisions, {player: {phase: PhaseRate}})."""
    check_judge_plies(plies)
    check_positions(count)
    decisions = self_play_decisions(count, seed)
    path = default_cache_path(count, seed, plies) if cache_path == "default" else cache_path
    cache = JudgeCache(path, position_set_key(count, seed, plies))
    errors = judge_players(decisions, players, Judge(plies), cache, progress)
    phases = [d.phase for d in decisions]
    return decisions, {name: error_rates(e, phases) for name, e in errors.items()}


def reference_players(seed: int) -> dict[str, Player]:
    return {"gnubg 0-ply": gnubg_player(0), "pubeval": pubeval_player(),
            "random": random_player(seed + 1)}


def format_rates(rates: dict[str, dict[str, PhaseRate]], plies: int, decisions: Iterable[Decision],
                 seed: int) -> str:
    """A table: one row per player, the error rate of contact, race and all decisions."""
    decisions = list(decisions)
    n = {p: sum(d.phase == p for d in decisions) for p in PHASES}

    def cell(r: PhaseRate) -> str:
        if r.rate is None:
            return "-"
        return f"{r.rate:.1f}" + (f" ± {r.se:.1f}" if r.se is not None else "")

    rows = [("player", f"contact ({n[CONTACT]})", f"race ({n[RACE]})",
             f"all ({len(decisions)})")]
    rows += [(name, cell(r[CONTACT]), cell(r[RACE]), cell(r["all"])) for name, r in rates.items()]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [f"error rate: mean equity lost per decision x1000, judged by gnubg at {plies} "
             f"plies (cubeless money), on {len(decisions)} decisions of gnubg 0-ply self-play "
             f"(seed {seed}); ± is the standard error", ""]
    lines += ["  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in
                                                     zip(row[1:], widths[1:])]) for row in rows]
    lines.append("")
    lines += [f"{k}: {v}" for k, v in REFERENCE_NOTES.items() if k in rates]
    return "\n".join(lines)


def results_json(rates: dict[str, dict[str, PhaseRate]]) -> dict:
    return {name: {phase: dataclasses.asdict(r) for phase, r in by.items()}
            for name, by in rates.items()}


def report(run_dir: str, positions: int = DEFAULT_POSITIONS, seed: int = 0,
           judge_plies: int = DEFAULT_JUDGE_PLIES, plies: int = 0, as_json: bool = False,
           cache: bool = True, progress: Optional[Callable[[int, int], None]] = None) -> str:
    """`turbozero error-rate RUN_DIR`: the run's complete-move player at `plies` (its newest
    checkpoint, read as `turbozero play` reads it) beside the references, as text or JSON."""
    check_judge_plies(judge_plies)  # the cheap refusals before loading anything
    check_positions(positions)
    import_gnubg()
    agent = load_agent("backgammon", run_dir, plies)
    name = f"run, iteration {agent.iteration}, {plies}-ply"
    players = {name: agent_player(agent), **reference_players(seed)}
    decisions, rates = analyse(players, positions, seed, judge_plies,
                               "default" if cache else None, progress)
    if as_json:
        return json.dumps({"run_dir": run_dir, "iteration": agent.iteration, "plies": plies,
                           "judge_plies": judge_plies, "positions": positions, "seed": seed,
                           "error_rate": results_json(rates)})
    return f"{run_dir}: " + format_rates(rates, judge_plies, decisions, seed)
