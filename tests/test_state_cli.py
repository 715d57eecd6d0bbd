"""`ctxhealth state ...` and `ctxhealth checkpoint PATH` end to end: statuses, exit codes, JSON, redaction."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from conftest import invoke
from test_redact import CANARIES


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    return invoke(list(args), env=env, input=input)


def js(result: Result) -> dict[str, Any]:
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "state-root"


def test_lifecycle_text_and_exit_codes(root: Path) -> None:
    r = run("state", "status", "--root", str(root))
    assert r.exit_code == 3 and r.stdout.startswith("STATUS:MISSING_STATE")
    r = run("state", "ensure", "--root", str(root), "--goal", "port the parser")
    assert r.exit_code == 0 and r.stdout.startswith("STATUS:INITIALISED")
    r = run("state", "checkpoint", "--root", str(root), "--pressure", "0.3", "--set", "next_action=read code")
    assert r.exit_code == 0 and r.stdout.startswith("STATUS:OK")
    r = run("state", "checkpoint", "--root", str(root), "--pressure", "0.9")
    assert r.exit_code == 1 and r.stdout.startswith("STATUS:HALT_CONTEXT_LIMIT")
    assert "override" in r.stderr
    r = run("state", "checkpoint", "--root", str(root), "--pressure", "0.1")
    assert r.exit_code == 1 and "refusing" in r.stdout
    r = run("state", "override", "--root", str(root), "--reason", "approved")
    assert r.exit_code == 0
    r = run("state", "checkpoint", "--root", str(root), "--pressure", "0.1")
    assert r.exit_code == 0
    r = run("state", "bundle", "--root", str(root))
    assert r.exit_code == 0 and "Next action: read code" in r.stdout
    r = run("state", "checkpoint", "--root", str(root), "--pressure", "0.1", "--set", "next_action=DONE")
    assert r.exit_code == 0 and r.stdout.startswith("STATUS:COMPLETE")
    assert run("state", "status", "--root", str(root)).stdout.startswith("STATUS:COMPLETE")


def test_json_on_every_command(root: Path, tmp_path: Path) -> None:
    update = tmp_path / "update.json"
    update.write_text(json.dumps({"constraints": ["no new deps"], "current_phase": "build"}))
    docs = [
        js(run("state", "ensure", "--root", str(root), "--json")),
        js(run("state", "status", "--root", str(root), "--json")),
        js(
            run(
                "state",
                "checkpoint",
                "--root",
                str(root),
                "--json",
                "--pressure",
                "0.72",
                "--update",
                str(update),
            )
        ),
        js(run("state", "bundle", "--root", str(root), "--json")),
        js(run("state", "override", "--root", str(root), "--json", "--allow", "2")),
        js(run("state", "archive", "--root", str(root), "--json")),
    ]
    assert [d.get("status") for d in docs[:5]] == ["INITIALISED", "OK", "OK", "OK", "OK"]
    assert all(d["schema_version"] == 1 for d in docs)
    assert docs[2]["zone"] == "compress" and docs[2]["checkpoint"]
    assert docs[3]["bundle"]["constraints"] == ["no new deps"]
    assert docs[4]["override_remaining"] == 2
    assert docs[5]["archived"] and len(docs[5]["moved"]) == 3


def test_root_from_environment(root: Path) -> None:
    r = run("state", "ensure", env={"CTXHEALTH_ROOT": str(root)})
    assert r.exit_code == 0
    assert (root / "task-state.json").is_file()


def test_thresholds_are_configurable(root: Path) -> None:
    run("state", "ensure", "--root", str(root))
    r = run(
        "state",
        "checkpoint",
        "--root",
        str(root),
        "--pressure",
        "0.6",
        "--warning",
        "0.4",
        "--compress",
        "0.5",
        "--critical",
        "0.6",
        "--json",
    )
    assert r.exit_code == 1 and js(r)["status"] == "HALT_CONTEXT_LIMIT"
    bad = run("state", "checkpoint", "--root", str(root), "--pressure", "0.6", "--warning", "0.9")
    assert bad.exit_code == 3 and "Traceback" not in bad.output


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated mid-write by something that was not us
        lambda b: b"",
        lambda b: b"\x00\xff garbage",
        lambda b: b.replace(b'"goal"', b'"goal": 12, "x"', 1),
    ],
)
def test_corrupted_state_gives_clear_error_and_a_way_out(root: Path, damage: Any) -> None:
    run("state", "ensure", "--root", str(root))
    state = root / "task-state.json"
    state.write_bytes(damage(state.read_bytes()))
    for command in ("status", "ensure", "checkpoint", "bundle"):
        r = run("state", command, "--root", str(root))
        assert r.exit_code == 3, (command, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit)
        assert "Traceback" not in r.output
        assert "STATUS:INVALID_STATE" in r.stdout or "STATUS:MISSING_STATE" in r.stdout
        assert "archive" in r.stderr
    r = run("state", "archive", "--root", str(root))
    assert r.exit_code == 0 and "archived" in r.stdout
    assert run("state", "ensure", "--root", str(root)).exit_code == 0


def test_corrupted_state_in_a_real_process(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "task-state.json").write_text('{"schema": "ctxhealth/task-state", "schema_ver')
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ctxhealth.cli.main import main; main()",
            "state",
            "ensure",
            "--root",
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    assert "STATUS:INVALID_STATE" in proc.stdout and "ctxhealth state archive" in proc.stderr


def test_foreign_state_refused_until_archived(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "task-state.json").write_text(json.dumps({"goal": "old", "next_action": "x"}))
    r = run("state", "checkpoint", "--root", str(root), "--pressure", "0.1", "--set", "next_action=y")
    assert r.exit_code == 3 and "FOREIGN_STATE" in r.stdout
    assert json.loads((root / "task-state.json").read_text()) == {"goal": "old", "next_action": "x"}
    assert run("state", "archive", "--root", str(root)).exit_code == 0
    assert run("state", "ensure", "--root", str(root)).exit_code == 0


def test_bad_update_is_a_clear_error(root: Path) -> None:
    run("state", "ensure", "--root", str(root))
    r = run(
        "state",
        "checkpoint",
        "--root",
        str(root),
        "--update",
        "-",
        "--pressure",
        "0.1",
        input='{"blockers": 3}',
    )
    assert r.exit_code == 3 and "`blockers`" in r.stderr and "Traceback" not in r.output
    r = run("state", "checkpoint", "--root", str(root), "--set", "nope=1")
    assert r.exit_code == 2


def _secret_transcript(path: Path) -> Path:
    texts = [text for text, _ in CANARIES.values()]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the deploy script. Config: " + texts[0] + " and " + texts[1]},
    ]
    for n, text in enumerate(texts):
        messages.append(
            {
                "role": "assistant",
                "content": f"Step {n}: checking {text}",
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": f"echo '{text}'"})},
                    },
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"output: {text}"})
    messages.append({"role": "assistant", "content": "Done. Last output " + texts[-1]})
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages}))
    return path


def test_transcript_checkpoint_is_written_recorded_and_redacted(root: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    transcript = _secret_transcript(tmp_path / "t.json")
    r = run("checkpoint", str(transcript), "--root", str(root), "--json", env={"CTXHEALTH_HOME": str(home)})
    assert r.exit_code == 0, r.output
    doc = js(r)
    json_path, md_path = Path(doc["json_path"]), Path(doc["markdown_path"])
    assert json.loads(json_path.read_text())["schema"] == "ctxhealth/checkpoint"
    assert md_path.read_text().startswith("## Checkpoint:")
    assert (root / "checkpoints" / "latest-checkpoint.md").read_text() == md_path.read_text()
    conn = sqlite3.connect(home / "ledger.db")
    rows = conn.execute("SELECT json_path, markdown_path, tokens FROM checkpoints").fetchall()
    conn.close()
    assert rows == [(str(json_path), str(md_path), doc["tokens"])]
    written = b"".join(p.read_bytes() for p in [*root.rglob("*"), *home.rglob("*")] if p.is_file())
    assert b"[REDACTED:" in written
    for name, (_, secret) in CANARIES.items():
        assert secret.encode() not in written, name


def test_snapshot_and_remember(root: Path, tmp_path: Path) -> None:
    transcript = _secret_transcript(tmp_path / "t.json")
    r = run("state", "snapshot", str(transcript), "--root", str(root), "--json")
    assert r.exit_code == 0 and js(r)["snapshot"]["original_intent"].startswith("Fix the deploy script")
    r = run("state", "remember", "learnings", "the deploy needs sudo", "--root", str(root))
    assert r.exit_code == 0
    assert "the deploy needs sudo" in (root / "memory" / "learnings.md").read_text()
    written = b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())
    for _, secret in CANARIES.values():
        assert secret.encode() not in written


def test_checkpoint_of_missing_transcript_is_input_error(root: Path, tmp_path: Path) -> None:
    r = run("checkpoint", str(tmp_path / "nope.jsonl"), "--root", str(root))
    assert r.exit_code == 3 and "Traceback" not in r.output


def test_root_that_is_a_file_is_a_clear_environment_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    r = run("state", "ensure", "--root", str(blocker / "root"))
    assert r.exit_code == 4 and "writable directory" in r.stderr and "Traceback" not in r.output


def test_the_gate_follows_the_configured_profile(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[profile] pressure_critical`` in the project's config moves the halt gate of ``state checkpoint``
    (it used the built-in 0.85 whatever the profile said); a flag still wins for one call."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".ctxhealth.toml").write_text("[profile]\npressure_critical = 0.75\n")
    monkeypatch.chdir(project)
    run("state", "ensure", "--root", str(root))
    halted = run("state", "checkpoint", "--root", str(root), "--pressure", "0.8", "--json")
    assert halted.exit_code == 1, halted.output
    assert js(halted)["status"] == "HALT_CONTEXT_LIMIT"
    assert js(halted)["thresholds"]["critical"] == 0.75
    run("state", "override", "--root", str(root))
    flagged = run(
        "state", "checkpoint", "--root", str(root), "--pressure", "0.8", "--critical", "0.9", "--json"
    )
    assert js(flagged)["thresholds"]["critical"] == 0.9
    assert js(flagged)["status"] != "HALT_CONTEXT_LIMIT"
