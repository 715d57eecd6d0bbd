"""Hostile inputs (round two): links leaving a packed repository, special files, huge numbers,
writes onto devices and links, unbounded reads. Each test fails on the code before the fix."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxhealth.cli.main import cli
from pack_repo import write_repo

SECRET_WORD = "zqxwvulnerablesecretword"


def _outside_secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    key = outside / "id_rsa"
    key.write_text(f"def login_key():\n    return '{SECRET_WORD}'\n")
    (outside / "dir").mkdir()
    (outside / "dir" / "leak.py").write_text(f"LEAK = '{SECRET_WORD}'\n")
    return outside


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.mark.parametrize("kind", ["committed", "untracked", "no-git"])
def test_pack_never_reads_through_a_link_leaving_the_repository(
    tmp_path: Path, kind: str, _isolated_home: Path
) -> None:
    outside = _outside_secret(tmp_path)
    repo = write_repo(tmp_path / "repo")
    if kind != "no-git":
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "init")
    (repo / "login_key.py").symlink_to(outside / "id_rsa")
    (repo / "linked").symlink_to(outside / "dir")
    (repo / "inside_link.py").symlink_to(repo / "billing" / "tax.py")
    if kind == "committed":
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "links")
    result = CliRunner().invoke(
        cli, ["pack", str(repo), "--task", f"fix login key {SECRET_WORD}", "--budget", "20000", "--json"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.stdout)
    assert SECRET_WORD not in json.dumps([f for f in manifest["files"]])
    skipped = {row["path"]: row["reason"] for row in manifest["excluded"]}
    assert "leaving the repository" in skipped["login_key.py"]
    assert "leaving the repository" in skipped["linked"]
    # a link that stays inside the repository is read like any file
    assert "leaving" not in skipped.get("inside_link.py", "")
    payload = CliRunner().invoke(
        cli, ["pack", str(repo), "--task", "fix login key leak", "--budget", "20000"]
    )
    assert payload.exit_code == 0, payload.output
    assert SECRET_WORD not in payload.stdout
    for file in (_isolated_home / "pack-index").rglob("*"):
        if file.is_file():
            assert SECRET_WORD.encode() not in file.read_bytes(), file


def test_pack_skips_fifos_and_devices_in_a_folder(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    os.mkfifo(repo / "pipe.py")
    (repo / "zero.py").symlink_to("/dev/zero")
    result = CliRunner().invoke(cli, ["pack", str(repo), "--task", "pipe zero", "--budget", "5000", "--json"])
    assert result.exit_code == 0, result.output
    skipped = {row["path"]: row["reason"] for row in json.loads(result.stdout)["excluded"]}
    assert "not a regular file" in skipped["pipe.py"]
    assert "zero.py" in skipped
