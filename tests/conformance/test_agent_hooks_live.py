"""ctxhealth's hooks installed in the real Codex CLI and Gemini CLI (scratch HOME): they fire, and
what they inject shows up in the next request the fake model server logs (the truth)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .claude_harness import check_json
from .fake_openai import FakeOpenAI
from .run_codex import codex_exec, rollout_of, stated_windows, write_config
from .test_codex import MODEL as CODEX_MODEL

pytestmark = pytest.mark.conformance


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(model=CODEX_MODEL) as fake:
        yield fake


def _install(agent: str, folder: Path, ctxhealth_home: Path) -> None:
    command = [sys.executable, "-c", "from ctxhealth.cli.main import main; main()"]
    done = subprocess.run(
        [*command, "install", agent, "--dir", str(folder), "--python", sys.executable, "--apply"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(folder.parent), "CTXHEALTH_HOME": str(ctxhealth_home), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _notes(body: object) -> list[str]:
    """The ``[ctxhealth]`` notes a request carries (what the hooks injected that the model read)."""
    text = json.dumps(body)
    return sorted({part.split("\\n", 1)[0][:80] for part in text.split("[ctxhealth]")[1:]})


def test_codex_hooks_fire_and_the_spiral_note_reaches_the_model(tmp_path: Path, openai: FakeOpenAI) -> None:
    codex_home = tmp_path / "codex"
    write_config(tmp_path, openai, model=CODEX_MODEL, provider="custom")
    _install("codex", codex_home, tmp_path / "ctxhealth")
    script = "Fix it.\n" + "\n".join(["STEP shell false"] * 5) + "\nSTEP say done"
    # Codex runs hooks from hooks.json only once the person trusted them (its /hooks review); this
    # scratch HOME has nobody to review them, so the run bypasses that, as its own docs say to.
    codex_exec(tmp_path, "--dangerously-bypass-hook-trust", script)
    turns = openai.exchanges("turn")
    notes = [_notes(e.body) for e in turns]
    assert any(any("Failure spiral" in n for n in ns) for ns in notes), notes
    first = next(i for i, ns in enumerate(notes) if any("Failure spiral" in n for n in ns))
    assert first >= 3  # not before three calls had failed
    from ctxhealth.integrations.claude_code.assess import tool_counts
    from ctxhealth.integrations.claude_code.tailstate import load_counters

    # the hooks ran in Codex's environment: ctxhealth's home is the scratch HOME's
    counters = load_counters(str(tmp_path / "home" / ".ctxhealth"), str(rollout_of(tmp_path)))
    assert counters is not None and tool_counts(counters).failed >= 3
    # the hooks read the real rollout from the last cut its reader could resume at, not whole
    cut = (counters.reader or {}).get("cut") or {}
    assert counters.reader is not None and counters.reader["format"] == "codex"
    assert 0 < cut["offset"] <= rollout_of(tmp_path).stat().st_size and cut["messages"] > 0


def test_codex_checkpoint_is_given_back_after_a_real_compaction(tmp_path: Path, openai: FakeOpenAI) -> None:
    codex_home = tmp_path / "codex"
    write_config(tmp_path, openai, model=CODEX_MODEL, provider="custom", compact_limit=14000)
    _install("codex", codex_home, tmp_path / "ctxhealth")
    script = "Count.\nSTEP shell seq 1 2500\nSTEP shell seq 1 2500\nSTEP shell false\nSTEP shell seq 1 2500"
    codex_exec(tmp_path, "--dangerously-bypass-hook-trust", script + "\nSTEP say finished")
    kinds = [e.kind for e in openai.log]
    assert "compact" in kinds or any("compact" in k for k in kinds), kinds
    ledger = tmp_path / "home" / ".ctxhealth" / "ledger.db"
    import sqlite3

    with sqlite3.connect(ledger) as db:
        events = [row[0] for row in db.execute("select event from hook_events order by id")]
    # Codex: PreCompact, the compaction, PostCompact, then SessionStart(compact) re-injects
    assert events.index("PreCompact") < events.index("PostCompact") < events.index("SessionStart"), events
    after = [n for e in openai.exchanges("turn") for n in _notes(e.body)]
    assert any("Context was compacted" in n for n in after), after


def test_codex_resume_injects_nothing(tmp_path: Path, openai: FakeOpenAI) -> None:
    codex_home = tmp_path / "codex"
    write_config(tmp_path, openai, model=CODEX_MODEL, provider="custom")
    _install("codex", codex_home, tmp_path / "ctxhealth")
    trust = "--dangerously-bypass-hook-trust"
    codex_exec(tmp_path, trust, "Fix it.\nSTEP shell ls\nSTEP say first done")
    codex_exec(
        tmp_path, "resume", "--last", "--dangerously-bypass-hook-trust", "Again.\nSTEP say second done"
    )
    assert all(_notes(e.body) == [] for e in openai.exchanges("turn"))
    import sqlite3

    with sqlite3.connect(tmp_path / "home" / ".ctxhealth" / "ledger.db") as db:
        summaries = [row[0] for row in db.execute("select payload_summary from hook_events order by id")]
    assert any("source=resume" in s for s in summaries), summaries


def test_gemini_hooks_fire_and_their_notes_reach_the_model(tmp_path: Path) -> None:
    from .fake_gemini import FakeGemini
    from .run_gemini import gemini_prompt, write_settings
    from .test_gemini import MODEL as GEMINI_MODEL

    with FakeGemini(model=GEMINI_MODEL) as server:
        write_settings(tmp_path)
        _install("gemini", tmp_path / "home" / ".gemini", tmp_path / "ctxhealth")
        script = "Fix it.\n" + "\n".join(["STEP shell false"] * 5) + "\nSTEP say done"
        gemini_prompt(tmp_path, server, GEMINI_MODEL, script)
        notes = [_notes(e.body) for e in server.exchanges("turn")]
    assert any(any("Failure spiral" in n for n in ns) for ns in notes), notes


def test_codex_hooks_read_the_window_the_rollout_states(tmp_path: Path, openai: FakeOpenAI) -> None:
    """Codex states its window in the rollout (``model_context_window``, 95% of the configured one):
    the hooks' zones and advice use it, as ``check`` does. They used the registry's window of the
    model (1M for this one), so at 95% of the stated window they said green / continue."""
    codex_home = tmp_path / "codex"
    write_config(tmp_path, openai, model=CODEX_MODEL, provider="custom", extra="model_context_window = 60000")
    _install("codex", codex_home, tmp_path / "ctxhealth")
    trust = "--dangerously-bypass-hook-trust"
    # the prompt and its answer are ~90K characters each: the second request is past 90% of the window
    codex_exec(tmp_path, trust, "Count.\nSTEP say " + "lorem ipsum dolor sit amet " * 3300)
    codex_exec(tmp_path, "resume", "--last", trust, "go on")
    rollout = rollout_of(tmp_path)
    assert stated_windows(rollout) == {57_000}  # the truth: what the rollout states
    from ctxhealth.integrations.claude_code.tailstate import load_counters

    counters = load_counters(str(tmp_path / "home" / ".ctxhealth"), str(rollout))
    assert counters is not None and counters.thresholds is not None and counters.assessment is not None
    assert counters.thresholds["window"] == counters.thresholds["usable"] == 57_000
    last = openai.exchanges("turn")[-1].usage
    assert counters.assessment["fill"] == last["input"] > 0.9 * 57_000
    report = check_json(rollout)
    assert report["window"] == 57_000
    # one reading of the same log: the hooks' last assessment is check's
    assert (counters.assessment["zone"], counters.assessment["action"]) == (report["zone"], report["action"])
    assert counters.assessment["zone"] == "critical"
