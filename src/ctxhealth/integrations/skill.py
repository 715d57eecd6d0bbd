"""The ``context-health`` Agent Skill: a folder with ``SKILL.md`` (name + description front matter,
then the method) and ``reference.md``, installed where each host loads skills from, and the rules
each host holds a skill to.

Skill folders: Claude Code ``~/.claude/skills/`` (project: ``.claude/skills/``), Codex CLI
``$CODEX_HOME/skills/`` (``~/.codex``; project: ``.codex/skills/``), Gemini CLI ``~/.gemini/skills/``
(project: ``.gemini/skills/``). The texts are package data (``ctxhealth/data/context-health.*.md``).
Installing writes the two files (a :class:`~ctxhealth.integrations.hostconfig.FilePlan` each); a
``SKILL.md`` already there that is not ours is left alone; uninstall removes only files that are
still exactly ours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ctxhealth.errors import ConfigError
from ctxhealth.integrations.hostconfig import FilePlan, read_config
from ctxhealth.integrations.mcp_install import Agent

__all__ = [
    "SKILL_NAME",
    "SkillRules",
    "front_matter",
    "plan_skill_install",
    "plan_skill_uninstall",
    "remove_if_empty",
    "skill_dir",
    "skill_files",
    "validate_skill",
]

SKILL_NAME = "context-health"
_FILES = {"SKILL.md": "context-health.SKILL.md", "reference.md": "context-health.reference.md"}


@dataclass(frozen=True, slots=True)
class SkillRules:
    """What a host requires of a skill's front matter (from each host's skill loader)."""

    name_max: int = 64
    description_max: int = 1024
    name_pattern: str = r"[a-z0-9]+(-[a-z0-9]+)*"
    single_line_description: bool = True
    reserved_words: tuple[str, ...] = ()
    no_angle_brackets: bool = False


RULES: dict[Agent, SkillRules] = {
    # Claude Code: the Agent Skills limits, no reserved words in the name, no XML tags in the description.
    Agent.CLAUDE_CODE: SkillRules(reserved_words=("anthropic", "claude"), no_angle_brackets=True),
    # Codex CLI: name <= 64 and description <= 1024 characters once folded onto one line.
    Agent.CODEX: SkillRules(name_pattern=r".+"),
    # Gemini CLI: hyphen-case name, one-line description of at most 1024 characters.
    Agent.GEMINI: SkillRules(name_pattern=r"[a-z0-9-]+"),
}


def skill_files() -> dict[str, str]:
    """File name -> text of the skill folder."""
    data = resources.files("ctxhealth").joinpath("data")
    return {name: data.joinpath(source).read_text(encoding="utf-8") for name, source in _FILES.items()}


def skill_dir(agent: Agent, *, project: bool, home: Path, cwd: Path, codex_home: Path | None = None) -> Path:
    """Where ``agent`` loads the skill folder from (user scope unless ``project``)."""
    base = cwd if project else home
    if agent is Agent.CLAUDE_CODE:
        root = base / ".claude" / "skills"
    elif agent is Agent.GEMINI:
        root = base / ".gemini" / "skills"
    else:
        root = cwd / ".codex" / "skills" if project else (codex_home or home / ".codex") / "skills"
    return root / SKILL_NAME


def front_matter(text: str) -> dict[str, str]:
    """The ``key: value`` lines between the leading ``---`` fences (empty when there are none)."""
    match = re.match(r"---\r?\n(.*?)\r?\n---(\r?\n|$)", text, re.DOTALL)
    if match is None:
        return {}
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and not line.startswith((" ", "\t")):
            fields[key.strip()] = value.strip()
    return fields


def validate_skill(text: str, folder: str, agent: Agent) -> list[str]:
    """What ``agent`` would reject in a ``SKILL.md`` with ``text`` in a folder named ``folder``."""
    rules = RULES[agent]
    fields = front_matter(text)
    if not fields:
        return ["SKILL.md must start with front matter between --- lines"]
    problems: list[str] = []
    name, description = fields.get("name", ""), fields.get("description", "")
    if not name:
        problems.append("front matter has no name")
    elif len(name) > rules.name_max:
        problems.append(f"name is {len(name)} characters (at most {rules.name_max})")
    elif not re.fullmatch(rules.name_pattern, name):
        problems.append(f"name {name!r} must be lower-case letters, digits and single hyphens")
    if name and name != folder:
        problems.append(f"name {name!r} must match the folder name {folder!r}")
    problems += [f"name must not contain {word!r}" for word in rules.reserved_words if word in name]
    if not description:
        problems.append("front matter has no description")
    elif len(description) > rules.description_max:
        problems.append(f"description is {len(description)} characters (at most {rules.description_max})")
    if rules.single_line_description and description in ("|", ">", "|-", ">-"):
        problems.append("description must be on one line")
    if rules.no_angle_brackets and ("<" in description or ">" in description):
        problems.append("description must not contain XML tags")
    return problems


def plan_skill_install(folder: Path) -> list[FilePlan]:
    """The skill's files in ``folder``; raises when a ``SKILL.md`` there is someone else's."""
    files = skill_files()
    current = read_config(folder / "SKILL.md")
    if current is not None and front_matter(current.decode("utf-8", "replace")).get("name") != SKILL_NAME:
        raise ConfigError(
            f"{folder / 'SKILL.md'} is another skill",
            hint="pass another --skills-dir, or move that skill first",
            path=str(folder / "SKILL.md"),
        )
    return [
        FilePlan(folder / name, read_config(folder / name), text.encode("utf-8"), keep_backup=False)
        for name, text in files.items()
    ]


def plan_skill_uninstall(folder: Path) -> list[FilePlan]:
    """Removing the skill's files from ``folder``: each one only while it is still exactly ours."""
    plans: list[FilePlan] = []
    for name, text in skill_files().items():
        path = folder / name
        current = read_config(path)
        if current is None:
            continue
        if current != text.encode("utf-8"):
            plans.append(
                FilePlan(path, current, current, (f"{path} was edited since install: left in place",), False)
            )
            continue
        plans.append(FilePlan(path, current, None, installing=False))
    return plans


def remove_if_empty(folder: Path) -> bool:
    """Remove the skill folder once uninstall has emptied it; True if it was removed."""
    try:
        folder.rmdir()
    except OSError:
        return False
    return True
