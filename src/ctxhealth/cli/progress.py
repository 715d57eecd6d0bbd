"""A progress bar on stderr for long commands: shown only on a terminal and only once the work has
taken a while (short runs and pipes see nothing); rich is imported only then, and a total given as
a function (counting the inputs has a cost of its own) is computed only then."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

SHOW_AFTER_SECONDS = 1.0
"""Work that finishes sooner never shows a bar."""


class ProgressBar:
    """``with ProgressBar("checking", total) as bar: bar.advance(label)``; a no-op unless stderr is a
    terminal and the work is still running after :data:`SHOW_AFTER_SECONDS`."""

    def __init__(
        self,
        description: str,
        total: float | Callable[[], float | None] | None,
        *,
        stream: TextIO | None = None,
        force: bool = False,
    ) -> None:
        self.description = description
        self._count = total if callable(total) else None
        self.total: float | None = None if callable(total) else total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = force or self.stream.isatty()
        self.started = time.monotonic()
        self.done = 0.0
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, done: float, total: float | None = None, label: str = "") -> None:
        """Set the amount done (and the total, when it became known)."""
        self.done = done
        if total is not None:
            self.total = total
        if not self.enabled:
            return
        if self._bar is None:
            if time.monotonic() - self.started < SHOW_AFTER_SECONDS:
                return
            self._start()
            if self._bar is None:
                return
        self._bar.update(self._task, completed=self.done, total=self.total, label=label[-60:])

    def advance(self, amount: float = 1.0, label: str = "") -> None:
        self.update(self.done + amount, label=label)

    def _start(self) -> None:
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        except ImportError:  # rich is optional (the report / fleet extras): no bar then
            self.enabled = False
            return
        if self._count is not None and self.total is None:
            self.total = self._count()
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[label]}", style="dim"),
            console=Console(file=self.stream),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(self.description, total=self.total, completed=self.done, label="")
