"""The architecture the layout promises: one-way dependencies, no framework under storage/,
no import cycle between top-level packages, no environment changes on import, and a README
layout section that matches the tree."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = (
    "config",
    "storage",
    "tasks",
    "integrations",
    "agents",
    "service",
    "terminal",
    "evaluation",
    "training",
)
# what each top-level package may import (interfaces -> agents -> tasks -> storage -> config)
ALLOWED = {
    "config": {"config"},
    "storage": {"config", "storage"},
    "tasks": {"config", "storage", "tasks"},
    "integrations": {"config", "storage", "integrations"},
    "agents": {"config", "storage", "tasks", "integrations", "agents"},
    "service": {"config", "storage", "tasks", "agents", "service"},
    "terminal": {"config", "storage", "tasks", "agents", "terminal"},
    "evaluation": {"config", "storage", "tasks", "agents", "evaluation"},
    # a developer step: it fits what the product ships (the pilot's topic floor included),
    # the product never imports it
    "training": {"config", "storage", "tasks", "agents", "service", "evaluation", "training"},
    "main": {*PACKAGES} - {"training"},
}
FRAMEWORKS = (
    "crewai",
    "autogen_core",
    "autogen_agentchat",
    "autogen_ext",
    "fastapi",
    "starlette",
    "uvicorn",
)


def modules() -> list[Path]:
    found = [REPO / "main.py"]
    for package in PACKAGES:
        found += sorted((REPO / package).rglob("*.py"))
    return found


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def owner(path: Path) -> str:
    return path.relative_to(REPO).parts[0].removesuffix(".py")


def test_dependencies_run_one_way():
    wrong = []
    for path in modules():
        for name in imports(path):
            top = name.split(".")[0]
            if top in PACKAGES and top not in ALLOWED[owner(path)]:
                wrong.append(f"{path.relative_to(REPO)} imports {name}")
    assert not wrong, wrong


def test_no_agent_framework_or_web_framework_under_storage():
    wrong = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in (REPO / "storage").rglob("*.py")
        for name in imports(path)
        if name.split(".")[0] in FRAMEWORKS
    ]
    assert not wrong, wrong


def test_no_import_cycle_between_top_level_packages():
    graph: dict[str, set[str]] = {}
    for path in modules():
        graph.setdefault(owner(path), set()).update(
            name.split(".")[0]
            for name in imports(path)
            if name.split(".")[0] in PACKAGES and name.split(".")[0] != owner(path)
        )
    state: dict[str, str] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                pytest.fail("import cycle: " + " -> ".join([*trail, node, nxt]))
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def module_name(path: Path) -> str:
    """``agents/crewai/flow.py`` -> ``agents.crewai.flow``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def file_imports(path: Path, known: set[str]) -> set[str]:
    """The repository's modules a file imports (lazily too): ``from a.b import c`` names the
    module ``a.b.c`` when it is one, else ``a.b``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in known:
                    found.add(f"{node.module}.{alias.name}")
                elif node.module in known:
                    found.add(node.module)
    return found


def test_no_import_cycle_between_files():
    """Not between packages, and not between two files of one package either (an import
    inside a function counts: it is a circle a reader must keep in mind all the same)."""
    files = {module_name(path): path for path in modules()}
    known = set(files)
    graph = {name: file_imports(path, known) - {name} for name, path in files.items()}
    state: dict[str, str] = {}
    circles: list[str] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                circles.append(
                    " -> ".join([*trail[trail.index(nxt) :], nxt] if nxt in trail else [node, nxt])
                )
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not circles, circles


def test_importing_storage_and_tasks_changes_no_environment_variable():
    """(CrewAI itself sets TOKENIZERS_PARALLELISM on import; that is not ours to change.)"""
    probe = (
        "import os, json; before = dict(os.environ); "
        "import storage.kb.embeddings, storage.kb.knowledge_base, storage.retrieval.retriever, "
        "storage.memory, storage.qdrant.backends, tasks.gates, tasks.answerability; "
        "print(json.dumps(sorted(set(os.environ.items()) ^ set(before.items()))))"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "CREWAI_DISABLE_TELEMETRY")
    }
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_readme_layout_section_matches_the_tree():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    listed = {
        line.split()[0].rstrip("/")
        for line in section.split("```")[1].splitlines()
        if line.strip() and not line.startswith(" ")
    }
    packages = {
        str(p.parent.relative_to(REPO))
        for p in REPO.glob("*/**/__init__.py")
        if p.relative_to(REPO).parts[0] != "tests" and not p.relative_to(REPO).parts[0].startswith(".")
    }
    assert packages <= listed, sorted(packages - listed)
    assert all((REPO / path).exists() for path in listed), sorted(
        p for p in listed if not (REPO / p).exists()
    )


AGENT_FRAMEWORKS = {
    "crewai": "agents/crewai/",
    "autogen": "agents/autogen/",
    "autogen_core": "agents/autogen/",
    "autogen_agentchat": "agents/autogen/",
    "autogen_ext": "agents/autogen/",
}


def test_each_agent_framework_is_imported_only_in_its_own_room():
    """The turn's steps, the tools, the LLM backends, tasks and evaluation are framework-free:
    an engine's room adapts them, so AutoGen runs without CrewAI installed and back."""
    wrong = []
    for path in modules():
        where = str(path.relative_to(REPO))
        for name in imports(path):
            room = AGENT_FRAMEWORKS.get(name.split(".")[0])
            if room is not None and not where.startswith(room):
                wrong.append(f"{where} imports {name}")
    assert not wrong, wrong


def test_sentence_ends_and_word_patterns_are_defined_once():
    """storage/text.py holds the sentence rules and the word patterns; a second copy drifts."""
    copies = []
    for path in modules():
        if path == REPO / "storage" / "text.py":
            continue
        text = path.read_text(encoding="utf-8")
        for needle in (
            "(?<=[.!?])",
            r're.compile(r"\w+")',
            r"[A-Za-z0-9][A-Za-z0-9\-]*",
            r"[a-z0-9][a-z0-9\-]*",
        ):
            if needle in text:
                copies.append(f"{path.relative_to(REPO)}: {needle}")
    assert not copies, copies


def test_bench_measures_and_training_fits_without_reaching_into_each_other():
    """bench/ runs training only through its command line; training/ needs no bench helper;
    neither edits sys.path (``python -m training.fit_decision``, ``python -m bench.service``
    from the repository)."""
    reach = []
    for path in sorted((REPO / "bench").glob("*.py")):
        reach += [f"{path.name} imports {n}" for n in imports(path) if n.split(".")[0] == "training"]
    for path in sorted((REPO / "training").glob("*.py")):
        reach += [f"{path.name} imports {n}" for n in imports(path) if n.split(".")[0] == "bench"]
    for path in sorted([*(REPO / "bench").glob("*.py"), *(REPO / "training").glob("*.py")]):
        if "sys.path" in path.read_text(encoding="utf-8"):
            reach.append(f"{path.relative_to(REPO)} edits sys.path")
    assert not reach, reach


def test_every_bench_script_runs_as_a_module_of_the_bench_package():
    """``python -m bench.<name>`` from the repository root: each script imports its helpers
    from the package (a bare ``_common`` import needs the folder on sys.path). ``service``
    stays the repository's package, not ``bench/service.py``."""
    siblings = {
        path.stem
        for path in (REPO / "bench").glob("*.py")
        if not (REPO / path.stem).is_dir() and not (REPO / f"{path.stem}.py").exists()
    }
    bare = [
        f"{path.name} imports {n}"
        for path in sorted((REPO / "bench").glob("*.py"))
        for n in imports(path)
        if n.split(".")[0] in siblings
    ]
    assert (REPO / "bench" / "__init__.py").exists()
    assert not bare, bare
