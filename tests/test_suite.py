"""benchmarks/throughput/suite.py --quick: every section runs on CPU and writes a complete table (issue 34,
item 3). Its time is printed; the budget is 3 minutes on the 2-core development machine
(docs/benchmarks.md, "The benchmark suite"). It keeps its compiles in the tests' persistent
cache (`--compile-cache`): cold, 65% of a quick run's seconds were compiling (390 of 602 s at
load 6.5)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_suite_runs_every_section_and_writes_its_tables(tmp_path):
    out = tmp_path / "suite"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("TURBOZERO_JAX_CACHE", None)
    suite = os.path.join(ROOT, "benchmarks", "throughput", "suite.py")
    cache = jax.config.jax_compilation_cache_dir  # the tests' cache (tests/conftest.py)
    proc = subprocess.run([sys.executable, suite, "--quick", "--out", str(out)]
                          + (["--compile-cache", cache] if cache else []),
                          capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((out / "suite.json").read_text())
    print(f"quick suite: {data['meta']['seconds']} s, sections {data['meta']['section_seconds']}")
    assert data["meta"]["failed"] == []
    rows = data["rows"]
    by_section = {}
    for row in rows:
        by_section.setdefault(row["section"], []).append(row)
        assert math.isfinite(row["value"]) and row["value"] > 0, row
        assert row["compile_s"] and all(v > 0 for v in row["compile_s"].values()), row
    assert set(by_section) == {"env", "search", "mcgs", "training"}
    import envs

    env_rows = {r["name"].split()[0]: r for r in by_section["env"]}
    assert set(env_rows) == set(envs.available_envs())
    for game in ("chess", "backgammon"):  # the games pgx has: measured beside pgx
        assert env_rows[game]["reference"] == "pgx" and env_rows[game]["ratio"] > 0
    for row in by_section["search"]:  # kernel beside mctx and the model floor
        assert row["reference"] == "mctx" and row["reference_value"] > 0
        assert 0 < row["share_of_floor"] < 2
        # issue 46: trips per simulation (a walk and a backup trip at least) and the compiled
        # loops' kernels: the kernel's walks and backups are loops the data decide, the floor's
        # loop has none and fewer kernels than the search's
        assert row["trips_per_sim"] >= 2, row
        kernel, floor = row["kernels"]["kernel"], row["kernels"]["floor"]
        assert len(kernel["data_loops"]) >= 2 and floor["data_loops"] == []
        assert 0 < floor["loop_kernels"] < kernel["loop_kernels"]
    for row in by_section["mcgs"]:
        assert row["reference"] == "without" and row["reference_value"] > 0
        assert row["trips_per_sim"] >= 2 and row["kernels"]["graph"]["data_loops"], row
    (train,) = by_section["training"]
    assert train["reference"] == "per-step" and set(train["compile_s"]) == {"per-step", "scan"}
    md = (out / "suite.md").read_text()
    for section in by_section:
        assert f"### {section}" in md
    assert "| trips/sim | loop kernels |" in md
