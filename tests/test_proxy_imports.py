"""The proxy, the guard and the SDK wrappers stay off the per-turn hook path and the CLI's start-up."""

from __future__ import annotations

from test_import_boundaries import loaded_after

HEAVY = ("starlette", "uvicorn", "httpx", "anthropic", "openai", "langchain_core")


def test_hooks_and_cli_start_up_load_no_proxy_code() -> None:
    for statement in (
        "import ctxhealth.cli.hook, ctxhealth.cli.statusline, ctxhealth.integrations.claude_code.hooks",
        "import ctxhealth.cli.main",
    ):
        modules = loaded_after(statement)
        ours = {
            m
            for m in modules
            if m.startswith(("ctxhealth.integrations.guard", "ctxhealth.integrations.proxy"))
        }
        assert not ours, (statement, ours)
        assert not {m for m in modules if m.split(".")[0] in HEAVY}, statement


def test_the_guard_loads_no_web_framework() -> None:
    modules = loaded_after("import ctxhealth.integrations.guard")
    assert not {m for m in modules if m.split(".")[0] in HEAVY}
