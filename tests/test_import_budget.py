"""Import budget per command: what ``check``, the status line and the hook client load while they
run, as a fresh process (not just on import). None of them needs the fleet engine, numpy, rich (no
bar is drawn when stderr is not a terminal), DuckDB, the packer or the tokenizer's vocabulary."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

PROBE = """
import atexit, json, os, runpy, sys
def dump():
    with open(os.environ["PROBE_OUT"], "w") as f:
        json.dump(sorted(sys.modules), f)
    if os.environ.get("PROBE_CLASSES"):  # the dataclasses our modules created
        built = sorted(
            f"{name}.{value.__qualname__}"
            for name, module in list(sys.modules.items()) if name.startswith("ctxhealth")
            for value in list(vars(module).values())
            if isinstance(value, type) and value.__module__ == name and "__dataclass_fields__" in vars(value)
        )
        with open(os.environ["PROBE_CLASSES"], "w") as f:
            json.dump(built, f)
atexit.register(dump)
module, sys.argv = sys.argv[1], sys.argv[1:]
if module == "ctxhealth.cli.main":
    from ctxhealth.cli.main import main
    main()
else:
    runpy.run_module(module, run_name="__main__")
"""

FORBIDDEN = ("ctxhealth.fleet", "ctxhealth.pack", "numpy", "rich", "duckdb", "toktok", "tiktoken", "dask")


def _transcript(path: Path, turns: int = 6) -> Path:
    lines = [
        {
            "type": "user",
            "uuid": "u0",
            "parentUuid": None,
            "sessionId": "s1",
            "message": {"role": "user", "content": "Fix the parser bug in src/parse.py"},
        }
    ]
    for i in range(1, turns + 1):
        lines.append(
            {
                "type": "assistant",
                "uuid": f"u{i}",
                "parentUuid": f"u{i - 1}",
                "sessionId": "s1",
                "message": {
                    "id": f"msg_{i}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [{"type": "text", "text": f"Looking at src/parse.py, step {i}."}],
                    "usage": {
                        "input_tokens": 10,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 20_000 * i,
                        "output_tokens": 5,
                    },
                },
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def loaded_by(
    tmp_path: Path,
    args: list[str],
    stdin: str = "",
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> set[str]:
    out = tmp_path / "modules.json"
    env = {**(os.environ if env is None else env), "PROBE_OUT": str(out)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input=stdin.encode(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,  # not a terminal: no progress bar
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert out.exists(), done.stderr.decode()[-2000:]
    return set(json.loads(out.read_text()))


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)}


@pytest.mark.parametrize("as_dir", [True, False], ids=["directory", "file"])
def test_check_loads_no_fleet_numpy_rich_or_vocabulary(tmp_path: Path, as_dir: bool) -> None:
    transcript = _transcript(tmp_path / "sessions" / "proj" / "s1.jsonl")
    _transcript(tmp_path / "sessions" / "proj" / "s2.jsonl")
    target = transcript.parent.parent if as_dir else transcript
    modules = loaded_by(tmp_path, ["ctxhealth.cli.main", "check", str(target), "--json"])
    assert "ctxhealth.monitor" in modules  # the probe saw the command do its work
    assert heavy(modules) == set()


OTHER_READERS = tuple(
    f"ctxhealth.sources.{name}"
    for name in ("codex", "gemini_cli", "mini_swe_agent", "swe_agent", "tau_bench", "openhands")
)


def test_check_of_claude_code_sessions_imports_no_other_reader(tmp_path: Path) -> None:
    """Every format is sniffed (``ctxhealth.sources.sniff``) for a file no reader recognises, but a
    format's reader is imported only to read a file of it."""
    folder = tmp_path / "sessions" / "proj"
    _transcript(folder / "s1.jsonl")
    (folder / "NOTES.txt").write_text("not a transcript: every sniffer is asked about it\n")
    modules = loaded_by(tmp_path, ["ctxhealth.cli.main", "check", str(folder.parent), "--json"])
    assert set(OTHER_READERS) & modules == set()
    assert {"ctxhealth.sources.sniff", "ctxhealth.monitor"} <= modules


#: Dataclasses still created on the hot paths: each costs about 1 ms of a fresh process (a
#: ``msgspec.Struct`` class is created in C); ``RiskModel`` keeps derived fields out of its
#: ``__init__``, ``repr`` and comparison, which a Struct cannot express.
DATACLASSES_ALLOWED = {"ctxhealth.risk.model.RiskModel"}


@pytest.mark.parametrize("command", ["check", "statusline", "hook"])
def test_the_hot_commands_create_no_other_dataclass(tmp_path: Path, command: str) -> None:
    transcript = _transcript(tmp_path / "sessions" / "proj" / "s1.jsonl")
    classes = tmp_path / "classes.json"
    env = {**os.environ, "PROBE_CLASSES": str(classes), "CTXHEALTH_HELPER": "off"}
    if command == "check":
        loaded_by(tmp_path, ["ctxhealth.cli.main", "check", str(transcript), "--json"], env=env)
    elif command == "statusline":
        payload = (FIXTURES / "claude-statusline-current.json").read_text()
        loaded_by(tmp_path, ["ctxhealth.cli.statusline"], payload.replace("TRANSCRIPT", str(transcript)), env)
    else:
        payload = (FIXTURES / "claude-hook-post-tool-use.json").read_text()
        loaded_by(
            tmp_path,
            ["ctxhealth.cli.hook", "PostToolUse"],
            payload.replace("TRANSCRIPT", str(transcript)),
            env,
        )
    built = set(json.loads(classes.read_text()))
    assert built <= DATACLASSES_ALLOWED


@pytest.mark.parametrize("event", ["Stop", "UserPromptSubmit"])
def test_a_warm_hook_without_a_helper_loads_no_msgspec_or_dataclasses(tmp_path: Path, event: str) -> None:
    """A turn with nothing new in the transcript (answered from the saved tail) imports the model
    catalog only to point its cache at the home: not the accounting's value types, so neither
    msgspec nor ``dataclasses`` (and its ``inspect``)."""
    transcript = _transcript(tmp_path / "t.jsonl")
    name = {"Stop": "stop", "UserPromptSubmit": "user-prompt-submit"}[event]
    payload = (FIXTURES / f"claude-hook-{name}.json").read_text().replace("TRANSCRIPT", str(transcript))
    env = {**os.environ, "CTXHEALTH_HELPER": "off"}
    loaded_by(tmp_path, ["ctxhealth.cli.hook", event], payload, env)  # reads the transcript once
    modules = loaded_by(tmp_path, ["ctxhealth.cli.hook", event], payload, env)
    assert "ctxhealth.accounting.catalog" in modules
    assert {"msgspec", "dataclasses", "inspect", "ctxhealth.accounting.types"} & modules == set()


def test_check_without_a_config_file_loads_no_toml_parser_or_traceback(tmp_path: Path) -> None:
    """With no config file (and no ``CTXHEALTH_*`` value to parse) ``check`` needs neither the TOML
    parser nor ``traceback`` (the internal-error path), nor compiles a secret rule for report
    strings that hold no candidate."""
    transcript = _transcript(tmp_path / "s1.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXHEALTH_")}
    env |= {"CTXHEALTH_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    args = ["ctxhealth.cli.main", "check", str(transcript), "--json"]
    loaded_by(tmp_path, args, env=env, cwd=tmp_path)  # the first run derives the model catalog's cache
    modules = loaded_by(tmp_path, args, env=env, cwd=tmp_path)
    assert "ctxhealth.monitor" in modules and "ctxhealth.redact" in modules
    assert {"tomllib", "traceback", "genai_prices"} & modules == set()


def test_check_series_loads_no_fleet(tmp_path: Path) -> None:
    """The per-turn series is one session's analysis (``ctxhealth.analysis``), not the batch layer."""
    transcript = _transcript(tmp_path / "s1.jsonl")
    modules = loaded_by(tmp_path, ["ctxhealth.cli.main", "check", str(transcript), "--json", "--series"])
    assert "ctxhealth.analysis.turns" in modules  # the series was computed
    assert heavy(modules) == set()


def test_report_of_transcripts_loads_no_fleet(tmp_path: Path) -> None:
    """A report of transcripts analyses each session below the fleet; only ``--from`` reads a store."""
    transcript = _transcript(tmp_path / "s1.jsonl")
    out = tmp_path / "report.html"
    modules = loaded_by(tmp_path, ["ctxhealth.cli.main", "report", str(transcript), "-o", str(out)])
    assert out.exists() and "ctxhealth.analysis.session" in modules
    assert {m for m in heavy(modules) if m.startswith(("ctxhealth.fleet", "duckdb", "dask"))} == set()


def test_statusline_loads_none_of_them(tmp_path: Path) -> None:
    transcript = _transcript(tmp_path / "t.jsonl")
    payload = (FIXTURES / "claude-statusline-current.json").read_text().replace("TRANSCRIPT", str(transcript))
    modules = loaded_by(tmp_path, ["ctxhealth.cli.statusline"], payload)
    assert "ctxhealth.integrations.claude_code.statusline" in modules
    assert heavy(modules) == set()


@pytest.mark.parametrize("event", ["Stop", "UserPromptSubmit", "PostToolUse"])
def test_hook_client_loads_none_of_them(tmp_path: Path, event: str) -> None:
    transcript = _transcript(tmp_path / "t.jsonl")
    name = {"Stop": "stop", "UserPromptSubmit": "user-prompt-submit", "PostToolUse": "post-tool-use"}[event]
    payload = (FIXTURES / f"claude-hook-{name}.json").read_text().replace("TRANSCRIPT", str(transcript))
    modules = loaded_by(tmp_path, ["ctxhealth.cli.hook", event], payload)
    assert "ctxhealth.integrations.claude_code.hooks" in modules
    assert heavy(modules) == set()


def test_a_lazy_total_is_counted_only_when_the_bar_is_drawn() -> None:
    pytest.importorskip("rich")
    from ctxhealth.cli.progress import ProgressBar

    counted: list[int] = []

    def count() -> float:
        counted.append(1)
        return 5.0

    with ProgressBar("checking", count, stream=io.StringIO()) as quiet:  # not a terminal: no bar
        quiet.started -= 10
        quiet.advance()
    assert counted == [] and quiet.total is None
    with ProgressBar("checking", count, stream=io.StringIO(), force=True) as drawn:
        drawn.started -= 10  # past the delay: the bar starts on this advance
        drawn.advance()
        drawn.advance()
    assert counted == [1] and drawn.total == 5.0


def test_the_policy_decision_imports_no_signals_model_or_profile(tmp_path: Path) -> None:
    # `decide` is cheap to import (a hook may take it on its own): the zone arithmetic, the failure
    # rules and nothing of the event builder, the call parser, the transcript model or the profile.
    out = tmp_path / "modules.json"
    probe = (
        "import json, sys; import ctxhealth.policy.decision; "
        "json.dump(sorted(sys.modules), open(sys.argv[1], 'w'))"
    )
    subprocess.run([sys.executable, "-c", probe, str(out)], check=True, timeout=120)
    modules = {m for m in json.loads(out.read_text()) if m.startswith("ctxhealth")}
    from ctxhealth.native import KERNELS

    # the failure gate's C kernel (small), when ctxhealth.native picks it
    assert modules - {"ctxhealth._native"} == {
        "ctxhealth",
        "ctxhealth.failures",
        "ctxhealth.lazy",
        "ctxhealth.native",
        "ctxhealth.policy",
        "ctxhealth.policy.decision",
        "ctxhealth.signals",
        "ctxhealth.signals.zones",
    }
    assert ("ctxhealth._native" in modules) == (KERNELS is not None)


def test_a_monitor_snapshot_keeps_its_policy_counters() -> None:
    # the codec learns the decision's Counters from the policy package (the decision module no longer
    # imports the codec): a monitor restored from its snapshot has the same counters
    from ctxhealth.monitor import Monitor
    from ctxhealth.policy import Action

    monitor = Monitor("claude-sonnet-4-5-20250929")
    monitor.record_recovery(Action.TRUNCATE)
    restored = Monitor.restore(json.loads(json.dumps(monitor.snapshot())))
    assert restored.counters == monitor.counters and restored.counters.truncations == 1


def test_check_compiles_only_the_family_pattern_of_its_model(tmp_path: Path) -> None:
    """The model registry tries its families in order, but compiles and runs a family's pattern only
    for an id holding the pattern's words (``ctxhealth.lazy.search``): a Sonnet session compiles the
    Sonnet family's pattern alone, not the Claude 3 ones before it. Nor does the redaction of the
    report compile a rule whose literal starts no word of it (``task_id`` holds ``sk_``)."""
    from ctxhealth.accounting.registry import FAMILIES
    from ctxhealth.redact import _RULES

    transcript = _transcript(tmp_path / "s1.jsonl")
    out = tmp_path / "patterns.json"
    probe = PROBE.replace(
        "json.dump(sorted(sys.modules), f)",
        "from ctxhealth import lazy; json.dump([k[0] for k in lazy._patterns if isinstance(k[0], str)], f)",
    )
    env = {**os.environ, "PROBE_OUT": str(out)}
    for _ in range(2):  # the first run derives the model catalog's cache
        subprocess.run(
            [sys.executable, "-c", probe, "ctxhealth.cli.main", "check", str(transcript), "--json"],
            capture_output=True,
            env=env,
            timeout=120,
            check=False,
        )
    compiled = set(json.loads(out.read_text()))
    sonnet = next(f.pattern for f in FAMILIES if f.name == "claude-sonnet")
    assert {f.pattern for f in FAMILIES} & compiled == {sonnet}
    assert {rule.source for rule in _RULES if rule.word_start} & compiled == set()


#: What ``check`` of Claude Code sessions imported without running it: the atomic writer (it writes
#: no file, once the model catalog's cache is derived) and the hooks' incremental tail (it reads each
#: file whole).
NOT_RUN_BY_CHECK = ("ctxhealth.atomic", "ctxhealth.sources.claude_code.tail")


def test_check_of_claude_code_sessions_imports_no_writer_or_tail(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "proj"
    _transcript(folder / "s1.jsonl")
    (folder / "NOTES.txt").write_text("not a transcript\n")
    args = ["ctxhealth.cli.main", "check", str(folder.parent), "--json"]
    loaded_by(tmp_path, args)  # the first run may derive the model catalog's cache
    modules = loaded_by(tmp_path, args)
    assert "ctxhealth.monitor" in modules
    assert set(NOT_RUN_BY_CHECK) & modules == set()


def test_check_compiles_no_signal_pattern_its_texts_never_need(tmp_path: Path) -> None:
    """The signals' patterns for text a Claude Code session without them never holds (ctxhealth's
    own blocks, Codex exec headers, reminders), the definitions fast paths replaced (hedges, words,
    sentences: tested, never run) and,
    with the C kernels, the verify hints' pattern: none is compiled, at import or later. Nor are the
    sniffers' JSON-object head patterns for a file that opens no object (a licence beside them)."""
    from ctxhealth.native import KERNELS
    from ctxhealth.signals import calls, hedging, indicators, requests, text
    from ctxhealth.sources import sniff

    folder = tmp_path / "proj"
    _transcript(folder / "s1.jsonl")
    (folder / "LICENSE").write_text("Permission is hereby granted, free of charge\n")
    out = tmp_path / "compiled.json"
    probe = PROBE.replace(
        "json.dump(sorted(sys.modules), f)",
        "import re; json.dump([getattr(k[1], 'decode', lambda _: k[1])('latin-1') for k in re._cache], f)",
    )
    subprocess.run(
        [sys.executable, "-c", probe, "ctxhealth.cli.main", "check", str(folder), "--json"],
        capture_output=True,
        env={**os.environ, "PROBE_OUT": str(out)},
        timeout=120,
        check=False,
    )
    compiled = set(json.loads(out.read_text()))
    assert requests._SHELL_PROMPT.pattern in compiled  # the probe sees the signals' patterns
    sources = [requests._OWN_BLOCK, requests._CODEX_HEADER, requests._CODEX_EXIT, requests._REMINDER]
    sources += [hedging._HEDGE, hedging._RARE, *([calls._VERIFY_HINT] if KERNELS is not None else [])]
    sources += [text._WORD_SOURCE, indicators._SENTENCE_SOURCE]  # the definitions fast paths replace
    never = {getattr(source, "pattern", source) for source in sources}  # a source, or a compiled one
    heads = (sniff._SWE_AGENT_HEAD, sniff._OPENHANDS_COMPLETION_HEAD, sniff._OPENHANDS_OUTPUT_HEAD)
    never |= {head.decode("latin-1") for head in heads}
    assert never & compiled == set()
