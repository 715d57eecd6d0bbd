"""No secret on disk: the canary set goes through every writing path (hooks, status line, checkpoints,
recover, task state, gate, summaries, control, memory, snapshots, ledger), then every byte under the
home and the state root (the SQLite files included) and every output is searched for every canary."""

from __future__ import annotations

from pathlib import Path

from canaries import canaries
from canary_paths import OUTPUTS, drive_every_writer, find_canaries, locations_written


def test_no_canary_reaches_any_file_or_output(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root, printed = drive_every_writer(tmp_path, home)
    written = locations_written(home, root)
    # Every writing path really wrote: otherwise "nothing found" would prove nothing.
    expected = {
        "ledger (SQLite + WAL)",
        "hooks' tail cache",
        "hook checkpoints",
        "checkpoints",
        "state checkpoints",
        "snapshots",
        "summaries",
        "memory files",
        "task state",
        "control.json",
    }
    assert expected <= set(written), written
    assert all(printed[channel].strip() for channel in OUTPUTS), printed
    assert len(canaries()) >= 30
    found = find_canaries(home, root, printed)
    leaks = {name: places for name, places in found.items() if places}
    assert leaks == {}


def test_the_search_finds_a_planted_canary(tmp_path: Path) -> None:
    """The search itself works: a canary written raw into the home is found, in its location."""
    home, root = tmp_path / "home", tmp_path / "root"
    (home / "claude-code" / "tails").mkdir(parents=True)
    root.mkdir()
    text, _ = canaries()["pem"]
    (home / "claude-code" / "tails" / "x.json").write_text('{"a": ' + repr(text) + "}")
    found = find_canaries(home, root, {"hook output": ""})
    assert found["pem"] == {"hooks' tail cache": 1}
    assert all(not places for name, places in found.items() if name != "pem")
