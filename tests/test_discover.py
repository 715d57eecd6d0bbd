"""The one directory walk (``sources.discover``): check, fleet and the readers list the same sources
for a folder; readers' walk hooks group files; the agents' own data folders for no-argument runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import invoke
from ctxhealth.cli.check import count_inputs
from ctxhealth.sources import discover, read_sessions
from ctxhealth.sources.homes import agent_homes, installed_homes
from ctxhealth.sources.walk import Source, WalkHooks, walk

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"


def _folder(root: Path) -> Path:
    """A project folder as a user has one: sessions, a writer's hidden temporary file, a hidden
    folder, a session with a sub-agent file, and a file that is not a transcript."""
    (root / "proj" / "one" / "subagents").mkdir(parents=True)
    (root / "proj" / ".cache").mkdir()
    (root / "other").mkdir()
    shutil.copy(EXAMPLE, root / "proj" / "one.jsonl")
    shutil.copy(EXAMPLE, root / "proj" / "one" / "subagents" / "agent-1.jsonl")
    shutil.copy(EXAMPLE, root / "proj" / ".partial.jsonl")
    shutil.copy(EXAMPLE, root / "proj" / ".cache" / "x.jsonl")
    shutil.copy(EXAMPLE, root / "other" / "two.jsonl")
    (root / "other" / "notes.txt").write_text("not a transcript\n")
    return root


def _check_paths(root: Path) -> set[str]:
    result = invoke("check", "--json", str(root))
    assert result.exit_code in (0, 1), result.output
    docs = [orjson.loads(line) for line in result.stdout.splitlines()]
    return {str(Path(d["path"]).resolve()) for d in docs if "path" in d}


def test_check_and_fleet_read_the_same_files_of_a_folder(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb", reason="the fleet extra (duckdb) is not installed")
    root = _folder(tmp_path / "sessions")
    db = tmp_path / "fleet.duckdb"
    assert invoke("fleet", str(root), "--out", str(db), "-j", "1").exit_code in (0, 1)
    con = duckdb.connect(str(db), read_only=True)
    try:
        fleet_paths = {row[0] for row in con.execute("select path from sessions").fetchall()}
    finally:
        con.close()
    checked = _check_paths(root)
    assert checked == fleet_paths
    # the hidden writer's file and the hidden folder are read by neither; the sub-agent is no session
    assert checked == {str((root / p).resolve()) for p in ("proj/one.jsonl", "other/two.jsonl")}


def test_the_progress_total_is_the_number_of_sources_the_readers_read(tmp_path: Path) -> None:
    root = _folder(tmp_path / "sessions")
    assert count_inputs((str(root),)) == len(discover([root])) == 3  # two sessions, notes.txt
    assert len(list(read_sessions([root]))) == 2


def test_a_session_s_sub_agent_files_are_its_companions(tmp_path: Path) -> None:
    root = _folder(tmp_path / "sessions")
    by_name = {Path(s.path).name: s for s in discover([root])}
    one = by_name["one.jsonl"]
    sub = root / "proj" / "one" / "subagents" / "agent-1.jsonl"
    assert one.companions == (str(sub),)
    assert one.size == EXAMPLE.stat().st_size * 2  # the fingerprint covers the sub-agent file
    (session,) = [s for s in read_sessions([root / "proj" / "one.jsonl"])]
    assert [side.path for side in session.sidechains] == [str(sub)]


def test_a_reader_s_group_hook_makes_a_folder_one_source(tmp_path: Path) -> None:
    """A third-party format registers its grouping the way the built-in OpenHands reader does."""
    (tmp_path / "run").mkdir()
    for name in ("a.step", "b.step", "c.txt"):
        (tmp_path / "run" / name).write_text(name)

    def steps(folder: Path, files: Any) -> list[Path]:
        return [f for f in files if f.suffix == ".step"]

    sources = list(walk(tmp_path, [WalkHooks(group=steps)]))
    assert [(Path(s.path).name, [Path(m).name for m in s.members]) for s in sources] == [
        ("run", ["a.step", "b.step"]),
        ("c.txt", []),
    ]
    assert isinstance(sources[0], Source) and sources[0].grouped and sources[0].size == 12


def test_openhands_call_folders_group_the_same_for_every_command(openhands_data: Path) -> None:
    calls = openhands_data / "llm_completions"
    sources = discover([calls])
    folders = sorted(p for p in calls.iterdir() if p.is_dir())
    assert [Path(s.path) for s in sources] == folders
    assert all(len(s.members) == len(list(Path(s.path).glob("*.json"))) for s in sources)
    assert len(list(read_sessions([calls]))) == len(folders)


def test_agent_homes_honour_the_agents_own_variables(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "CODEX_HOME": str(tmp_path / "cx")}
    homes = {(h.agent, str(h.path), h.origin) for h in agent_homes(env, tmp_path / "home")}
    assert ("claude-code", str(tmp_path / "cc" / "projects"), "CLAUDE_CONFIG_DIR") in homes
    assert ("codex", str(tmp_path / "cx" / "sessions"), "CODEX_HOME") in homes
    assert ("gemini", str(tmp_path / "home" / ".gemini" / "tmp"), "default") in homes
    defaults = {str(h.path) for h in agent_homes({}, tmp_path / "home")}
    assert str(tmp_path / "home" / ".claude" / "projects") in defaults
    assert str(tmp_path / "home" / ".codex" / "sessions") in defaults
    assert installed_homes(env, tmp_path / "home") == []


def test_check_with_no_path_reads_every_installed_agent_s_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-repo"
    project.mkdir(parents=True)
    shutil.copy(EXAMPLE, project / "s.jsonl")
    codex = tmp_path / "codex-home" / "sessions" / "2026"
    codex.mkdir(parents=True)
    shutil.copy(Path(__file__).parent / "fixtures" / "codex-rollout.jsonl", codex / "rollout-1.jsonl")
    env = {"HOME": str(home), "CODEX_HOME": str(tmp_path / "codex-home"), "CLAUDE_CONFIG_DIR": ""}
    result = invoke("check", "--json", env=env)
    assert result.exit_code in (0, 1), result.output
    docs = [orjson.loads(line) for line in result.stdout.splitlines()]
    formats = sorted(d["format"] for d in docs if "format" in d)
    assert formats == ["claude-code", "codex"]
    assert "reading" in result.stderr and "$CODEX_HOME" in result.stderr


def test_no_path_and_no_agent_installed_says_where_it_looked(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": ""}
    result = invoke("check", env=env)
    assert result.exit_code == 2
    assert str(tmp_path / ".claude" / "projects") in result.output


@pytest.mark.parametrize(
    "args",
    [["insights", "--json"], ["audit", "--json", "--check", "cache"], ["report", "-o", "{out}"]],
)
def test_other_commands_with_no_path_read_the_agents_sessions(tmp_path: Path, args: list[str]) -> None:
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-repo"
    project.mkdir(parents=True)
    shutil.copy(EXAMPLE, project / "s.jsonl")
    argv = [a.replace("{out}", str(tmp_path / "r.html")) for a in args]
    result = invoke(*argv, env={"HOME": str(home), "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": ""})
    assert result.exit_code in (0, 1), result.output
    assert f"reading {home / '.claude' / 'projects'} (claude-code)" in result.stderr
    if args[0] == "insights":
        assert json.loads(result.stdout)["sessions"] == 1
    elif args[0] == "audit":
        assert any('"path"' in line and "s.jsonl" in line for line in result.stdout.splitlines())
    else:
        assert (tmp_path / "r.html").stat().st_size > 0


def test_the_resolver_names_every_path_as_resolving_it_does(tmp_path: Path, monkeypatch: Any) -> None:
    from ctxhealth.sources.walk import resolver

    real = tmp_path / "real" / "project"
    real.mkdir(parents=True)
    (real / "a.jsonl").write_text("{}\n")
    (tmp_path / "elsewhere.jsonl").write_text("{}\n")
    (real / "link.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")  # a linked file: its target
    (real / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (tmp_path / "linked").symlink_to(tmp_path / "real")  # a linked folder above the files
    (real / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "real")
    names = ["a.jsonl", "link.jsonl", "dangling.jsonl", "missing.jsonl", "sub", ".", ".."]
    folders = [real, tmp_path / "linked" / "project", Path("project"), Path("project/sub/.."), Path(".")]
    paths = [folder / name for folder in folders for name in names] + [Path("a"), Path("/")]
    resolve = resolver()
    for path in paths * 2:  # the second time from the folders it keeps
        assert resolve(path) == str(path.resolve()), path
