"""Docs that cannot drift (issue 35, item 5): docs/architecture.md names every module of the
library, and every docs section that code, tests, benchmarks or the C++ cite
(`docs/<file>.md, "Section"`) exists there, as a heading or a bold lead-in (`**Section.**`)."""

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("turbozero", "envs", "equity")
CITING = PACKAGES + ("benchmarks", "tests", "cpp")
# docs/<file>.md, then a quoted section starting with a capital or a backtick; a citation may
# run over comment lines (the flattening below joins them)
CITATION = re.compile(r'docs/([\w/.-]+\.md)[,:]?\s*\(?\s*["“]([A-Z`Ŝ][^"”\n]{1,100})["”]')


def _modules() -> list[pathlib.Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if p.name != "__init__.py")


def test_architecture_names_every_module():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [str(p.relative_to(ROOT)) for p in _modules() if p.name not in text]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def _sections(doc: str) -> tuple[list[str], str]:
    heads = [re.sub(r"^#+\s*", "", line).strip() for line in doc.splitlines()
             if line.startswith("#")]
    return heads, doc


def _citations():
    for path in sorted(p for d in CITING for p in (ROOT / d).rglob("*")
                       if p.suffix in (".py", ".hpp", ".cpp") and ".venv" not in p.parts):
        # comment markers and line breaks out, so a citation broken over lines reads whole
        flat = re.sub(r"\n\s*(#|//)?\s*", " ", path.read_text(encoding="utf-8"))
        for m in CITATION.finditer(flat):
            yield path.relative_to(ROOT), m.group(1), m.group(2).strip()


CITATIONS = list(_citations())


def test_citations_were_found():
    assert len(CITATIONS) > 50  # the scan itself works (90 when this test was written)


@pytest.mark.parametrize("where, doc, section", CITATIONS,
                         ids=[f"{w}:{s[:30]}" for w, _, s in CITATIONS])
def test_every_cited_docs_section_exists(where, doc, section):
    path = ROOT / "docs" / doc
    assert path.exists(), f"{where} cites docs/{doc}, which does not exist"
    heads, text = _sections(path.read_text(encoding="utf-8"))
    assert any(section in h for h in heads) or f"**{section}" in text, (
        f'{where} cites docs/{doc}, "{section}": no such heading or bold lead-in there')


BENCHMARK_FOLDERS = ("throughput", "experiments", "tools")


def test_benchmarks_live_in_three_folders_and_name_what_they_feed():
    """benchmarks/ holds throughput/ (what docs/benchmarks.md cites), experiments/ (learning and
    ablations) and tools/ (timing, plotting, profiling), nothing else; every script opens with a
    docstring that cites the docs section it feeds (issue 35, item 2)."""
    bench = ROOT / "benchmarks"
    stray = [p.name for p in bench.iterdir()
             if p.name not in BENCHMARK_FOLDERS and p.name != "__pycache__"]
    assert not stray, f"benchmarks/ holds files outside {BENCHMARK_FOLDERS}: {stray}"
    unsaid = []
    for path in sorted(p for d in BENCHMARK_FOLDERS for p in (bench / d).glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if not CITATION.search(re.sub(r"\s*\n\s*", " ", doc)):
            unsaid.append(str(path.relative_to(ROOT)))
    assert not unsaid, f"no docstring citing its docs section (docs/<file>.md, \"Section\"): {unsaid}"


def test_test_folders_mirror_the_packages():
    """Each folder of tests/ is named after a package of the library (envs, equity, or a
    subpackage of turbozero), so a module's tests are found where the module is (issue 35,
    item 6)."""
    packages = {"envs", "equity"} | {p.name for p in (ROOT / "turbozero").iterdir()
                                     if (p / "__init__.py").exists()}
    folders = {p.name for p in (ROOT / "tests").iterdir()
               if p.is_dir() and p.name not in ("data", "__pycache__")}
    assert folders, "tests/ has no package folders"
    assert folders <= packages, f"tests/ folders that name no package: {folders - packages}"
