"""The records on the hot commands' import path are ``msgspec.Struct`` classes (created in C at
import) and behave as the frozen, slotted dataclasses they replaced: the same ``repr`` (it appears
in messages and tests), equality, hashing of the frozen ones, immutability, pickling (process
pools), ``replace`` and positional construction in field order. Each is checked against a
dataclass twin built from its own fields and defaults."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxhealth import config, model, monitor
from ctxhealth.accounting import catalog, fill, registry, tokens, types
from ctxhealth.policy import decision, profile
from ctxhealth.signals import base, calls, events, requests
from ctxhealth.sources import reader, walk
from ctxhealth.sources.claude_code import builder, tail

MODULES = (
    model,
    types,
    decision,
    profile,
    registry,
    catalog,
    tokens,
    config,
    fill,
    monitor,
    base,
    calls,
    events,
    requests,
    walk,
    reader,
    builder,
    tail,
)
RECORDS = sorted(
    (
        value
        for module in MODULES
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, msgspec.Struct)
        and value.__module__ == module.__name__
    ),
    key=lambda c: f"{c.__module__}.{c.__qualname__}",
)
_NO_DEFAULT = msgspec.NODEFAULT


def _twin(cls: type[msgspec.Struct]) -> Any:
    """A dataclass with the Struct's fields, defaults and frozenness (what it was declared as)."""
    specs: list[Any] = []
    for info in msgspec.structs.fields(cls):
        if info.default is not _NO_DEFAULT:
            specs.append((info.name, Any, dataclasses.field(default=info.default)))
        elif info.default_factory is not _NO_DEFAULT:
            specs.append((info.name, Any, dataclasses.field(default_factory=info.default_factory)))
        else:
            specs.append((info.name, Any))
    frozen = cls.__struct_config__.frozen
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=frozen, slots=True)


def _required(cls: type[msgspec.Struct], salt: int) -> dict[str, Any]:
    """Rising numbers for the fields without a default (a ``__post_init__`` may check their order)."""
    required = [
        f.name
        for f in msgspec.structs.fields(cls)
        if f.default is _NO_DEFAULT and f.default_factory is _NO_DEFAULT
    ]
    return {name: salt * 100 + i + 1 for i, name in enumerate(required)}


def test_the_hot_path_records_are_found() -> None:
    names = {c.__qualname__ for c in RECORDS}
    assert {"Session", "Message", "Usage", "ModelInfo", "Profile", "Decision", "Assessment"} <= names
    assert len(RECORDS) >= 40


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_record_behaves_as_its_dataclass_twin(cls: type[msgspec.Struct]) -> None:
    twin = _twin(cls)
    values = _required(cls, 1)
    record, reference = cls(**values), twin(**values)
    assert repr(record) == repr(reference)
    assert (record == cls(**values) and record != cls(**_required(cls, 2))) or not values
    names = cls.__struct_fields__
    assert tuple(f.name for f in dataclasses.fields(reference)) == names
    # positional construction follows the field order
    assert cls(*(getattr(record, n) for n in names)) == record
    last = names[-1]
    changed = msgspec.structs.replace(record, **{last: 10_000})
    assert getattr(changed, last) == 10_000
    assert all(getattr(changed, n) == getattr(record, n) for n in names[:-1])
    assert repr(changed) == repr(dataclasses.replace(reference, **{last: 10_000}))
    if cls.__struct_config__.frozen:
        with pytest.raises(AttributeError):
            setattr(record, last, 0)
        hashable = all(isinstance(getattr(record, n), str | int | float | bool | tuple | None) for n in names)
        if hashable:
            assert hash(record) == hash(cls(**values))
    else:
        setattr(record, last, 0)
        assert getattr(record, last) == 0
        with pytest.raises(TypeError):
            hash(record)


@pytest.mark.parametrize(
    "cls", [c for c in RECORDS if c.__module__ == "ctxhealth.model"], ids=lambda c: c.__name__
)
def test_a_model_record_pickles(cls: type[msgspec.Struct]) -> None:
    record = cls(**_required(cls, 3))
    assert pickle.loads(pickle.dumps(record)) == record


texts = st.text(max_size=20)


@given(
    st.tuples(texts, texts, st.booleans(), st.none() | st.integers(-5, 300)),
    st.tuples(texts, texts, st.booleans(), st.none() | st.integers(-5, 300)),
)
def test_tool_results_compare_and_hash_as_tuples_of_their_fields(
    a: tuple[Any, ...], b: tuple[Any, ...]
) -> None:
    # what a frozen dataclass guarantees: equal exactly when the fields are, and equal ones hash alike
    x, y = model.ToolResult(*a), model.ToolResult(*b)
    assert (x == y) == (a == b)
    if x == y:
        assert hash(x) == hash(y)


def test_a_session_is_written_as_the_dataclass_was() -> None:
    from ctxhealth.cli.common import dump_json

    usage = model.Usage(1, 2, 3, 4)
    message = model.Message(model.Role.ASSISTANT, (model.TextBlock("hi"),), usage=usage)
    twin_usage = _twin(model.Usage)(1, 2, 3, 4)
    assert dump_json({"m": message.usage}) == dump_json({"m": twin_usage})
    assert dump_json([message.blocks[0]]) == '[{"text":"hi"}]'
    with pytest.raises(TypeError):
        dump_json(object())
