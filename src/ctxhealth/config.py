"""Settings: one frozen value built from flags, environment, project and user config, with origins.

Precedence, highest first (the design's convention):

1. flags given on the command line (the CLI passes them as a dict);
2. ``CTXHEALTH_*`` environment variables: ``CTXHEALTH_HOME``, ``CTXHEALTH_MODEL``,
   ``CTXHEALTH_PROFILE``, and any nested key as ``CTXHEALTH_<TABLE>__<KEY>`` (for example
   ``CTXHEALTH_PROFILE__COOLDOWN=5``; values are read as TOML literals when they parse, else
   as strings);
3. ``./.ctxhealth.toml`` in the working directory;
4. the user config ``$CTXHEALTH_HOME/config.toml`` (home defaults to ``~/.ctxhealth``);
5. built-in defaults.

Tables merge key by key, so a project file can change one field of a model entry and keep
the rest from the user file. Every value remembers where it came from (``Settings.origin``);
``ctxhealth config show`` prints them. The home directory itself comes only from flags, the
environment or the default, since it locates the user config.

Known keys: ``home``, ``model`` (treat every session as this model), ``profile`` (a profile
file), ``[profile]`` (inline profile overrides, plus an optional ``file`` key),
``[models."<id prefix>"]`` (model registry entries, see
:meth:`ctxhealth.accounting.registry.ModelRegistry.with_overrides`). Other tables are kept as
they are for the layers that own them (:meth:`Settings.section`).

Library code receives a :class:`Settings`; only the CLI calls :func:`load_settings` with the
real environment.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.errors import ConfigError
from ctxhealth.home import HOME_ENV, default_home
from ctxhealth.lazy import pattern

ENV_PREFIX = "CTXHEALTH_"
PROJECT_FILE = ".ctxhealth.toml"
USER_FILE = "config.toml"

Key = tuple[str, ...]

_SCALARS: dict[str, type] = {"home": str, "model": str, "profile": str}
_ENV_SCALARS = {f"{ENV_PREFIX}{name.upper()}": name for name in _SCALARS}
_TABLES_OF_TABLES = frozenset({"models"})
# ``profile`` is either a file path or a table of inline overrides (with an optional ``file``).
_SCALAR_OR_TABLE = frozenset({"profile"})


class Settings(msgspec.Struct, frozen=True):
    """Resolved settings: flat ``key path -> value`` plus ``key path -> origin``.

    ``origin`` strings read ``default``, ``flag --model``, ``env CTXHEALTH_MODEL``,
    ``/path/.ctxhealth.toml`` or ``/home/u/.ctxhealth/config.toml``.
    """

    home: Path
    values: Mapping[Key, Any] = msgspec.field(default_factory=lambda: MappingProxyType({}))
    origins: Mapping[Key, str] = msgspec.field(default_factory=lambda: MappingProxyType({}))
    files: tuple[Path, ...] = ()

    @property
    def model(self) -> str | None:
        value = self.values.get(("model",))
        return value if isinstance(value, str) and value else None

    @property
    def profile(self) -> Path | None:
        """The profile file: ``profile = "path"`` or ``file`` inside the ``[profile]`` table."""
        value = self.values.get(("profile",), self.values.get(("profile", "file")))
        return Path(value).expanduser() if isinstance(value, str) and value else None

    @property
    def profile_overrides(self) -> dict[str, Any]:
        """Inline threshold overrides from the ``[profile]`` table (its ``file`` key excluded)."""
        return {k: v for k, v in self.section("profile").items() if k != "file"}

    @property
    def model_overrides(self) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.section("models").items() if isinstance(v, dict)}

    def get(self, *key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def origin(self, *key: str) -> str:
        return self.origins.get(key, "default")

    def section(self, name: str) -> dict[str, Any]:
        """The nested table ``[name]`` rebuilt from all layers (empty when nobody set it)."""
        out: dict[str, Any] = {}
        for key, value in self.values.items():
            if len(key) < 2 or key[0] != name:
                continue
            node = out
            for part in key[1:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = value
        return out

    def registry(self, base: ModelRegistry | None = None) -> ModelRegistry:
        """The model registry with this configuration's ``[models]`` entries applied."""
        registry = base or ModelRegistry.default()
        for prefix, table in self.model_overrides.items():
            origin = self.origin("models", prefix, next(iter(table))) if table else "config"
            registry = registry.with_overrides({prefix: table}, origin=origin)
        return registry

    def items(self) -> Iterator[tuple[str, Any, str]]:
        """``(dotted key, value, origin)`` for every value, sorted by key."""
        for key in sorted(self.values):
            yield display_key(key), self.values[key], self.origins.get(key, "default")


def display_key(key: Key) -> str:
    """``("models", "gpt-4.1", "window")`` -> ``models."gpt-4.1".window``."""
    return ".".join(part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else f'"{part}"' for part in key)


def _flatten(table: Mapping[str, Any], prefix: Key = ()) -> Iterator[tuple[Key, Any]]:
    for name, value in table.items():
        key = (*prefix, str(name))
        if isinstance(value, Mapping):
            yield from _flatten(value, key)
        else:
            yield key, value


_LINE_RE = r"at line (\d+)"
"""Where tomllib's message names the line (compiled only for a bad config file)."""


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a syntax error becomes a :class:`ConfigError` at ``file:line``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"cannot read config file: {exc.strerror or exc}",
            hint="check the file's permissions or remove it",
            path=str(path),
        ) from None
    import tomllib  # only when a config file exists: most runs have none

    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(
            "config file is not UTF-8 text", hint="save it as UTF-8 TOML", path=str(path)
        ) from None
    except tomllib.TOMLDecodeError as exc:
        match = pattern(_LINE_RE).search(str(exc))
        line = int(match.group(1)) if match else None
        reason = pattern(_LINE_RE).split(str(exc))[0].rstrip(" (")
        raise ConfigError(
            f"invalid TOML: {reason}",
            hint="fix the syntax (see https://toml.io) or remove the file",
            path=str(path),
            line=line,
        ) from None


def _check_shape(key: Key, value: Any, origin: str) -> None:
    """Known keys must have the right type; everything else is left to its owner."""
    top = key[0]
    if len(key) == 1 and top in _SCALARS and not isinstance(value, _SCALARS[top]):
        raise ConfigError(
            f"'{top}' must be a {_SCALARS[top].__name__}, not {type(value).__name__}",
            hint=f'write it as {top} = "..."',
            path=origin,
        )
    if top in _TABLES_OF_TABLES and len(key) < 3:
        raise ConfigError(
            f"'{display_key(key)}' must be a table of fields",
            hint=f'write it as [{top}."<id prefix>"] with fields such as window = 200000',
            path=origin,
        )
    if top in _SCALARS and len(key) > 1 and top not in _SCALAR_OR_TABLE:
        raise ConfigError(
            f"'{top}' must be a single value, not a table", hint=f'write {top} = "..."', path=origin
        )


def _env_value(raw: str) -> Any:
    """A TOML literal when the text is one (numbers, booleans, arrays), else the text itself."""
    import tomllib

    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _env_layer(env: Mapping[str, str]) -> list[tuple[Key, Any, str]]:
    out: list[tuple[Key, Any, str]] = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX):
            continue
        if name in _ENV_SCALARS:
            out.append(((_ENV_SCALARS[name],), env[name], f"env {name}"))
        elif "__" in name:
            parts = tuple(p.lower() for p in name[len(ENV_PREFIX) :].split("__"))
            if all(parts):
                out.append((parts, _env_value(env[name]), f"env {name}"))
    return out


def _flag_layer(flags: Mapping[str, Any]) -> list[tuple[Key, Any, str]]:
    out: list[tuple[Key, Any, str]] = []
    for name, value in flags.items():
        if value is None:
            continue
        key = tuple(name.split("."))
        out.append(
            (key, str(value) if isinstance(value, Path) else value, f"flag --{name.replace('_', '-')}")
        )
    return out


def resolve_home(flags: Mapping[str, Any], env: Mapping[str, str]) -> tuple[Path, str]:
    """The ctxhealth home and its origin: flag, then ``CTXHEALTH_HOME``, then ``~/.ctxhealth``."""
    if flags.get("home"):
        return Path(str(flags["home"])).expanduser(), "flag --home"
    return Path(default_home(env)), f"env {HOME_ENV}" if env.get(HOME_ENV) else "default"


def load_settings(flags: Mapping[str, Any], env: Mapping[str, str], cwd: Path) -> Settings:
    """Resolve settings from every layer (see the module docstring for precedence)."""
    home, home_origin = resolve_home(flags, env)
    values: dict[Key, Any] = {("home",): str(home)}
    origins: dict[Key, str] = {("home",): home_origin}
    files: list[Path] = []

    def apply(layer: list[tuple[Key, Any, str]], *, from_file: bool = False) -> None:
        for key, value, origin in layer:
            if key == ("home",) and from_file:
                raise ConfigError(
                    "'home' cannot be set in a config file (it locates the user config)",
                    hint="use --home or the CTXHEALTH_HOME environment variable",
                    path=origin,
                )
            if key == ("home",):
                continue  # already resolved above
            _check_shape(key, value, origin)
            # A scalar replaces a whole table and vice versa: drop what it shadows.
            for existing in [k for k in values if k[: len(key)] == key or key[: len(k)] == k]:
                del values[existing]
                origins.pop(existing, None)
            values[key] = value
            origins[key] = origin

    # Lowest precedence first; later layers overwrite.
    for path in (home / USER_FILE, cwd / PROJECT_FILE):
        if path.is_file():
            files.append(path)
            apply([(k, v, str(path)) for k, v in _flatten(read_toml(path))], from_file=True)
    apply(_env_layer(env))
    apply(_flag_layer(flags))

    settings = Settings(
        home=home,
        values=MappingProxyType(values),
        origins=MappingProxyType(origins),
        files=tuple(files),
    )
    settings.registry()  # validate model tables now, with their origin, not at first use
    return settings
