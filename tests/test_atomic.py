"""write_atomic: content, modes, clean-up on failure, no temp files left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.atomic import write_atomic


def test_writes_bytes_and_text_and_creates_parents(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "file.txt"
    assert write_atomic(target, "héllo\n") == target
    assert target.read_bytes() == "héllo\n".encode()
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"


def test_replaces_without_leaving_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    for i in range(5):
        write_atomic(target, f"{i}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    assert target.read_text() == "4"


def test_mode_is_applied(tmp_path: Path) -> None:
    target = tmp_path / "secret.json"
    write_atomic(target, "{}", mode=0o600)
    assert target.stat().st_mode & 0o777 == 0o600


def test_failure_before_rename_keeps_old_content_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    write_atomic(target, "old")

    def boom(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


@settings(max_examples=30, deadline=None)
@given(data=st.binary(max_size=2048))
def test_round_trip_any_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    target = tmp_path_factory.mktemp("rt") / "f.bin"
    write_atomic(target, data)
    assert target.read_bytes() == data
