"""Every ```python and ```bash block of README.md and docs/training.md, run as written, in
order, in a fresh working directory (so `runs/...` paths land there).

Two edits only, both printed in the test: `pip install ... &&` is stripped (the package is
installed already, and CI's own run of the install is the test of it), and the README's test
command (`pytest -q`, the whole suite) is skipped, since CI runs exactly that command. The
README trains the backgammon tiny preset twice (CLI and Python); the default suite runs a fast
variant of the same blocks with fewer iterations (`--iterations` / `num_iterations=`), and
`pytest -m slow tests/test_readme.py` runs them untouched.
"""

import os
import re
import subprocess
import sys
import time

import jax
import pytest

from turbozero.training import read_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```(python|bash)\n(.*?)^```", re.S | re.M)
INSTALL = re.compile(r"^pip install [^\n&]*&&\s*", re.M)


def code_blocks(doc: str) -> list[tuple[str, str]]:
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        return FENCE.findall(f.read())


def runnable(lang: str, code: str) -> str | None:
    """The block as it runs here: the install prefix stripped; None for the test command."""
    if lang == "bash":
        code = INSTALL.sub("", code)
        if code.strip() == "pytest -q":
            return None
    return code


def fast(lang: str, code: str) -> str:
    """The same block training for 2 iterations, evaluating once, with 4 games."""
    if lang == "bash":
        code = re.sub(r"(turbozero train \S+ --preset \w+(?: --run-dir \S+)?)(?=\s*$)",
                      r"\1 --iterations 2 --set eval_every=2 --set eval_games=4", code,
                      flags=re.M)
        # a resumed run trains on to one iteration more than the fast run did
        return re.sub(r"(--resume .*--iterations )\d+", r"\g<1>3", code)
    return re.sub(r'get_preset\(("[^"]+"), ("[^"]+")\)',
                  r"get_preset(\1, \2, num_iterations=2, eval_every=2, eval_games=4)", code)


def run_blocks(doc: str, cwd, variant=None) -> list[str]:
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir,
               TURBOZERO_JAX_CACHE=jax.config.jax_compilation_cache_dir, MPLBACKEND="Agg")
    # the blocks run as a user runs them: with stored functions, the default (tests/conftest.py
    # turns them off for tests that patch traced code; nothing here patches anything)
    env.pop("TURBOZERO_STORED_FUNCTIONS", None)
    ran = []
    for lang, code in code_blocks(doc):
        code = runnable(lang, code)
        if code is None:
            continue
        if variant is not None:
            code = variant(lang, code)
        cmd = [sys.executable, "-c", code] if lang == "python" else ["bash", "-euo", "pipefail", "-c", code]
        print(f"--- {doc}, {lang}:\n{code}")
        start = time.perf_counter()
        out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
        print(f"--- {time.perf_counter() - start:.1f} s")
        assert out.returncode == 0, f"{doc} block failed:\n{code}\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
        assert "Traceback" not in out.stderr, out.stderr[-4000:]
        ran.append(code)
    return ran


def test_blocks_are_found():
    readme = code_blocks("README.md")
    assert [lang for lang, _ in readme].count("python") >= 2
    assert any("turbozero eval runs/bg" in code for _, code in readme)
    assert code_blocks("docs/training.md")
    # the fast variant changes only the number of iterations and evaluation games
    assert fast("bash", "turbozero train backgammon --preset tiny\n") == (
        "turbozero train backgammon --preset tiny --iterations 2 --set eval_every=2 "
        "--set eval_games=4\n")
    assert fast("bash", "turbozero train backgammon --preset tiny --run-dir runs/bg\n") == (
        "turbozero train backgammon --preset tiny --run-dir runs/bg --iterations 2 "
        "--set eval_every=2 --set eval_games=4\n")
    # the main job names the run directory the later commands use (issue 45 item 8)
    main_job = next(code for lang, code in readme if "turbozero train backgammon" in code)
    assert "--run-dir runs/bg" in main_job


def test_readme_fast(tmp_path):
    ran = run_blocks("README.md", tmp_path, variant=fast)
    assert any("turbozero eval runs/bg" in code for code in ran)
    assert (tmp_path / "runs" / "bg-py" / "metrics.png").stat().st_size > 0  # from Python
    # the main job's run (--run-dir runs/bg), evaluated and resumed by the later commands as
    # written: iterations 1, 2, then 3, no repeats
    run = tmp_path / "runs" / "bg"
    assert [r["iteration"] for r in read_metrics(str(run / "metrics.jsonl"))] == [1, 2, 3]


def test_training_doc(tmp_path):
    run_blocks("docs/training.md", tmp_path)


@pytest.mark.slow
def test_readme_as_written(tmp_path):
    run_blocks("README.md", tmp_path)
