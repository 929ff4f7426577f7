"""librate/_ffi.py against include/rate.h: every rate_* function of the header is declared
with the same types, and the structs and constants agree. (The header is generated from
the Rust source by cbindgen and checked for drift there; this closes the loop to Python.)
"""

from __future__ import annotations

import re
from ctypes import POINTER, c_char, c_char_p, c_int32, c_int64, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import Any

import pytest

from librate import _ffi

HEADER = Path(__file__).resolve().parents[3] / "include" / "rate.h"

# C spelling (tokens joined by single spaces) -> the ctypes type _ffi must use.
C_TYPES: dict[str, Any] = {
    "void": None,
    "int32_t": c_int32,
    "uint8_t": c_uint8,
    "uint32_t": c_uint32,
    "uint64_t": c_uint64,
    "size_t": c_size_t,
    "const char *": c_char_p,
    # A buffer the library writes a reason into.
    "char *": POINTER(c_char),
    # Same pointer at the ABI level; c_char_p passes a bytes object without a copy.
    "const uint8_t *": c_char_p,
    # Opaque handles travel as c_void_p (see _ffi.HANDLE).
    "struct rate_limiter *": c_void_p,
    "const struct rate_limiter *": c_void_p,
    "struct rate_keyed *": c_void_p,
    "const struct rate_keyed *": c_void_p,
    "struct rate_limiter * *": POINTER(c_void_p),
    "struct rate_keyed * *": POINTER(c_void_p),
    "const struct rate_config *": POINTER(_ffi.rate_config),
    "struct rate_config *": POINTER(_ffi.rate_config),
    # The batch's arrays: keys (as c_char_p, see above), their lengths, the statuses.
    "const uint8_t * const *": POINTER(c_char_p),
    "const size_t *": POINTER(c_size_t),
    "int32_t *": POINTER(c_int32),
    "uint32_t *": POINTER(c_uint32),
    "uint16_t *": POINTER(c_uint16),
    "struct rate_decision *": POINTER(_ffi.rate_decision),
    "struct rate_reservation *": POINTER(_ffi.rate_reservation),
    "struct rate_keyed_stats *": POINTER(_ffi.rate_keyed_stats),
    "struct rate_counts *": POINTER(_ffi.rate_counts),
    "struct rate_rule_counts *": POINTER(_ffi.rate_rule_counts),
    "struct rate_lease_stats *": POINTER(_ffi.rate_lease_stats),
    "struct rate_redis_script *": POINTER(_ffi.rate_redis_script),
    "struct rate_redis_policy_script *": POINTER(_ffi.rate_redis_policy_script),
    "const struct rate_redis_policy_script *": POINTER(_ffi.rate_redis_policy_script),
    "struct rate_policy *": c_void_p,
    "const struct rate_policy *": c_void_p,
    "struct rate_policy * *": POINTER(c_void_p),
    "struct rate_policy_decision *": POINTER(_ffi.rate_policy_decision),
    "struct rate_keyed_policy *": c_void_p,
    "const struct rate_keyed_policy *": c_void_p,
    "struct rate_keyed_policy * *": POINTER(c_void_p),
    "const struct rate_keyed_rule *": POINTER(_ffi.rate_keyed_rule),
    "struct rate_keyed_rule *": POINTER(_ffi.rate_keyed_rule),
    "const uint64_t *": POINTER(c_uint64),
    "struct rate_lease_holder *": c_void_p,
    "const struct rate_lease_holder *": c_void_p,
    "struct rate_lease_holder * *": POINTER(c_void_p),
    "struct rate_keyed_lease_holder *": c_void_p,
    "const struct rate_keyed_lease_holder *": c_void_p,
    "struct rate_keyed_lease_holder * *": POINTER(c_void_p),
    "struct rate_keyed_lease_round *": c_void_p,
    "const struct rate_keyed_lease_round *": c_void_p,
    "struct rate_keyed_lease_round * *": POINTER(c_void_p),
    "const uint8_t * *": POINTER(c_void_p),
    "size_t *": POINTER(c_size_t),
    "const int64_t *": POINTER(c_int64),
    "const struct rate_lease_rule *": POINTER(_ffi.rate_lease_rule),
    "const struct rate_lease_renewal *": POINTER(_ffi.rate_lease_renewal),
    "struct rate_lease_renewal *": POINTER(_ffi.rate_lease_renewal),
    "struct rate_lease_grant *": POINTER(_ffi.rate_lease_grant),
    # A struct's field of struct type (rate_lease_rule.config).
    "struct rate_config": _ffi.rate_config,
}


def header_text() -> str:
    """The header without comments."""
    text = HEADER.read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", " ", text)


def spelled(declaration: str) -> str:
    return " ".join(declaration.replace("*", " * ").split())


def header_functions() -> dict[str, tuple[str, list[str]]]:
    """name -> (return type, [parameter types]) for every rate_* prototype."""
    functions = {}
    code = re.sub(r"^\s*#.*$", " ", header_text(), flags=re.MULTILINE)  # no preprocessor
    for match in re.finditer(r"([\w\s\*]+?)\b(rate_\w+)\s*\(([^)]*)\)\s*;", code):
        returns, name, parameters = match.groups()
        types = []
        for parameter in filter(None, (p.strip() for p in parameters.split(","))):
            if parameter == "void":
                continue
            types.append(spelled(re.sub(r"\w+$", "", parameter)))  # drop the name
        functions[name] = (spelled(returns), types)
    return functions


def test_header_is_parsed() -> None:
    # Guards the parser itself: the functions docs/c.md fixes for the direct limiter.
    functions = header_functions()
    assert functions["rate_limiter_reserve_at"] == (
        "int32_t",
        ["struct rate_limiter *", "uint64_t", "uint64_t", "uint64_t", "struct rate_decision *"],
    )
    assert functions["rate_version"] == ("const char *", [])


@pytest.mark.parametrize("name", sorted(header_functions()))
def test_every_header_function_is_declared(name: str) -> None:
    returns, parameters = header_functions()[name]
    assert name in _ffi.SIGNATURES, f"{name} is in rate.h but missing from librate/_ffi.py"
    restype, argtypes = _ffi.SIGNATURES[name]
    assert restype is C_TYPES[returns], f"{name} returns {returns}"
    assert list(argtypes) == [C_TYPES[p] for p in parameters], f"{name}({', '.join(parameters)})"


@pytest.mark.parametrize(
    "struct",
    [
        _ffi.rate_config,
        _ffi.rate_decision,
        _ffi.rate_keyed_stats,
        _ffi.rate_counts,
        _ffi.rate_rule_counts,
        _ffi.rate_lease_stats,
        _ffi.rate_lease_rule,
        _ffi.rate_lease_grant,
    ],
)
def test_structs_match(struct: Any) -> None:
    name = struct.__name__
    body = re.search(rf"typedef struct {name} \{{(.*?)\}} {name};", header_text(), re.DOTALL)
    assert body, f"struct {name} not in rate.h"
    fields = [spelled(f).rsplit(" ", 1) for f in body.group(1).split(";") if f.strip()]
    assert [(field_name, C_TYPES[ctype]) for ctype, field_name in fields] == list(struct._fields_)


def test_the_renewal_struct_matches() -> None:
    # Its argument array is a 2-D char array, which test_structs_match does not parse.
    pattern = r"typedef struct rate_lease_renewal \{(.*?)\} rate_lease_renewal;"
    body = re.search(pattern, header_text(), re.DOTALL)
    assert body, "struct rate_lease_renewal not in rate.h"
    assert spelled(body.group(1)) == (
        "uint64_t sent_at_ns; char args[RATE_LEASE_ARGS][RATE_LEASE_ARG_BYTES];"
    )
    fields = _ffi.rate_lease_renewal._fields_
    assert [name for name, _ in fields] == ["sent_at_ns", "args"] and fields[0][1] is c_uint64
    args = fields[1][1]
    assert (args._length_, args._type_._length_) == (
        _ffi.RATE_LEASE_ARGS,
        _ffi.RATE_LEASE_ARG_BYTES,
    )
    assert args._type_._type_ is c_char


def test_constants_match() -> None:
    defines = re.findall(r"#define (RATE_\w+) \(?(?:0 - )?(\d+)\)?", header_text())
    negative = set(re.findall(r"#define (RATE_\w+) \(0 - ", header_text()))
    assert len(defines) >= 12
    for name, digits in defines:
        value = -int(digits) if name in negative else int(digits)
        assert getattr(_ffi, name) == value, name
