"""The C++ unit tests of the CPU search path (cpp/tests/test_main.cpp: pool, tree search with
subtree reuse, the queue stress run with stale generations, the threaded coordinator (also with a
stalled root wait retried), refused evaluations, the fixed-point sums at the extremes) built as
separate debug copies with AddressSanitizer + UndefinedBehaviorSanitizer and with
ThreadSanitizer, and run clean (issue 21, item 6). Slow: two CMake builds."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _build_and_run(tmp_path: pathlib.Path, sanitize: str, env_extra: dict) -> str:
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not on PATH (pip install cmake, or apt-get install cmake)")
    build = tmp_path / sanitize.replace(",", "_")
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run([cmake, "-S", str(ROOT), "-B", str(build), *gen, "-DTZ_BUILD_PYTHON=OFF",
                    "-DTZ_BUILD_CPP_TESTS=ON", "-DCMAKE_BUILD_TYPE=Debug",
                    f"-DTZ_SANITIZE={sanitize}"], check=True, capture_output=True)
    subprocess.run([cmake, "--build", str(build), "-j", "2"], check=True, capture_output=True)
    env = dict(os.environ, **env_extra)
    run = subprocess.run([str(build / "tz_cpp_tests")], capture_output=True, text=True,
                         env=env, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "8 passed, 0 failed" in out, out
    assert "ERROR: AddressSanitizer" not in out and "runtime error" not in out, out
    assert "WARNING: ThreadSanitizer" not in out, out
    return out


def test_cpp_tests_clean_under_address_and_undefined_sanitizers(tmp_path):
    _build_and_run(tmp_path, "address,undefined",
                   {"ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "halt_on_error=1"})


def test_cpp_tests_clean_under_thread_sanitizer(tmp_path):
    _build_and_run(tmp_path, "thread", {"TSAN_OPTIONS": "halt_on_error=1"})
