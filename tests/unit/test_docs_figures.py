"""Figures cannot go stale and names cannot dangle: every bench figure in README.md and docs/
equals its value in bench/results/*.json (``make docs`` renders them), and every repository
path that config files, docs and code comments name exists."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("render_docs", REPO / "bench" / "render_docs.py")
assert _spec is not None and _spec.loader is not None
render_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render_docs)

TOP = (
    r"(?:config|storage|tasks|service|agents|bench|docs|examples|deploy|tests|evaluation"
    r"|integrations|terminal|training)"
)
NAMED_PATH = re.compile(rf"(?<![\w./:@-]){TOP}/[\w./-]*[\w/]")


def test_every_bench_figure_in_the_docs_equals_its_results():
    problems = [problem for page in render_docs.pages() for problem in render_docs.stale(page)]
    assert not problems, "\n".join(problems) + "\n(run: make docs)"


def test_the_pages_carry_their_bench_figures_as_whole_tables_that_read_raw():
    texts = {page: page.read_text(encoding="utf-8") for page in render_docs.pages()}
    tables = sum(len(render_docs.TABLE.findall(text)) for text in texts.values())
    assert tables >= 6, tables
    for page, text in texts.items():  # a sentence carries a figure or two, never a row of them
        for number, line in enumerate(text.splitlines(), 1):
            assert len(render_docs.MARKER.findall(line)) <= 2, f"{page.name}:{number}: {line[:120]}"


def test_a_changed_or_broken_table_is_caught(tmp_path):
    page = tmp_path / "page.md"
    spec = (
        '{"file": "agent_assist", "rows": {"dev": "0"}, "columns": {"right": "suggested_reply_right"}}'
    )
    page.write_text(f"<!-- bench-table {spec} -->\n| stale |\n<!-- /bench-table -->\n")
    (problem,) = render_docs.stale(page)
    assert "is stale" in problem
    rendered = render_docs.render(page.read_text())
    assert "| stale |" not in rendered and "|  | right |" in rendered
    page.write_text(rendered)
    assert render_docs.stale(page) == []
    page.write_text('<!-- bench-table {"file": "agent_assist"} -->\n<!-- /bench-table -->\n')
    assert "not a valid spec" in render_docs.stale(page)[0]


def test_a_changed_result_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- bench:service/now/turns_per_second -->0.1<!-- /bench -->\n")
    (problem,) = render_docs.stale(page)
    assert "service/now/turns_per_second shows '0.1'" in problem
    assert render_docs.stale(page) != [] and "0.1" not in render_docs.render(page.read_text())
    page.write_text("<!-- bench:service/now/no_such_figure -->1<!-- /bench -->\n")
    assert "has no 'now/no_such_figure'" in render_docs.stale(page)[0]


def named_paths(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return {
        found.group(0).rstrip("./")
        for found in NAMED_PATH.finditer(text)
        # a pattern, not a path: bench/results/answers_<pack>_curve.png, results/*.json
        if text[found.end() : found.end() + 1] not in ("<", "*") and "..." not in found.group(0)
    }


def sources() -> list[Path]:
    found = [
        REPO / "README.md",
        *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "config").glob("*.yaml")),
        # model cards, the fitted files' own notes and the data sets' headers
        *sorted((REPO / "storage" / "kb" / "assets").rglob("*.md")),
        *sorted((REPO / "storage" / "kb" / "assets").rglob("*.json")),
        *sorted((REPO / "storage" / "kb" / "assets").rglob("*.yaml")),
        *sorted((REPO / "examples").rglob("*.yaml")),
        *sorted((REPO / "training").glob("*.md")),
    ]
    for top in (
        "config",
        "storage",
        "tasks",
        "service",
        "agents",
        "evaluation",
        "integrations",
        "terminal",
        "deploy",
        "bench",
        "training",
    ):
        found += sorted((REPO / top).rglob("*.py"))
    return found


def exists(name: str) -> bool:
    """A file or folder; ``tasks/decision.assess`` (a module's name); a results stem whose
    suffixes follow in braces (``bench/results/service.{md,json}``)."""
    module, _, _attribute = name.rpartition(".")
    return (
        (REPO / name).exists()
        or (REPO / f"{module}.py").exists()
        or any((REPO / name).parent.glob((REPO / name).name + ".*"))
    )


def test_every_repository_path_named_in_config_docs_and_comments_exists():
    dangling = sorted(
        f"{source.relative_to(REPO)}: {name}"
        for source in sources()
        for name in named_paths(source)
        if not exists(name) and not name.startswith("agents/tasks")  # CrewAI's agents/tasks
    )
    assert not dangling, dangling
