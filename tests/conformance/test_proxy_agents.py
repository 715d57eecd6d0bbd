"""The real agent CLIs through ``ctxhealth proxy`` in observe, advise and enforce on one scripted task:
the modes that change requests never make a run fail that observe completes, an enforced run takes at most
1.3x the model requests and cost of the observed one, and the agents' own compactions pass (Claude Code's
summary request, Codex's remote compaction with the default provider and its summarisation prompt with a
custom provider, Gemini CLI's ``<state_snapshot>`` request).

The servers' logs are the truth. The fake models follow the person's directives; a model that took
ctxhealth's advice note for a new task would not be a fair stand-in, so the Claude Code fake reads the
conversation without ctxhealth's own text blocks (the proxy's work is still all in the requests it logs).
Figures per agent and mode are printed (``-s``) and noted in docs/proxy.md.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ctxhealth.accounting.cost import usage_cost
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.model import Usage
from ctxhealth.recovery.clear import PLACEHOLDER_PREFIX
from proxy_process import ProxyProcess

from .agents import agent_or_skip, run_mini_jobs
from .claude_harness import ClaudeBox, check_json
from .fake_anthropic import FakeAnthropic, default_scenario
from .fake_gemini import FakeGemini
from .fake_openai import FakeOpenAI
from .truth import truth_of

pytestmark = pytest.mark.conformance

MODES = ("observe", "advise", "enforce")
OWN = ("[CTXHEALTH", "[RE-ANCHOR")
RATIO = 1.3


@dataclass
class Run:
    mode: str
    ok: bool
    requests: int
    compactions: int
    cost: float
    sessions: int
    extra: dict[str, Any]


def _without_own_text(body: dict[str, Any], headers: dict[str, str]) -> Any:
    messages = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, list):
            content = [
                b
                for b in content
                if not (
                    isinstance(b, dict) and b.get("type") == "text" and str(b.get("text", "")).startswith(OWN)
                )
            ]
            if not content:
                continue
            m = {**m, "content": content}
        messages.append(m)
    return default_scenario({**body, "messages": messages}, headers)


FALLBACK_PRICE = "claude-opus-4-5"
CLAUDE_TASK = ("start PAD: 280000", "next BASH: echo hi x2", "third PAD: 100000")


def _claude(tmp: Path, mode: str) -> Run:
    registry = ModelRegistry.default()
    with FakeAnthropic(_without_own_text) as fake:
        proxy = ProxyProcess(fake.url, "--mode", mode)
        try:
            box = ClaudeBox(tmp, fake, agent_or_skip("claude"))
            codes = []
            for i, prompt in enumerate(CLAUDE_TASK):
                flags = ["--autocompact", "100000", *(["--continue"] if i else [])]
                run = box.run(
                    "-p",
                    prompt,
                    "--dangerously-skip-permissions",
                    *flags,
                    extra_env={"ANTHROPIC_BASE_URL": proxy.url},
                )
                codes.append(run.returncode)
            status = proxy.status()
        finally:
            proxy.stop()
        exchanges = fake.messages()
        cost = 0.0
        for e in exchanges:
            # a model the registry has no price for is priced as Opus 4.5, the same for every mode
            prices = registry.lookup(e.model).prices or registry.lookup(FALLBACK_PRICE).prices
            u = e.usage
            usage = Usage(
                int(u.get("input_tokens", 0)),
                int(u.get("output_tokens", 0)),
                int(u.get("cache_creation_input_tokens", 0)),
                int(u.get("cache_read_input_tokens", 0)),
            )
            cost += usage_cost(usage, prices) if prices is not None else 0.0
        compacts = fake.messages("compact")
        sessions = status["sessions"]
        assert isinstance(sessions, list)
        return Run(
            mode,
            all(c == 0 for c in codes),
            len(exchanges),
            len(compacts),
            cost,
            len(sessions),
            {
                "guard_compactions": sum(int(s.get("compactions") or 0) for s in sessions),
                "facts_in_compactions": sum("KEEP IN THE SUMMARY" in json.dumps(e.body) for e in compacts),
                "boundaries": sum(
                    1
                    for line in box.transcript().read_text("utf-8").splitlines()
                    if '"compact_boundary"' in line
                ),
            },
        )


@pytest.fixture(scope="module")
def claude_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return {mode: _claude(tmp_path_factory.mktemp(f"claude-{mode}"), mode) for mode in MODES}


def _report(agent: str, runs: dict[str, Run]) -> None:
    for run in runs.values():
        print(
            f"{agent:<22} {run.mode:<8} ok={run.ok} requests={run.requests} compactions={run.compactions} "
            f"cost=${run.cost:.4f} sessions={run.sessions} {run.extra}"
        )


def test_claude_code_through_the_proxy_in_every_mode(claude_runs: dict[str, Run]) -> None:
    _report("claude-code", claude_runs)
    observed = claude_runs["observe"]
    assert observed.ok and observed.compactions >= 1
    for mode in ("advise", "enforce"):
        run = claude_runs[mode]
        assert run.ok, mode
        assert run.requests <= RATIO * observed.requests, mode
        assert run.cost <= RATIO * observed.cost, mode
        assert run.sessions == 1, mode  # one session across the compactions (its own session header)
        # its compactions went through and were answered as compactions
        assert run.compactions >= 1 and run.extra["boundaries"] == run.compactions, mode
        assert run.extra["guard_compactions"] == run.compactions, mode
    assert claude_runs["enforce"].extra["facts_in_compactions"] == claude_runs["enforce"].compactions
    assert claude_runs["advise"].extra["facts_in_compactions"] == 0


# ---------------------------------------------------------------- Codex CLI


def _own_item(item: Any) -> bool:
    if not isinstance(item, dict) or item.get("role") != "user":
        return False
    content = item.get("content")
    text = content if isinstance(content, str) else ""
    if isinstance(content, list) and content and isinstance(content[0], dict):
        text = str(content[0].get("text", ""))
    return text.startswith(OWN)


class FairOpenAI(FakeOpenAI):
    """The fake Responses model, reading the conversation without ctxhealth's own notes (its log keeps the
    requests as the proxy sent them)."""

    def answer(self, exchange: Any, handler: Any) -> None:
        original = exchange.body
        if isinstance(original, dict) and isinstance(original.get("input"), list):
            exchange.body = {**original, "input": [i for i in original["input"] if not _own_item(i)]}
        try:
            super().answer(exchange, handler)
        finally:
            exchange.body = original


CODEX_MODEL = "gpt-5.5"
CODEX_SCRIPT = (
    "Count.\n" + "STEP shell seq 1 2500\n" * 2 + "STEP shell false\n" + "STEP shell seq 1 2500\n" * 3
)
CODEX_STEPS = 6
ACCOUNTING_MODEL = "llama-3-8b"
"""The proxy accounts Codex's requests as a local-tier model (zones at 8K / 16K / 32K), so the small scripted
run crosses the compact zone before Codex compacts at 20K, and enforce has decisions to carry out."""


def _codex(
    tmp: Path,
    mode: str,
    provider: str,
    *,
    accounting: str = ACCOUNTING_MODEL,
    compact_limit: int = 20000,
    script: str = CODEX_SCRIPT,
    steps_wanted: int = CODEX_STEPS,
) -> Run:
    exe = agent_or_skip("codex")
    with FairOpenAI(model=CODEX_MODEL) as server:
        proxy = ProxyProcess(server.url, "--mode", mode, "--model", accounting)
        try:
            home = tmp / "codex"
            home.mkdir(parents=True)
            lines = [f'model = "{CODEX_MODEL}"', f"model_auto_compact_token_limit = {compact_limit}"]
            if provider == "default":
                lines.append(f'openai_base_url = "{proxy.url}/v1"')
            else:
                lines += [
                    'model_provider = "fake"',
                    "[model_providers.fake]",
                    'name = "Fake"',
                    f'base_url = "{proxy.url}/v1"',
                    'env_key = "FAKE_OPENAI_KEY"',
                    'wire_api = "responses"',
                    "supports_websockets = false",
                ]
            (home / "config.toml").write_text("\n".join(lines) + "\n", "utf-8")
            work = tmp / "work"
            work.mkdir()
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(tmp / "home"),
                "CODEX_HOME": str(home),
                "OPENAI_API_KEY": "sk-fake",
                "FAKE_OPENAI_KEY": "sk-fake",
                "NO_COLOR": "1",
            }
            command = [
                str(exe),
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
            ]
            done = subprocess.run(
                [*command, script],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
            status = proxy.status()
        finally:
            proxy.stop()
    truth = truth_of(server.log, CODEX_MODEL, failures=1)
    steps = sum(
        1
        for e in server.exchanges("turn")
        for item in e.answer or []
        if isinstance(item, dict) and item.get("type") == "function_call"
    )
    sessions = status["sessions"]
    assert isinstance(sessions, list)
    compactions = [e for e in server.log if e.kind == "compaction"]
    return Run(
        mode,
        done.returncode == 0 and steps == steps_wanted,
        truth.turns + len(compactions),
        truth.compactions,
        truth.cost_usd,
        len(sessions),
        {
            "exit": done.returncode,
            "errors": [line for line in done.stderr.splitlines() if "error" in line.lower()][-3:],
            "steps": steps,
            "trigger_last": all(
                e.body["input"][-1] == {"type": "compaction_trigger"}
                for e in compactions
                if any(i == {"type": "compaction_trigger"} for i in e.body.get("input", []))
            ),
            "actions": [s.get("actions") for s in sessions],
            # function-call outputs in each request, up to the first compaction (its kind last)
            "outputs": _outputs_to_compaction(server.log),
        },
    )


def _outputs_to_compaction(log: list[Any]) -> list[tuple[str, int]]:
    out = []
    for e in log:
        items = e.body.get("input") if isinstance(e.body, dict) else None
        if e.kind in ("turn", "compaction") and isinstance(items, list):
            outputs = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
            out.append((e.kind, outputs))
            if e.kind == "compaction":
                break
    return out


@pytest.mark.parametrize("provider", ["default", "custom"])
def test_codex_through_the_proxy_in_every_mode(provider: str, tmp_path: Path) -> None:
    runs = {mode: _codex(tmp_path / mode, mode, provider) for mode in MODES}
    _report(f"codex ({provider})", runs)
    observed = runs["observe"]
    assert observed.ok and observed.compactions >= 1
    for mode in ("advise", "enforce"):
        run = runs[mode]
        assert run.ok, (mode, run.extra)  # every step of the script ran, and codex exec exited 0
        assert run.requests <= RATIO * observed.requests, mode
        assert run.cost <= RATIO * observed.cost, mode
        assert run.sessions == 1, mode
        assert run.extra["trigger_last"], mode
    assert any("truncate" in (a or {}) for a in runs["enforce"].extra["actions"])  # enforce had work to do
    if provider == "default":
        assert runs["enforce"].compactions >= 1  # Codex's remote compaction survives enforce


# ---------------------------------------------------------------- Gemini CLI


def _without_own_parts(contents: list[Any]) -> list[Any]:
    """Gemini ``contents`` without ctxhealth's own text parts (what the fair fake model reads)."""
    out = []
    for content in contents:
        parts = content.get("parts") if isinstance(content, dict) else None
        if isinstance(parts, list):
            kept = [p for p in parts if not (isinstance(p, dict) and str(p.get("text", "")).startswith(OWN))]
            if not kept:
                continue
            content = {**content, "parts": kept}
        out.append(content)
    return out


def _own_parts(body: Any) -> list[str]:
    """The texts of ctxhealth's own parts in a Gemini request body."""
    return [
        str(p["text"])
        for c in (body.get("contents") or [] if isinstance(body, dict) else [])
        for p in (c.get("parts") or [] if isinstance(c, dict) else [])
        if isinstance(p, dict) and str(p.get("text", "")).startswith(OWN)
    ]


GEMINI_MODEL = "gemini-2.5-pro"
GEMINI_TASK = (
    "Count.\n" + "STEP shell seq 1 2500\n" * 2 + "STEP shell false\nSTEP say finished",
    "Again.\nSTEP shell seq 1 2500\nSTEP say finished again",
)
GEMINI_STEPS = 4
GEMINI_ACCOUNTING = "llama-3-8b"
"""As for Codex: the proxy accounts the requests as a local-tier model, so the scripted run crosses the
compact zone before Gemini CLI compresses, and enforce has decisions to carry out."""


def _gemini(tmp: Path, mode: str) -> Run:
    from .run_gemini import gemini_prompt, write_settings

    with FakeGemini(model=GEMINI_MODEL, view=_without_own_parts) as server:
        proxy = ProxyProcess(server.url, "--mode", mode, "--model", GEMINI_ACCOUNTING)
        try:
            write_settings(tmp, compression=0.013)
            runs = [
                gemini_prompt(
                    tmp,
                    server,
                    GEMINI_MODEL,
                    *(["--resume", "latest"] if i else []),
                    prompt,
                    env={"GOOGLE_GEMINI_BASE_URL": proxy.url},
                    check=False,
                )
                for i, prompt in enumerate(GEMINI_TASK)
            ]
            status = proxy.status()
        finally:
            proxy.stop()
    truth = truth_of(server.log, GEMINI_MODEL, failures=1, logged=("turn", "compaction", "router"))
    calls = [
        part["functionCall"]
        for e in server.exchanges("turn")
        for part in e.answer or []
        if isinstance(part, dict) and "functionCall" in part
    ]
    sessions = status["sessions"]
    assert isinstance(sessions, list)
    snapshots = [e for e in server.log if e.kind == "compaction"]
    return Run(
        mode,
        all(r.returncode == 0 for r in runs) and len(calls) == GEMINI_STEPS,
        len(server.log),
        truth.compactions,
        truth.cost_usd,
        len(sessions),
        {
            "exit": [r.returncode for r in runs],
            "steps": len(calls),
            "snapshots": len(snapshots),
            "facts_in_snapshots": sum("KEEP IN THE SUMMARY" in json.dumps(e.body) for e in snapshots),
            "guard_compactions": sum(int(s.get("compactions") or 0) for s in sessions),
            "notes": sum(
                1
                for e in server.log
                if e.kind != "compaction" and any("KEEP IN THE SUMMARY" not in t for t in _own_parts(e.body))
            ),
            "cleared": sum(PLACEHOLDER_PREFIX in json.dumps(e.body) for e in server.log),
            "actions": [s.get("actions") for s in sessions],
            "agent": [s.get("agent") for s in sessions],
        },
    )


def test_gemini_cli_through_the_proxy_in_every_mode(tmp_path: Path) -> None:
    runs = {mode: _gemini(tmp_path / mode, mode) for mode in MODES}
    _report("gemini-cli", runs)
    observed = runs["observe"]
    assert observed.ok and observed.compactions >= 1
    for mode in MODES:
        assert runs[mode].sessions == 1, (mode, runs[mode].extra)  # one session across its compression
    for mode in ("advise", "enforce"):
        run = runs[mode]
        assert run.ok, (mode, run.extra)
        assert run.requests <= RATIO * observed.requests, mode
        assert run.cost <= RATIO * observed.cost, mode
        assert run.extra["guard_compactions"] == run.extra["snapshots"] >= 1, mode
        assert run.extra["agent"] == ["gemini-cli"], mode
    assert observed.extra["notes"] == observed.extra["cleared"] == observed.extra["facts_in_snapshots"] == 0
    assert runs["advise"].extra["notes"] >= 1 and runs["advise"].extra["facts_in_snapshots"] == 0
    assert runs["advise"].extra["cleared"] == 0
    enforced = runs["enforce"].extra
    assert enforced["facts_in_snapshots"] == enforced["snapshots"]  # every snapshot request got the facts
    assert enforced["cleared"] >= 1  # enforce had work to do: stale results cleared, never a restart
    assert any("truncate" in (a or {}) for a in enforced["actions"])


SPIRAL_SCRIPT = (
    "Probe.\nSTEP shell false\nSTEP shell ls /nonexistent\nSTEP shell cat /nonexistent\n"
    "STEP shell seq 1 2500; false\nSTEP say probed"
)
"""Four failed commands, the last with a long output: the request that carries its result is the first with
four failed calls (the policy's failure-rate rule decides a restart there) and, with Codex's compaction limit
under its size, Codex's remote compaction request (its input ends with the ``compaction_trigger`` item)."""


def test_an_enforced_restart_on_codex_remote_compaction_keeps_its_trigger(tmp_path: Path) -> None:
    """The issue's first finding, exactly: enforce's restart fell on Codex's compaction request, the rewrite
    dropped the trigger item, the fake (as OpenAI) answered a plain turn, and Codex failed ("remote compaction
    v2 expected exactly one compaction output item, got 0"), ``codex exec`` exiting 1."""
    runs = {
        mode: _codex(
            tmp_path / mode,
            mode,
            "default",
            accounting=CODEX_MODEL,
            compact_limit=11000,
            script=SPIRAL_SCRIPT,
            steps_wanted=4,
        )
        for mode in ("observe", "enforce")
    }
    _report("codex (failure spiral)", runs)
    observed, enforced = runs["observe"], runs["enforce"]
    assert observed.ok and observed.compactions == 1, observed.extra
    # the compaction request is the first that carries the fourth failed command's result (where the
    # failure-rate rule decides a restart): every request before it holds fewer
    outputs = observed.extra["outputs"]
    assert outputs[-1] == ("compaction", 4) and all(n < 4 for _, n in outputs[:-1]), outputs
    assert enforced.ok, enforced.extra  # exit 0, every command ran
    assert enforced.compactions == 1 and enforced.extra["trigger_last"]
    assert enforced.requests <= RATIO * observed.requests and enforced.sessions == 1


# ---------------------------------------------------------------- mini-swe-agent (does not compact itself)

MINI_MODEL = "phi-3"
"""The proxy accounts mini-swe-agent's requests as a 16K-window model (zones at 4K / 8K / 16K)."""
MINI_SCRIPT = "Count.\n" + "".join(f"STEP shell seq {i} {i + 1500}\n" for i in range(1, 9))
MINI_STEPS = 8


def _mini_runs(tmp: Path, script: str = MINI_SCRIPT, accounting: str = MINI_MODEL) -> dict[str, Run]:
    """The three modes, each a fake server behind its own proxy, run by one process (litellm takes seconds
    to import)."""
    try:
        import minisweagent  # noqa: F401
    except ImportError:
        pytest.skip("mini-swe-agent not installed (it is in the test extra)")
    servers = {mode: FakeOpenAI(model=CODEX_MODEL) for mode in MODES}
    proxies: dict[str, ProxyProcess] = {}
    try:
        for mode, server in servers.items():
            server.__enter__()
            proxies[mode] = ProxyProcess(server.url, "--mode", mode, "--model", accounting)
            (tmp / mode).mkdir(parents=True)
        jobs = [[f"{proxies[m].url}/v1", "toolcall", script, str(tmp / m / "traj.json")] for m in MODES]
        done = run_mini_jobs(jobs, tmp, timeout=240)
        statuses = {mode: proxy.status() for mode, proxy in proxies.items()}
    finally:
        for proxy in proxies.values():
            proxy.stop()
        for server in servers.values():
            server.__exit__()
    assert done.returncode == 0, done.stderr[-2000:]
    return {mode: _mini_run(mode, servers[mode], statuses[mode], tmp / mode / "traj.json") for mode in MODES}


def _mini_run(mode: str, server: FakeOpenAI, status: dict[str, Any], trajectory: Path) -> Run:
    truth = truth_of(server.log, "openai/" + CODEX_MODEL, failures=0)
    info = json.loads(trajectory.read_text("utf-8")).get("info", {}) if trajectory.exists() else {}
    commands = [
        json.loads(e.answer["tool_calls"][0]["function"]["arguments"])["command"]
        for e in server.exchanges("turn")
        if isinstance(e.answer, dict) and e.answer.get("tool_calls")
    ]
    sessions = status["sessions"]
    assert isinstance(sessions, list)
    return Run(
        mode,
        info.get("exit_status") == "Submitted",
        truth.turns,
        0,
        truth.cost_usd,
        len(sessions),
        {
            "exit_status": info.get("exit_status"),
            "commands": len(commands),
            "distinct": len(set(commands)),
            "actions": [s.get("actions") for s in sessions],
            "cleared": sum(PLACEHOLDER_PREFIX in json.dumps(e.body) for e in server.log),
        },
    )


def test_mini_swe_agent_through_the_proxy_in_every_mode(tmp_path: Path) -> None:
    """An agent that does not compact itself, accounted as a 16K-window model: observe submits after every
    command ran once; enforce's decisions (truncate at the compact zone) are carried out as clearings of
    stale tool output, which keep every turn, so the agent goes on where it was (before, the truncations and
    the restarts they led to sent it back over its commands until its step limit)."""
    runs = _mini_runs(tmp_path)
    _report("mini-swe-agent", runs)
    observed = runs["observe"]
    assert observed.ok and observed.extra["distinct"] == observed.extra["commands"] == MINI_STEPS + 1
    assert any("truncate" in (a or {}) for a in observed.extra["actions"])  # enforce has work to do
    for mode in ("advise", "enforce"):
        run = runs[mode]
        assert run.ok, (mode, run.extra)  # enforce never fails the run observe completes
        assert run.requests <= RATIO * observed.requests, mode
        assert run.cost <= RATIO * observed.cost, mode
        assert run.extra["distinct"] == run.extra["commands"], mode  # no command run twice
        assert run.sessions == 1, mode
    assert runs["enforce"].extra["cleared"] >= 1


MINI_SPIRAL = (
    "Probe.\nSTEP shell false\nSTEP shell ls /nonexistent\nSTEP shell cat /nonexistent\n"
    "STEP shell grep x /nonexistent\nSTEP shell echo one\nSTEP shell echo two\n"
)


def test_mini_swe_agent_restarted_for_a_failure_spiral_goes_on_from_the_checkpoint(tmp_path: Path) -> None:
    """Four failed commands: the failure-rate rule restarts the run (clearing does not end a spiral, so the
    restart is carried out). The restart's checkpoint names the commands its findings came from, which a model
    reads as done (the fake model reads only the request: its own turns and the checkpoint's text); before, it
    named only the tool (``bash: ...``), the model went back over the failing commands, the spiral and its
    restarts came again and the run ended at its step limit (20 requests, 4 distinct commands)."""
    runs = _mini_runs(tmp_path, MINI_SPIRAL, CODEX_MODEL)
    _report("mini-swe-agent (spiral)", runs)
    observed, enforced = runs["observe"], runs["enforce"]
    assert observed.ok and any("restart" in (a or {}) for a in observed.extra["actions"])
    assert enforced.ok, enforced.extra
    assert any("restart" in (a or {}) for a in enforced.extra["actions"])  # the restart was carried out
    assert enforced.extra["distinct"] == enforced.extra["commands"]  # no command run twice
    assert enforced.requests <= RATIO * observed.requests and enforced.cost <= RATIO * observed.cost


def test_codex_through_a_proxy_told_its_window_reads_as_its_rollout(tmp_path: Path) -> None:
    """The window the proxy docs tell a Codex user to give (``--window 258400 --window-is-usable``) is
    what the real Codex states in its rollout for this model, and the proxy's last reading of the
    session is then ``check``'s reading of the rollout (without it, the model's 1M window)."""
    from types import SimpleNamespace

    from .run_codex import codex_exec, rollout_of, stated_windows, write_config

    with FakeOpenAI(model=CODEX_MODEL) as server:
        proxy = ProxyProcess(server.url, "--window", "258400", "--window-is-usable")
        try:
            write_config(tmp_path, SimpleNamespace(url=proxy.url), model=CODEX_MODEL, provider="custom")  # type: ignore[arg-type]
            codex_exec(tmp_path, "Count.\nSTEP shell seq 1 2000\nSTEP shell ls\nSTEP say done")
            status = proxy.status()
        finally:
            proxy.stop()
    rollout = rollout_of(tmp_path)
    assert stated_windows(rollout) == {258_400}
    sessions = status["sessions"]
    assert isinstance(sessions, list) and len(sessions) == 1
    assert sessions[0]["usable_window"] == 258_400
    report = check_json(rollout)
    assert report["window"] == 258_400
    assert sessions[0]["zone"] == report["zone"]
