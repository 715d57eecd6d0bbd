"""Finding formats and sessions cheaply without changing what is found: a head's lines decoded once for
every reader's ``detect``, a cut-off line refused without the slow decoder, and a session's sub-agent
folder found without a path object per session."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.sources import discover, lines
from ctxhealth.sources.claude_code.layout import subagent_files
from ctxhealth.sources.lines import BadJSON, head_objects, loads
from ctxhealth.sources.reader import detect_format

FIXTURES = Path(__file__).parent / "fixtures"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _fresh(head: bytes) -> list[Any]:
    """The head's values decoded by a copy of it (a new object: nothing kept applies)."""
    return list(head_objects(bytes(bytearray(head))))


def _heads() -> list[bytes]:
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json"))
    assert len(files) > 20
    return [p.read_bytes()[: 64 * 1024] for p in files]


def test_a_second_reader_of_a_head_reads_the_values_a_fresh_decode_gives() -> None:
    for head in _heads():
        first = head_objects(head)
        taken = next(first, None)  # a reader that stops after one value (as a detect that matched)
        again = list(head_objects(head))  # the next reader: the kept value, then the rest decoded
        assert again == _fresh(head)
        assert taken is None or taken == again[0]
        assert list(first) == again[1:]  # the first reader goes on where it stopped


def test_formats_are_found_as_on_a_head_no_reader_saw_before() -> None:
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file()):
        head = path.read_bytes()[: 64 * 1024]
        assert detect_format(head) == detect_format(bytes(bytearray(head))), path


def test_two_threads_reading_one_head_read_the_same_values() -> None:
    head = b"\n".join(json.dumps({"type": "user", "n": i}).encode() for i in range(8)) + b"\n"
    seen: list[list[Any]] = []
    start = threading.Barrier(4)

    def read() -> None:
        start.wait()
        seen.append(list(head_objects(head)))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [_fresh(head)] * 4


def test_a_head_longer_than_the_kept_limit_is_decoded_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    head = b'{"type": "user", "uuid": "u"}\n' * 3
    monkeypatch.setattr(lines, "_HEAD_KEPT_BYTES", len(head) - 1)
    assert list(head_objects(head)) == list(head_objects(head)) == [{"type": "user", "uuid": "u"}] * 3
    assert lines._last_head.head is not head


@settings(max_examples=300, deadline=None)
@given(json_values.filter(lambda v: isinstance(v, (dict, list))), st.data())
def test_a_cut_off_document_is_refused_without_the_slow_decoder(value: Any, data: st.DataObject) -> None:
    raw = json.dumps(value).encode()
    cut = data.draw(st.integers(1, len(raw) - 1)) if len(raw) > 1 else 1
    prefix = raw[:cut]
    try:
        json.loads(prefix)
    except ValueError:
        cut_off = True
    else:
        cut_off = False  # a prefix that is itself a whole value ("[1" of "[12]" is not; "1" would be)
    if cut_off:
        with pytest.raises(BadJSON):
            loads(prefix)
    else:
        assert loads(prefix) == json.loads(prefix)


def test_what_only_the_slow_decoder_reads_is_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    assert loads(b'{"a": "\\ud800", "n": 1}') == {"a": "\ufffd", "n": 1}
    assert loads(b'{"big": 1e400}') == {"big": float("inf")}
    called: list[bytes] = []
    real = lines._json.loads

    def spy(raw: Any, **kwargs: Any) -> Any:
        called.append(raw)
        return real(raw, **kwargs)

    monkeypatch.setattr(lines._json, "loads", spy)
    with pytest.raises(BadJSON):
        loads(b'{"a": "cut off')
    assert called == []  # cut off: refused by orjson alone
    with pytest.raises(BadJSON):
        loads(b'{"a": nope}')
    assert called == [b'{"a": nope}']  # any other refusal: the slow decoder has its say


def _reference_subagent_files(path: Path) -> list[str]:
    """The sub-agent files as the path formula first stated it (path objects all the way)."""
    folder = path.with_name(path.name.removesuffix(".gz").removesuffix(".jsonl")) / "subagents"
    if not folder.is_dir():
        return []
    return [
        str(c)
        for c in sorted(folder.iterdir())
        if c.name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz"))
        and not c.name.endswith(".meta.json")
        and not c.name.startswith(".")
        and c.is_file()
    ]


def test_sub_agent_files_are_named_as_the_path_formula_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "projects" / "p"
    agents = project / "s1" / "subagents"
    agents.mkdir(parents=True)
    (project / "s1.jsonl").write_text("{}\n")
    (project / "s2.jsonl.gz").write_bytes(b"")
    (project / "s2" / "subagents").mkdir(parents=True)
    (project / "s2" / "subagents" / "agent-z.jsonl").write_text("{}\n")
    for name in ("agent-b.jsonl", "agent-a.jsonl", "agent-a.meta.json", ".agent-c.jsonl", "notes.txt"):
        (agents / name).write_text("{}\n")
    (agents / "folder.jsonl").mkdir()
    (agents / "link.jsonl").symlink_to(agents / "agent-a.jsonl")
    (agents / "dangling.jsonl").symlink_to(agents / "gone.jsonl")
    monkeypatch.chdir(tmp_path)
    spellings = [
        "projects/p/s1.jsonl",
        "./projects/p/s1.jsonl",
        "projects//p/s1.jsonl",
        "projects/p/../p/s1.jsonl",
        str(project / "s1.jsonl"),
        "projects/p/s2.jsonl.gz",
        "projects/p/none.jsonl",
    ]
    for spelling in spellings:
        for given_as in (spelling, Path(spelling)):
            got = [str(p) for p in subagent_files(given_as)]
            assert got == _reference_subagent_files(Path(spelling)), spelling
    assert [Path(p).name for p in subagent_files("projects/p/s1.jsonl")] == [
        "agent-a.jsonl",
        "agent-b.jsonl",
        "link.jsonl",
    ]
    walked = {Path(s.path).name: [Path(c).name for c in s.companions] for s in discover([tmp_path])}
    assert walked["s1.jsonl"] == ["agent-a.jsonl", "agent-b.jsonl", "link.jsonl"]
    assert walked["s2.jsonl.gz"] == ["agent-z.jsonl"]
