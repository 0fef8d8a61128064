"""Error codes are a closed set: a typo is refused where the error is made, not sent as a
500, and a code read off the wire that this version does not know arrives as INTERNAL."""

from __future__ import annotations

from typing import Any, cast, get_args

import msgspec
import pytest

from engine import ErrorCode, FunctionError
from engine._errors import STATUS_TABLE

pytestmark = pytest.mark.unit


def test_the_closed_set_of_codes_is_the_status_table() -> None:
    assert list(get_args(ErrorCode)) == list(STATUS_TABLE)
    statuses = [status for status, _ in STATUS_TABLE.values()]
    assert len(set(statuses)) == len(statuses)  # a status names one code back


def test_an_unknown_code_is_refused_naming_it() -> None:
    typo = cast(Any, "NOT_FOUNDD")
    with pytest.raises(ValueError, match=r"unknown error code 'NOT_FOUNDD'.*NOT_FOUND"):
        FunctionError(typo, "no such thing")


@pytest.mark.parametrize("code", get_args(ErrorCode))
def test_every_code_gets_its_status_and_retryability(code: ErrorCode) -> None:
    err = FunctionError(code, "m")
    assert (err.status, err.retryable) == STATUS_TABLE[code]


def _reply(code: str, retryable: bool = False) -> bytes:
    return msgspec.json.encode({"error": {"code": code, "message": "m", "retryable": retryable}})


def test_an_unknown_code_from_the_wire_arrives_as_internal_with_its_status() -> None:
    err = FunctionError.from_reply("418", "teapot", _reply("TEAPOT", retryable=True))
    assert (err.code, err.status, err.retryable, err.message) == ("INTERNAL", 418, True, "m")
    bare = FunctionError.from_reply(None, None, _reply("TEAPOT"))
    assert (bare.code, bare.status) == ("INTERNAL", 500)


def test_a_known_code_from_the_wire_is_kept() -> None:
    err = FunctionError.from_reply("409", "", _reply("CONFLICT"))
    assert (err.code, err.status, err.retryable) == ("CONFLICT", 409, False)


def test_from_dict_reads_back_what_to_dict_gave() -> None:
    err = FunctionError("UNPROCESSABLE", "no", field="x", retryable=True)
    back = FunctionError.from_dict(err.to_dict())
    assert back.to_dict() == err.to_dict()
    assert FunctionError.from_dict({"code": "TEAPOT", "message": "m"}).code == "INTERNAL"
