"""Command groups that answer an unknown command with the closest known ones."""

from __future__ import annotations

import click


class SuggestingGroup(click.Group):
    """A click group whose "No such command" error names the closest commands (difflib)."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        unknown = name and not name.startswith("-") and self.get_command(ctx, name) is None
        if unknown and not ctx.resilient_parsing:  # shell completion asks quietly
            ctx.fail(unknown_command_message(name, self.list_commands(ctx), ctx.command_path))
        return super().resolve_command(ctx, args)


def unknown_command_message(name: str, known: list[str], command_path: str) -> str:
    """``No such command 'chek'. Did you mean 'check'?`` (or the list of commands when none is close)."""
    import difflib  # only on this error path: hooks start through this group on every turn

    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if not close:  # a prefix of a command (``ctxhealth inst``) is close too
        close = [k for k in known if k.startswith(name)][:3]
    if close:
        return f"No such command {name!r}. Did you mean {' or '.join(repr(c) for c in close)}?"
    return f"No such command {name!r}. Commands: {', '.join(known)} (see '{command_path} --help')."
