"""The one exception tree of ctxhealth, with stable codes and exit codes.

Every error says what went wrong and what to do next (``hint``). The CLI maps
each branch to an exit code; library code raises, never exits.

    CtxHealthError                      exit 5  internal: no specific kind (a bug: please report it)
    ├── UsageError                      exit 2  bad flags or arguments
    ├── InputError                      exit 3  bad input data
    │   ├── TranscriptError             a transcript cannot be read (file, line)
    │   ├── UnknownFormatError          no reader recognises the content
    │   ├── StrictModeError             --strict and the reader collected warnings
    │   ├── ConfigError                 a config or profile file is invalid
    │   └── StateError                  a task-state / checkpoint file is invalid
    └── EnvironmentProblem              exit 4  the machine, not the data
        ├── TokenizerUnavailable        an exact tokenizer cannot be loaded
        └── LedgerError                 the SQLite ledger cannot be opened / written
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes shared by every command."""

    OK = 0
    UNHEALTHY = 1
    USAGE = 2
    BAD_INPUT = 3
    ENVIRONMENT = 4
    INTERNAL = 5  # an error of no specific kind, or an unexpected exception: never read as "unhealthy"


class CtxHealthError(Exception):
    """Base of every error ctxhealth raises on purpose."""

    code = "ctxhealth"
    exit_code = ExitCode.INTERNAL

    def __init__(
        self, message: str, *, hint: str = "", path: str | None = None, line: int | None = None
    ) -> None:
        self.message = message
        self.hint = hint
        self.path = path
        self.line = line
        super().__init__(self.render())

    @property
    def location(self) -> str:
        """``file:line`` (or just ``file``) when known, else an empty string."""
        if self.path is None:
            return ""
        return f"{self.path}:{self.line}" if self.line is not None else self.path

    def render(self) -> str:
        """One human line: ``location: message (hint)``."""
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text}. {self.hint}" if self.hint else text


class UsageError(CtxHealthError):
    code = "usage"
    exit_code = ExitCode.USAGE


class InputError(CtxHealthError):
    code = "bad-input"
    exit_code = ExitCode.BAD_INPUT


class TranscriptError(InputError):
    code = "transcript"


class UnknownFormatError(InputError):
    code = "unknown-format"


class StrictModeError(InputError):
    code = "strict"


class ConfigError(InputError):
    code = "config"


class StateError(InputError):
    code = "state"


class EnvironmentProblem(CtxHealthError):
    code = "environment"
    exit_code = ExitCode.ENVIRONMENT


class TokenizerUnavailable(EnvironmentProblem):
    code = "tokenizer"


class LedgerError(EnvironmentProblem):
    code = "ledger"
