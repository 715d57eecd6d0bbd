"""Task-state schema: validation names the field, documents round-trip, kinds are told apart."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.errors import StateError
from ctxhealth.state.schema import (
    SCHEMA_NAME,
    SCHEMA_VERSION,
    Artifact,
    Decision,
    FailedAttempt,
    LastAction,
    Outcome,
    SchemaKind,
    TaskState,
    classify_document,
    dump_state,
    merge_update,
    missing_required,
    parse_state,
    state_from_dict,
)
from ctxhealth.state.summary import render_summary, summary_digest, summary_matches


def _doc(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "goal": "ship it",
        "current_phase": "build",
        "next_action": "write tests",
    }
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"goal": 3}, "`goal`"),
        ({"constraints": "not a list"}, "`constraints`"),
        ({"constraints": ["ok", 5]}, "`constraints[1]`"),
        ({"decisions": [{"decision": "use sqlite"}]}, "`decisions[0].why`"),
        ({"decisions": [{"decision": "a", "why": "b"}, "c"]}, "`decisions[1]`"),
        ({"artifacts": [{"role": "x"}]}, "`artifacts[0].path`"),
        ({"last_action": {"summary": "x", "outcome": "meh"}}, "`last_action.outcome`"),
        ({"last_action": []}, "`last_action`"),
        ({"failed_attempts": [{"attempt": 1}]}, "`failed_attempts[0].attempt`"),
    ],
)
def test_validation_error_names_the_field(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(StateError) as info:
        state_from_dict(_doc(**fields), path="task-state.json")
    assert named in info.value.message
    assert "archive" in info.value.hint
    assert info.value.path == "task-state.json"


def test_corrupt_and_empty_bytes_are_state_errors() -> None:
    for data in (b"", b"  \n", b'{"schema": "ctxhealth/task-state", "goal": "x', b"[1, 2"):
        with pytest.raises(StateError):
            parse_state(data)


def test_missing_required() -> None:
    assert missing_required(_doc()) == []
    doc = _doc(next_action="   ")
    del doc["goal"]
    assert missing_required(doc) == ["goal", "next_action"]


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        (_doc(), SchemaKind.CURRENT),
        (_doc(schema_version=SCHEMA_VERSION + 1), SchemaKind.NEWER),
        (_doc(schema_version=0), SchemaKind.LEGACY),
        ({"goal": "x", "next_action": "y"}, SchemaKind.LEGACY),
        ({"name": "package", "version": "1.0"}, SchemaKind.FOREIGN),
        ([1, 2], SchemaKind.FOREIGN),
        (_doc(schema_version="1"), SchemaKind.FOREIGN),
    ],
)
def test_classify(doc: Any, kind: SchemaKind) -> None:
    assert classify_document(doc) is kind


def test_non_current_document_is_refused() -> None:
    with pytest.raises(StateError, match="legacy"):
        state_from_dict({"goal": "x", "next_action": "y"})


def test_merge_update_validates_and_rejects_unknown() -> None:
    state = state_from_dict(_doc())
    merged = merge_update(state, {"next_action": "deploy", "blockers": ["ci red"]})
    assert (merged.next_action, merged.blockers, merged.goal) == ("deploy", ("ci red",), "ship it")
    with pytest.raises(StateError, match="unknown task state field"):
        merge_update(state, {"nxt_action": "x"})
    with pytest.raises(StateError, match="`blockers`"):
        merge_update(state, {"blockers": "ci red"})


def test_done_actions() -> None:
    for word in ("DONE", "complete", " Finish "):
        assert TaskState("g", "p", word).is_done
    assert not TaskState("g", "p", "done soon").is_done


text = st.text(max_size=40)
states = st.builds(
    TaskState,
    goal=text,
    current_phase=text,
    next_action=text.filter(lambda s: s.strip() != ""),
    last_action=st.builds(LastAction, text, st.sampled_from(list(Outcome))),
    constraints=st.lists(text, max_size=3).map(tuple),
    invariants=st.lists(text, max_size=3).map(tuple),
    decisions=st.lists(st.builds(Decision, text, text), max_size=3).map(tuple),
    completed_steps=st.lists(text, max_size=3).map(tuple),
    failed_attempts=st.lists(st.builds(FailedAttempt, text, text), max_size=3).map(tuple),
    blockers=st.lists(text, max_size=3).map(tuple),
    artifacts=st.lists(st.builds(Artifact, text, text), max_size=3).map(tuple),
    important_outputs=st.lists(text, max_size=3).map(tuple),
    updated_at=text,
)


@settings(max_examples=80, deadline=None)
@given(states)
def test_round_trip(state: TaskState) -> None:
    data = dump_state(state)
    assert parse_state(data) == state
    assert orjson.loads(data)["schema"] == SCHEMA_NAME


@settings(max_examples=40, deadline=None)
@given(states)
def test_summary_covers_fields_and_matches_only_its_state(state: TaskState) -> None:
    summary = render_summary(state)
    assert summary_digest(summary) is not None
    assert summary_matches(summary, state)
    other = TaskState(state.goal, state.current_phase, state.next_action + "x")
    assert not summary_matches(summary, other)
    for heading in (
        "Goal",
        "Current phase",
        "Next action",
        "Last action",
        "Constraints",
        "Invariants",
        "Decisions",
        "Completed steps",
        "Failed attempts",
        "Blockers",
        "Artifacts",
        "Important outputs",
    ):
        assert heading in summary
