"""The documentation site agrees with the code: the generated command pages with the CLI, the API
pages with the package's public names and objects, the error table with the error tree, and the
README's links with the files and pages they point to. (CI also builds the site with ``--strict``.)"""

from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest
from tests.conftest import REPO_ROOT

import ctxhealth
from ctxhealth import errors

DOCS = REPO_ROOT / "docs"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli", DOCS / "gen_cli.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_cli"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return load_generator()


def test_committed_command_pages_match_the_cli(gen: ModuleType) -> None:
    problems = gen.out_of_date()
    assert not problems, "\n".join([*problems, "Regenerate with: python docs/gen_cli.py"])


def test_every_visible_command_and_option_has_a_page_and_a_row(gen: ModuleType) -> None:
    for top in gen.top_level():
        page = (DOCS / "commands" / f"{top.path[0]}.md").read_text(encoding="utf-8")
        for doc in gen.walk(top.command, top.ctx, top.path):
            for param in doc.command.params:
                if isinstance(param, click.Option) and not param.hidden:
                    assert f"`{param.opts[0]}`" in page, (top.path, param.opts)


@click.group()
def toy() -> None:
    """A toy CLI."""


@toy.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--budget", type=click.IntRange(min=1), default=500, show_default=True, help="Token budget.")
@click.option("--mode", type=click.Choice(["fast", "slow"]), help="How to run.")
@click.option("--root", envvar="TOY_ROOT", default=".toy", show_default=True, help="Root <dir>.")
@click.option("--label", multiple=True, help="A label_name.")
@click.option("--color/--no-color", default=None, help="Colour.")
@click.option("--python", default="/some/interpreter", help="Interpreter (default: this one).")
@click.option("--old", hidden=True, help="Hidden alias.")
def run(**_: object) -> None:
    """Run the toy.

    It does | things."""


def toy_top(gen: ModuleType, name: str = "run") -> object:
    ctx = click.Context(toy, info_name="toy")
    command = toy.get_command(ctx, name)
    assert command is not None
    return gen.Documented((name,), command, click.Context(command, info_name=name, parent=ctx))


def test_reference_block_states_every_option_as_help_would(gen: ModuleType) -> None:
    block = gen.reference(toy_top(gen))
    assert block.startswith(gen.BEGIN) and block.rstrip().endswith(gen.END)
    assert "ctxhealth run [OPTIONS] PATHS..." in block
    assert "| `PATHS` | TEXT | required, any number |" in block
    assert "| `--budget` | INTEGER RANGE | Token budget. (default: `500`; range: `x>=1`) |" in block
    assert "| `--mode` | one of `fast`, `slow` | How to run. |" in block
    assert "| `--root` | TEXT | Root &lt;dir&gt;. (default: `.toy`; env: `TOY_ROOT`) |" in block
    assert "| `--label` | TEXT | A label\\_name. (repeatable) |" in block
    assert "| `--color` / `--no-color` | flag | Colour. |" in block
    assert "It does \\| things." not in block and "It does | things." in block
    assert "--old" not in block  # hidden, as in --help
    assert "/some/interpreter" not in block  # a default --help does not show is not shown


def test_regeneration_keeps_hand_written_text_and_replaces_the_block(gen: ModuleType) -> None:
    top = toy_top(gen)
    stale = f"# toy run\n\nWritten by hand.\n\n{gen.BEGIN}\n| `--gone` | old |\n{gen.END}\n\nAfter.\n"
    page = gen.render_page(top, stale)
    assert page.startswith("# toy run\n\nWritten by hand.\n\n")
    assert page.endswith(f"{gen.END}\n\nAfter.\n")
    assert "--gone" not in page and "`--budget`" in page
    assert gen.render_page(top, page) == page  # stable
    new = gen.render_page(top, None)
    assert new.startswith("# ctxhealth run\n\nRun the toy.\n\n")
    with pytest.raises(SystemExit, match="markers are missing"):
        gen.render_page(top, "# toy run\n\nno markers\n")


def test_nav_entries_between_the_markers_are_replaced(gen: ModuleType) -> None:
    yml = f"nav:\n  - Home: index.md\n  - Commands:\n      {gen.NAV_BEGIN}\n      - old: commands/old.md\n"
    yml += f"      {gen.NAV_END}\n  - API: api/index.md\n"
    out = gen.render_nav([toy_top(gen)], yml)
    assert "old.md" not in out
    assert (
        f"      {gen.NAV_BEGIN}\n      - commands/index.md\n      - ctxhealth run: commands/run.md\n" in out
    )
    assert out.endswith(f"      {gen.NAV_END}\n  - API: api/index.md\n")


def test_check_reports_an_edited_block_and_a_page_without_command_and_write_fixes_it(
    gen: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(DOCS / "commands", tmp_path / "docs" / "commands")
    shutil.copy(REPO_ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr(gen, "COMMANDS_DIR", tmp_path / "docs" / "commands")
    monkeypatch.setattr(gen, "MKDOCS_YML", tmp_path / "mkdocs.yml")
    assert gen.out_of_date() == []
    check = tmp_path / "docs" / "commands" / "check.md"
    hand_written, block = check.read_text(encoding="utf-8").split(gen.BEGIN)
    check.write_text(hand_written + gen.BEGIN + block.replace("`--strict`", "`--lenient`"), encoding="utf-8")
    (tmp_path / "docs" / "commands" / "gone.md").write_text("# gone\n", encoding="utf-8")
    problems = gen.out_of_date()
    assert any("check.md is out of date" in p for p in problems), problems
    assert any("gone.md documents a command the CLI does not have" in p for p in problems), problems
    assert gen.write() == [check]
    assert check.read_text(encoding="utf-8").startswith(hand_written)
    assert [p for p in gen.out_of_date() if "check.md" in p] == []


def test_every_public_name_is_on_the_api_index() -> None:
    index = (DOCS / "api" / "index.md").read_text(encoding="utf-8")
    missing = [name for name in ctxhealth.__all__ if f"`{name}`" not in index]
    assert not missing, f"add these exported names to docs/api/index.md: {missing}"


def api_targets() -> list[str]:
    """Every object an API page renders: each ``:::`` target, and each of its ``members: [...]``."""
    found = []
    for page in sorted((DOCS / "api").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for target, options in re.findall(r"^::: ([\w.]+)\n((?:    .*\n)*)", text, flags=re.MULTILINE):
            found.append(target)
            members = re.search(r"members: \[(.*)\]", options)
            if members:
                found += [f"{target}.{name.strip()}" for name in members.group(1).split(",")]
    return found


@pytest.mark.parametrize("target", api_targets())
def test_api_pages_name_objects_that_exist(target: str) -> None:
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)
        return
    pytest.fail(f"{target}: no such module")


def test_error_table_matches_the_error_tree() -> None:
    text = (DOCS / "api" / "errors.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| `([\w-]+)` \| (\d) \|", text, flags=re.MULTILINE)
    documented = {name: (base, code, int(exit_code)) for name, base, code, exit_code in rows}
    actual = {
        name: (cls.__bases__[0].__name__, cls.code, int(cls.exit_code))
        for name, cls in vars(errors).items()
        if isinstance(cls, type) and issubclass(cls, errors.CtxHealthError)
    }
    assert documented == actual


README = REPO_ROOT / "README.md"


def test_readme_links_point_at_files_and_pages_in_the_site() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) > 20, "the README links into the site"
    external = [link for link in links if "://" in link]
    assert not external, f"README.md links outside the repository: {external}"
    missing = [link for link in links if not (REPO_ROOT / link).is_file()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
    nav = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    outside_site = [link for link in links if link.endswith(".md") and link.removeprefix("docs/") not in nav]
    assert not outside_site, f"README.md links to pages that are not in the site's nav: {outside_site}"


def test_readme_keeps_the_set_up_commands_and_maps_every_command() -> None:
    text = README.read_text(encoding="utf-8")
    assert "pip install -e . && ctxhealth check examples/claude-code-session.jsonl\n" in text
    assert "pip install -e '.[test]' && python -m pytest\n" in text
    commands = "check report fleet audit pack proxy install doctor watch recover retention state checkpoint"
    for command in [*commands.split(), "calibrate", "validate", "config"]:
        assert f"](docs/commands/{command}.md)" in text, f"the README's command map misses {command}"
    assert len(text.splitlines()) <= 80, "the README is one screen: move detail into docs/"


def test_every_page_in_the_nav_exists() -> None:
    nav = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    pages = re.findall(r"([\w./-]+\.md)\s*$", nav, flags=re.MULTILINE)
    assert len(pages) > 20
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing, missing


def python_examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        blocks = re.findall(
            r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL
        )
        found += [(f"{page.relative_to(DOCS)}#{i}", block) for i, block in enumerate(blocks)]
    return found


@pytest.mark.parametrize(("where", "code"), python_examples(), ids=[w for w, _ in python_examples()])
def test_python_examples_in_the_docs_run(where: str, code: str) -> None:
    namespace: dict[str, object] = {name: getattr(ctxhealth, name) for name in ctxhealth.__all__}
    exec(compile(code, where, "exec"), namespace)
