"""The docs: every option, key and column described; generated pages current; every rule and benchmark has its page.

The generated reference blocks are rebuilt here from the code and compared with the committed pages (as the
golden checklist is). When one is stale, `python -m pipebench.docs` rewrites it. `mkdocs build --strict`
(scripts/test.sh) checks the links.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipebench import config, docs
from pipebench.config import Field

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_every_option_key_and_column_has_a_description():
    missing = docs.undocumented()
    assert not missing, ("give each a description (help= on the argument, doc= on the config Field or an entry in "
                         "config.SECTIONS, results/column_docs.py), then run `python -m pipebench.docs`:\n  "
                         + "\n  ".join(missing))


def test_generated_pages_are_current():
    problems = docs.problems(DOCS)
    assert not problems, "\n".join(problems)


def test_a_stale_block_is_found_and_rewritten(tmp_path):
    page = tmp_path / "docs" / "errors.md"
    page.parent.mkdir()
    begin = "<!-- BEGIN GENERATED errors: python -m pipebench.docs writes this block; edit the code, not the page -->"
    page.write_text(f"# Errors\n\n{begin}\n\n| an old table |\n\n<!-- END GENERATED errors -->\n\nBy hand.\n")
    found = docs.problems(page.parent)
    assert f"docs/errors.md: stale; run `{docs.REGENERATE}`" in found
    assert docs.main(["--docs", str(page.parent)]) == 0
    text = page.read_text()
    assert "| an old table |" not in text and "`UsageError` | 2 |" in text and text.endswith("By hand.\n")
    assert not [p for p in docs.problems(page.parent) if "stale" in p]


def test_an_option_without_help_is_named(monkeypatch):
    def parser() -> argparse.ArgumentParser:
        made = argparse.ArgumentParser(prog="pipebench")
        commands = made.add_subparsers(dest="command")
        run = commands.add_parser("run", help="run an experiment")
        run.add_argument("--rounds", type=int, help="rounds")
        run.add_argument("--quiet", action="store_true")
        return made

    monkeypatch.setattr("pipebench.cli.build_parser", parser)  # pipebench.docs imports it when called
    assert docs.undocumented_options() == ["pipebench run --quiet"]


def test_a_key_without_doc_is_named(monkeypatch):
    schema = {**config.SCHEMA, "grid": {**config.SCHEMA["grid"], "new_knob": Field(int, 1)}, "extra": {}}
    monkeypatch.setattr(config, "SCHEMA", schema)
    assert docs.undocumented_keys() == ["grid.new_knob", "extra"]


@pytest.mark.slow
def test_the_generator_imports_no_tensorflow():
    code = ("import sys; from pipebench import docs; docs.pages(); docs.undocumented(); "
            "assert 'tensorflow' not in sys.modules, 'pipebench.docs imported TensorFlow'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def _rule_ids() -> set[str]:
    """Give every checklist item id the code can emit: the first argument of each `_item(...)` or `Item(...)` call,
    and the migration notes' ids."""
    from pipebench.report.checklist import MIGRATION

    found = set()
    for module in ("checklist.py", "service_sizing.py"):  # the rules, and the service sizing's item
        tree = ast.parse((ROOT / "pipebench" / "report" / module).read_text())
        found |= {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and getattr(node.func, "id", None) in ("_item", "Item") and isinstance(node.args[0], ast.Constant)}
    return found | {note.id for note in MIGRATION}


def test_checklist_rules_page_has_one_entry_per_rule():
    text = (DOCS / "reference" / "checklist-rules.md").read_text()
    headed = set(re.findall(r"^## `(\w+)`$", text, re.M))
    listed = set(re.findall(r"^\| `(\w+)` \|", text, re.M))  # the migration notes' table
    ids = _rule_ids()
    assert ids - headed - listed == set(), "rules without an entry in docs/reference/checklist-rules.md"
    assert headed - ids == set(), "entries in docs/reference/checklist-rules.md for rules the code no longer has"


@pytest.mark.parametrize("script", sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py")))
def test_every_benchmark_has_its_performance_page(script):
    page = DOCS / "performance" / f"{script}.md"
    assert page.exists(), f"benchmarks/{script}.py has no page {page.relative_to(ROOT)}"
    text = page.read_text()
    assert f"benchmarks/{script}.py" in text, f"{page.name} does not say how to run benchmarks/{script}.py"
    assert re.search(r"20\d\d-\d\d-\d\d", text), f"{page.name} has no dated figure"
    nav = (ROOT / "mkdocs.yml").read_text()
    assert f"performance/{script}.md" in nav, f"{page.name} is not in mkdocs.yml's nav"


def test_readme_is_short_and_its_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.split()) <= 1500, "README.md is over 1,500 words: move the detail into docs/"
    links = re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", text)
    assert links, "README.md links into the docs"
    assert [link for link in links if not (ROOT / link).exists()] == []
