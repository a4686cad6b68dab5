"""Every notebook runs top to bottom with tiny settings (nbclient, kernel "python3")."""

import os
import re

import jax
import nbformat
import pytest
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_notebook(name: str, **env: str) -> list:
    """Execute notebooks/<name> with extra environment variables; return its code outputs."""
    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    # the kernel is another process: hand it the suite's persistent compilation cache
    env = dict(env, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir or "",
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")  # all, as tests/conftest.py
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": ROOT}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    _check_clean(name, outputs)
    return outputs


def _check_clean(name: str, outputs: list) -> None:
    """No warning printed, and no cell ending in a large repr (a loop state prints 80 KB)."""
    for o in outputs:
        text = o.get("text", "") if o.get("name") == "stderr" else ""
        assert "Warning" not in text and "warning:" not in text, f"{name}: {text[-2000:]}"
        plain = "".join(o.get("data", {}).get("text/plain", ""))
        assert len(plain) < 2000, f"{name}: a cell ends with a {len(plain)}-character repr"


def _text(outputs: list) -> str:
    return "".join(o.get("text", "") for o in outputs)


def _images(outputs: list) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs)


def test_backgammon_4way_notebook():
    outputs = run_notebook("backgammon_4way.ipynb", TURBOZERO_NOTEBOOK_ITERATIONS="2")
    text = _text(outputs)
    assert "money equity" in text and "MWC" in text
    assert _images(outputs) >= 1  # the training curves


def test_pyrat_mcgs_notebook():
    outputs = run_notebook("pyrat_mcgs.ipynb", TURBOZERO_NOTEBOOK_SIMS="24")
    text = _text(outputs)
    assert "root Q" in text and "transposition" in text and "scores after" in text
    assert _images(outputs) >= 3  # maze, policies, game


def test_pacosako_notebook():
    outputs = run_notebook("pacosako.ipynb", PACOSAKO_NOTEBOOK_ACTIONS="30")
    text = _text(outputs)
    assert "expansion == observation: True" in text
    assert "in hand:" in text and "legal: ['place" in text
    assert _images(outputs) >= 1, "the tensor layers were not drawn"


NOTEBOOKS = sorted(n for n in os.listdir(os.path.join(ROOT, "notebooks")) if n.endswith(".ipynb"))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_text_quotes_no_counts_of_a_run(name):
    """A run's numbers are printed by the code that computes them, not typed into the text:
    the gomoku notebook's text once quoted first places (24/96, 58/96, 41-45/96) that a rerun
    did not give. A count out of 10 or more (games, visits) in a markdown cell is such a
    quote; fractions like 1/3 (what a random agent scores) are not."""
    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            quoted = re.findall(r"\b\d+(?:-\d+)?/\d{2,}\b", cell.source)
            assert not quoted, f"{name}: the text quotes {quoted}; print them from the run"


def test_gomoku3_notebook():
    outputs = run_notebook("gomoku3.ipynb", TURBOZERO_NOTEBOOK_ITERATIONS="2")
    text = _text(outputs)
    # the summary line is the evaluations printed during the run, read back
    evals = {int(i): (int(w), int(n)) for i, w, n in re.findall(
        r"iteration (\d+): first place in (\d+)/(\d+) games against random", text)}
    w0, n0, wb, nb_, ib, we, ne, ie = map(int, re.search(
        r"first place: (\d+)/(\d+) untrained, best (\d+)/(\d+) at iteration (\d+), "
        r"(\d+)/(\d+) at iteration (\d+)", text).groups())
    last = max(evals)
    assert (w0, n0) == evals[0] and (we, ne) == evals[last] and ie == last
    assert (wb, nb_) == evals[ib] and wb / nb_ == max(w / n for i, (w, n) in evals.items() if i)
    for name in ("policy_loss", "value_loss", "reward_loss", "consistency_loss"):
        assert re.search(rf"{name}: \S+ at iteration \d+ -> \S+ at iteration {last} ", text), name
    assert "root values per seat" in text and "top moves of the improved policy" in text
    assert "iteration 2: first place in" in text  # the evaluation after training
    assert "improved policy on the two winning cells" in text
    assert sum("image/svg+xml" in o.get("data", {}) for o in outputs) == 1  # the 100x100 board
    assert _images(outputs) >= 4  # planes, search heatmaps, curves, trained policy


def test_chess_notebook():
    import io
    import math

    import chess.pgn

    outputs = run_notebook("chess.ipynb", TURBOZERO_NOTEBOOK_SIMS="24",
                           TURBOZERO_NOTEBOOK_PLIES="6")
    text = _text(outputs)
    assert sum("image/svg+xml" in o.get("data", {}) for o in outputs) == 1  # the board
    assert _images(outputs) >= 1  # the visit distribution
    w, d, l, total = map(float, re.search(
        r"win ([\d.]+)  draw ([\d.]+)  loss ([\d.]+)  \(sum ([\d.]+)\)", text).groups())
    assert abs(w + d + l - 1.0) < 2e-3 and abs(total - 1.0) < 1e-3
    assert all(f"risk {b}" in text for b in ("-0.5", "+0.0", "+0.5"))
    # what the text says of these lines: the root value barely moves with beta and the visits
    # go to the mate whatever the risk; the risk value moves, by about log(n) / beta
    rows = re.findall(r"risk ([+-][\d.]+)\s+([+-][\d.]+)\s+([+-][\d.]+)\s+(\S+)", text)
    betas, roots, risks, moves = zip(*rows)
    assert moves == ("Ra8#",) * 3 and max(map(float, roots)) - min(map(float, roots)) < 0.05
    assert float(risks[1]) == 0.0
    for beta, risk in ((-0.5, float(risks[0])), (0.5, float(risks[2]))):
        assert 2 <= math.exp(risk * beta) <= 30  # n visited children of one position
    pgn = text[text.index("[Event"):text.index("plies read back")]
    game = chess.pgn.read_game(io.StringIO(pgn))
    assert len(list(game.mainline_moves())) == 6
    assert "plies read back by python-chess: 6" in text
