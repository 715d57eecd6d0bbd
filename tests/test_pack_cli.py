"""``ctxhealth pack``: payload, manifest, explain table, output file and usage errors."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke
from pack_repo import write_repo


def run(*args: str) -> tuple[int, str, str]:
    result = invoke(["pack", *args])
    return result.exit_code, result.stdout, result.stderr


def test_pack_prints_the_payload_and_a_summary(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    code, out, err = run(str(repo), "--task", "InvoiceRenderer totals", "--budget", "3000")
    assert code == 0, err
    assert out.startswith("# Context pack\n") and "### billing/invoice.py (full)" in out
    assert err.startswith("ctxhealth: pack ") and "of 3,000 tokens" in err


def test_json_prints_one_manifest_and_explain_a_table(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    task_file = tmp_path / "task.txt"
    task_file.write_text("render the invoice total with tax")
    errors = tmp_path / "errors.txt"
    errors.write_text("Traceback (most recent call last):\nKeyError: 'rate'\n")
    code, out, err = run(
        str(repo),
        "--task-file",
        str(task_file),
        "--budget",
        "4000",
        "--json",
        "--explain",
        "--errors",
        str(errors),
        "--type",
        "debug",
    )
    assert code == 0, err
    manifest = json.loads(out)
    assert manifest["kind"] == "ctxhealth/pack-manifest" and manifest["errors_given"] is True
    assert manifest["task_type"] == "debug" and "L4" in manifest["levels"]
    assert "billing/invoice.py" in err and "total" in err and "of 4,000 tokens" in err


def test_output_file_and_model_budget(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    target = tmp_path / "out" / "pack.xml"
    target.parent.mkdir()  # a folder the user names must exist: -o never creates one
    code, out, err = run(
        str(repo), "--task", "shortest route", "--model", "gpt-4o", "--format", "xml", "-o", str(target)
    )
    assert code == 0, err
    assert out == "" and target.read_text().startswith("<context_pack>")
    assert "shipping/routes.py" in target.read_text()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    code, _, err = run(str(repo), "--budget", "100")
    assert code == 2 and "exactly one of --task and --task-file" in err
    code, _, err = run(str(repo), "--task", "x")
    assert code == 2 and "exactly one of --budget and --model" in err
    code, _, err = run(str(repo), "--task", "x", "--budget", "100", "--rules", str(tmp_path / "nope.md"))
    assert code == 3 and "nope.md" in err and "--rules" in err


def test_session_id_finds_the_transcript_in_the_ledger(tmp_path: Path, _isolated_home: Path) -> None:
    from ctxhealth.state.ledger import Ledger, TailState

    repo = write_repo(tmp_path / "repo")
    transcript = tmp_path / "chat.json"
    messages = [{"role": "user", "content": "look at billing/tax.py"}, {"role": "assistant", "content": "ok"}]
    transcript.write_text(json.dumps({"messages": messages}))
    args = [str(repo), "--task", "tax", "--budget", "3000", "--type", "explore", "--json"]
    code, _, err = run(*args, "--session", "s-1")
    assert code == 3 and "no ledger" in err
    with Ledger.open(_isolated_home) as ledger:
        ledger.set_tail(transcript, TailState(session_id="s-1"))
    code, out, err = run(*args, "--session", "s-1")
    assert code == 0, err
    assert json.loads(out)["history"]["path"] == str(transcript)
    code, _, err = run(*args, "--session", "other")
    assert code == 3 and "knows no session other" in err


def test_the_pack_command_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    # the command spaces the garbage collector's passes while it packs; a caller running it in its
    # own process (a test runner, an embedding tool) gets its thresholds back
    import gc

    before = gc.get_threshold()
    repo = write_repo(tmp_path / "repo")
    code, _, _ = run(str(repo), "--task", "refund an invoice", "--budget", "4000")
    assert code == 0 and gc.get_threshold() == before
