"""The MCP server: the tools of :mod:`ctxhealth.mcpserver.tools` and the ``ctxhealth://`` resources
on the official ``mcp`` SDK's low-level server, over stdio or streamable HTTP on loopback.

This is the only module that imports the SDK (the ``mcp`` extra); nothing on the hooks' path imports
it. Each tool call runs in a worker thread under a time bound (:data:`TOOL_TIMEOUT_SECONDS`, below a
hook's timeout): past it the call answers with a tool error and the agent carries on. Arguments are
checked against the tool's input schema first; a :class:`~ctxhealth.errors.CtxHealthError` becomes a
tool error (``isError``) carrying the CLI's fix-it text, never a protocol error that would end the
call chain. Every result carries the structured document and its text.

Resources (the stable aliases under the task-state root):

* ``ctxhealth://checkpoint/latest`` — the latest checkpoint, markdown;
* ``ctxhealth://checkpoint/latest.json`` — the same, JSON;
* ``ctxhealth://summary/latest`` — the task-state summary, markdown.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Callable
from typing import Any

import anyio
import jsonschema
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from ctxhealth import __version__
from ctxhealth.errors import CtxHealthError, UsageError
from ctxhealth.mcpserver import tools
from ctxhealth.mcpserver.schemas import TOOLS

__all__ = ["RESOURCES", "TOOL_TIMEOUT_SECONDS", "build_server", "check_loopback", "serve_http", "serve_stdio"]

TOOL_TIMEOUT_SECONDS = 8.0
"""Longest a tool call may take before it answers with an error (a hook is given 10 s)."""

SERVER_NAME = "ctxhealth"

RESOURCES: dict[str, tuple[str, str, str]] = {
    "ctxhealth://checkpoint/latest": ("checkpoint.md", "text/markdown", "The latest checkpoint (markdown)."),
    "ctxhealth://checkpoint/latest.json": (
        "checkpoint.json",
        "application/json",
        "The latest checkpoint (JSON).",
    ),
    "ctxhealth://summary/latest": ("summary.md", "text/markdown", "The durable task state's summary."),
}
"""URI -> (alias under the state root, MIME type, description)."""

INSTRUCTIONS = (
    "ctxhealth measures your own context window. On long or multi-step work call context_health every "
    "few tool calls; write a checkpoint before the window fills; keep task_state current before each "
    "major action and stop when it answers STATUS:HALT_CONTEXT_LIMIT."
)


def _call(ctx: tools.ToolContext, name: str, args: dict[str, Any]) -> tools.ToolOutput:
    session = {"path": args.get("path"), "session_id": args.get("session_id")}
    if name == "context_health":
        return tools.context_health(ctx, **session)
    if name == "checkpoint":
        return tools.write_checkpoint(ctx, budget_tokens=int(args.get("budget_tokens", 500)), **session)
    if name == "task_state":
        return tools.task_state(
            ctx,
            action=str(args.get("action", "status")),
            goal=str(args.get("goal", "")),
            update=args.get("update"),
            pressure=args.get("pressure"),
            turn=args.get("turn"),
            action_changed_state=bool(args.get("action_changed_state", False)),
            phase_or_goal_changed=bool(args.get("phase_or_goal_changed", False)),
            **session,
        )
    if name == "recovery_plan":
        return tools.recovery_plan(
            ctx, budget_tokens=args.get("budget_tokens"), strategies=args.get("strategies"), **session
        )
    raise UsageError(f"unknown tool {name!r}", hint=f"use one of {', '.join(TOOLS)}")


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def build_server(ctx: tools.ToolContext, *, timeout: float = TOOL_TIMEOUT_SECONDS) -> Server[Any]:
    """The low-level SDK server bound to ``ctx`` (the host, the state root, settings)."""

    listed = [
        types.Tool(
            name=name,
            title=spec["title"],
            description=spec["description"],
            input_schema=spec["input"],
            output_schema=spec["output"],
            annotations=types.ToolAnnotations(
                read_only_hint=name in ("context_health", "recovery_plan"),
                destructive_hint=False,
                idempotent_hint=name in ("context_health", "recovery_plan"),
                open_world_hint=False,
            ),
        )
        for name, spec in TOOLS.items()
    ]

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = TOOLS.get(params.name)
        if spec is None:
            return _error(f"ctxhealth: unknown tool {params.name!r}; the tools are {', '.join(TOOLS)}")
        args = dict(params.arguments or {})
        try:
            jsonschema.validate(args, spec["input"])
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
            return _error(f"ctxhealth: invalid {where}: {exc.message}")
        work: Callable[[], tools.ToolOutput] = functools.partial(_call, ctx, params.name, args)
        try:
            with anyio.fail_after(timeout):
                out = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except TimeoutError:
            return _error(
                f"ctxhealth: {params.name} took longer than {timeout:g} s and was abandoned; "
                "run the matching `ctxhealth` command from a shell, or pass a smaller `path`"
            )
        except CtxHealthError as exc:
            return _error(f"ctxhealth: error: {exc.render()}")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=out.text)], structured_content=out.structured
        )

    async def list_resources(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=uri, name=alias, description=about, mime_type=mime)
                for uri, (alias, mime, about) in RESOURCES.items()
            ]
        )

    async def read_resource(
        _ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        entry = RESOURCES.get(uri)
        if entry is None:
            raise ValueError(f"unknown resource {uri}; the resources are {', '.join(RESOURCES)}")
        alias, mime, _ = entry
        text = tools.read_latest(ctx.root, alias)
        if text is None:
            what = "checkpoint" if alias.startswith("checkpoint") else "summary"
            hint = (
                "call the checkpoint tool" if what == "checkpoint" else "call task_state with action=ensure"
            )
            text = json.dumps({"missing": True, "detail": f"no {what} under {ctx.root} yet; {hint}"})
            mime = "application/json"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime)]
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def serve_stdio(ctx: tools.ToolContext) -> None:
    """Serve one client over stdin/stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    server = build_server(ctx)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def check_loopback(host: str) -> bool:
    """True for a loopback address or ``localhost``; a name that is not an IP address is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_http(ctx: tools.ToolContext, *, host: str, port: int, on_ready: Callable[[str], None]) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` (``on_ready`` hears the URL)."""
    import uvicorn

    server = build_server(ctx)
    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)

    async def main() -> None:
        async def announce() -> None:
            while not web.started:
                await anyio.sleep(0.02)
            bound = web.servers[0].sockets[0].getsockname() if web.servers else (host, port)
            shown = f"[{host}]" if ":" in host else host
            on_ready(f"http://{shown}:{bound[1]}/mcp")

        async with anyio.create_task_group() as group:
            group.start_soon(announce)
            await web.serve()

    anyio.run(main)
