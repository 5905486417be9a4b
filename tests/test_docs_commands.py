"""Every `msprobe …` command in the documentation runs, as written, against examples/.

Commands are taken from fenced ``bash``/``sh``/``shell``/``console`` blocks of ``docs/**/*.md`` and
``README.md``. They run from the repository root, one page at a time and in page order (a later
command may read what an earlier one wrote); every ``output/…`` path is redirected into a temporary
directory. Conventions a page can use:

* ``# exits N`` at the end of a command: the expected exit status (default 0);
* ``VAR=value msprobe …``: environment for that command;
* ``<!-- docs-test: needs example-plugin -->`` before a block: install examples/plugins/msprobe_example_plugin first;
* ``<!-- docs-test: pending REASON -->`` before a block: the feature is not built yet; the commands are
  expected to fail and are skipped with REASON — and the test fails once they succeed, so the marker
  gets removed when the feature lands.

A synopsis line with placeholders (``TARGET``, ``[-o OUT]``, ``tcp://SCHEDULER_HOST:8786``, ``<dir>``,
``$VAR``) is not a command and is left out.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .plugin_fixture import example_plugin  # noqa: F401  (the fixture, for pages that need the plugin)

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
SHELL_LANGS = {"bash", "sh", "shell", "console"}
MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<kind>needs|pending|skip)\s+(?P<arg>.*?)\s*-->")
PLACEHOLDER = re.compile(r"^(\[.*|.*\]|[A-Z][A-Z_]*[A-Z](/.*)?)$|<[^>]+>|\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b|\$")


@dataclass
class Command:
    """One command of a page."""

    page: Path
    line: int
    text: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0
    needs: set[str] = field(default_factory=set)
    pending: str | None = None
    skip: str | None = None


def _logical_lines(block: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for lineno, raw in block:
        line = raw.rstrip()
        if not buf:
            start = lineno
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append((start, buf + line))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


def extract(page: Path) -> tuple[list[Command], int]:
    """The page's commands, and how many synopsis lines were left out."""
    lines = page.read_text(encoding="utf-8").splitlines()
    commands: list[Command] = []
    synopses = 0
    i = 0
    markers: list[tuple[str, str]] = []
    while i < len(lines):
        m = MARKER.search(lines[i])
        if m:
            markers.append((m.group("kind"), m.group("arg")))
            i += 1
            continue
        fence = re.match(r"^\s*```(\w*)\s*$", lines[i])
        if not fence:
            if lines[i].strip():
                markers = []
            i += 1
            continue
        lang = fence.group(1).lower()
        j = i + 1
        block: list[tuple[int, str]] = []
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            block.append((j + 1, lines[j]))
            j += 1
        if lang in SHELL_LANGS:
            for lineno, text in _logical_lines(block):
                cmd = _parse(page, lineno, text.strip(), lang, markers)
                if cmd is None:
                    continue
                if cmd == "synopsis":
                    synopses += 1
                else:
                    commands.append(cmd)
        markers = []
        i = j + 1
    return commands, synopses


def _parse(page: Path, lineno: int, text: str, lang: str, markers: list[tuple[str, str]]) -> Command | str | None:
    if lang == "console":
        if not text.startswith("$ "):
            return None
        text = text[2:]
    exit_code = 0
    m = re.search(r"#\s*exits?\s+(\d+)\s*$", text)
    if m:
        exit_code = int(m.group(1))
    tokens = shlex.split(text, comments=True)
    env: dict[str, str] = {}
    while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
        k, v = tokens.pop(0).split("=", 1)
        env[k] = v
    if not tokens or tokens[0] != "msprobe":
        return None
    if any(PLACEHOLDER.search(t) for t in tokens[1:]):
        return "synopsis"
    cmd = Command(page, lineno, text, tokens[1:], env, exit_code)
    for kind, arg in markers:
        if kind == "needs":
            cmd.needs.add(arg)
        elif kind == "pending":
            cmd.pending = arg
        else:
            cmd.skip = arg
    return cmd


def _redirect(argv: list[str], out: Path) -> list[str]:
    redirected = []
    for token in argv:
        for prefix in ("./output/", "output/"):
            if token.startswith(prefix):
                token = str(out / token[len(prefix) :])
                break
        else:
            if token in ("output", "./output"):
                token = str(out)
        redirected.append(token)
    return redirected


def _run(cmd: Command, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(cmd.env)
    return subprocess.run([sys.executable, "-m", "msprobe_core", *_redirect(cmd.argv, out)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)


def _pages_with_commands() -> list:
    params = []
    for page in PAGES:
        commands, _ = extract(page)
        if commands:
            params.append(pytest.param(page, id=str(page.relative_to(REPO))))
    return params


@pytest.mark.parametrize("page", _pages_with_commands())
def test_page_commands_run(page: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    commands, _ = extract(page)
    if any("example-plugin" in c.needs for c in commands):
        request.getfixturevalue("example_plugin")
    out = tmp_path / "output"
    pending = []
    for cmd in commands:
        if cmd.skip:
            continue
        proc = _run(cmd, out)
        where = f"{page.relative_to(REPO)}:{cmd.line}: msprobe {' '.join(cmd.argv)}"
        if cmd.pending:
            if proc.returncode == cmd.exit_code:
                pytest.fail(f"{where} now works: remove its 'docs-test: pending' marker")
            pending.append(f"{where} ({cmd.pending})")
            continue
        assert proc.returncode == cmd.exit_code, (
            f"{where}\nexit {proc.returncode}, expected {cmd.exit_code}\n--- stdout\n{proc.stdout[-3000:]}\n"
            f"--- stderr\n{proc.stderr[-3000:]}"
        )
        assert "Traceback" not in proc.stderr, where
    if pending:
        pytest.skip("feature not built yet: " + "; ".join(pending))


def test_no_command_is_pending_or_skipped() -> None:
    """Every documented feature has landed: no page may keep a pending or skip marker."""
    left = [f"{c.page.relative_to(REPO)}:{c.line}: {c.pending or c.skip}" for p in PAGES for c in extract(p)[0]
            if c.pending or c.skip]
    assert left == []


def test_every_scenario_page_has_a_runnable_command() -> None:
    scenarios = sorted((REPO / "docs" / "scenarios").glob("*.md"))
    names = {p.stem for p in scenarios}
    assert names >= {"pytorch", "mindspore", "cross-framework", "kernel", "mixed-graph-pynative", "debug-save",
                     "multi-rank", "fuzzy-match", "first-divergence", "merge-result", "classic-interface"}
    for page in scenarios:
        commands, _ = extract(page)
        assert commands, f"{page.name} has no msprobe command"
        for cmd in commands:
            for token in cmd.argv:
                if token.startswith("examples/"):
                    assert (REPO / token).exists(), f"{page.name}:{cmd.line}: {token} does not exist"


def _install_lines(page: Path) -> list[str]:
    """The ``pip install -e …`` lines of a page's fenced blocks, comments cut."""
    lines, fenced = [], False
    for raw in page.read_text(encoding="utf-8").splitlines():
        if raw.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced and raw.strip().startswith("pip install -e"):
            lines.append(raw.split("#", 1)[0].strip())
    return lines


def test_readme_and_quickstart_give_one_install_line() -> None:
    """The same single line in both, installing the core and every plugin of the checkout but dask's (and not
    msprobe-testing, the pytest plugin of plugin authors' tests: a user who only runs compares needs none of it)."""
    readme, quickstart = _install_lines(REPO / "README.md"), _install_lines(REPO / "docs" / "quickstart.md")
    assert len(readme) == 1 and readme == quickstart, (readme, quickstart)
    tokens = shlex.split(readme[0])
    paths = tokens[2:][1::2]
    assert tokens[2:][::2] == ["-e"] * len(paths) and paths[0] == "."
    plugins = {f"plugins/{p.name}" for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file()}
    assert set(paths[1:]) == plugins - {"plugins/dask", "plugins/testing"}


def _committed(pages: list[Path]) -> list[Path]:
    """The pages git tracks (a page another developer is still writing is left alone); all of them without git."""
    try:
        proc = subprocess.run(["git", "ls-files", "--", *map(str, pages)], cwd=REPO, capture_output=True, text=True,
                              timeout=600)
    except OSError:
        return pages
    if proc.returncode != 0:
        return pages
    tracked = {REPO / line for line in proc.stdout.splitlines()}
    return [p for p in pages if p in tracked] or pages


def test_local_links_resolve() -> None:
    """Relative links between the pages (and to files of the repository) point at something."""
    for page in _committed(PAGES):
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"^[a-z]+://", target):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(REPO)}: broken link {target}"


def test_extractor_conventions(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "text\n\n```bash\nmsprobe compare -tp A/x -gp B \\\n  -o output/x  # exits 1\n"
        "MSPROBE_X=1 msprobe plugins\npip install foo\nmsprobe compare -tp TARGET -gp GOLDEN [-o OUT]\n"
        "msprobe compare -tp /d/t -gp /d/g --scheduler tcp://SCHEDULER_HOST:8786\n```\n\n"
        "<!-- docs-test: pending the thing -->\n```console\n$ msprobe report output/r.csv\nnot a command\n```\n"
        "```text\nmsprobe not run\n```\n"
    )
    commands, synopses = extract(page)
    assert [c.argv for c in commands] == [["compare", "-tp", "A/x", "-gp", "B", "-o", "output/x"], ["plugins"],
                                          ["report", "output/r.csv"]]
    assert commands[0].exit_code == 1 and commands[1].env == {"MSPROBE_X": "1"}
    assert commands[2].pending == "the thing" and commands[0].pending is None
    assert synopses == 2
    assert _redirect(["-o", "output/x", "output"], tmp_path) == ["-o", str(tmp_path / "x"), str(tmp_path)]
