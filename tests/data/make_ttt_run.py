"""Writes tests/data/ttt_run/, the stored run directory that tests/test_run_directory.py
evaluates and resumes: a checkpoint written by one version of orbax must stay readable by every
version the project pins (pyproject.toml, orbax-checkpoint). Rerun only to replace the
fixture on purpose (a new loop-state layout), never to make a failing test pass:

    python tests/data/make_ttt_run.py

Two iterations of the tic-tac-toe tiny preset, shrunk (4 games, 16 positions of replay per
game), checkpointed at both, no evaluation: about 0.3 MB.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEST = os.path.join(HERE, "ttt_run")
# the command that made the fixture, kept in its cli.json too
SETTINGS = ["num_envs=4", "replay_capacity=16", "collect_steps=9", "train_steps=2",
            "batch_size=16", "checkpoint_every=1", "eval_every=0", "eval_opponents=[]"]


def main() -> None:
    import jax
    import orbax.checkpoint

    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run")
        cmd = [sys.executable, "-m", "turbozero.cli", "train", "pgx/tic_tac_toe",
               "--preset", "tiny", "--iterations", "2", "--run-dir", run, "--no-progress"]
        for pair in SETTINGS:
            cmd += ["--set", pair]
        subprocess.run(cmd, check=True)
        shutil.rmtree(DEST, ignore_errors=True)
        shutil.copytree(run, DEST)
    with open(os.path.join(DEST, "written_by.json"), "w", encoding="utf-8") as f:
        json.dump({"orbax-checkpoint": orbax.checkpoint.__version__, "jax": jax.__version__},
                  f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
