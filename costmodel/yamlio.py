"""YAML loading that remembers the line of every field, and user-facing unit parsing.

Config files are edited by hand, so every complaint must point at a line. ``load_yaml`` returns the
plain data plus a :class:`LineMap` from field paths (``("levels", 2, "capacity")``) to 1-based line
numbers; ``validation_error`` turns a pydantic ``ValidationError`` into one precise
:class:`UserError` line: ``file:line: levels[2].capacity: expected ..., got ...``. Study files
(and any other YAML format) reuse the same helpers.
"""

from __future__ import annotations

import codecs
import difflib
import json
import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from costmodel.errors import UserError

PathKey = tuple[str | int, ...]


def format_path(path: Sequence[str | int]) -> str:
    """``("levels", 2, "capacity")`` -> ``levels[2].capacity``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


@dataclass(frozen=True)
class LineMap:
    """Field path -> line (1-based) of a loaded YAML file; unknown paths fall back to a parent."""

    file: str
    lines: dict[PathKey, int]
    text: str = field(default="", repr=False)
    """The text these lines are of (what was parsed: a copy of the file must be this, not a re-read)."""

    def line(self, path: Sequence[str | int]) -> int | None:
        key = tuple(path)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.lines.get((), None)

    def where(self, path: Sequence[str | int]) -> str:
        """``file:line: field.path`` for messages."""
        line = self.line(path)
        loc = f"{self.file}:{line}" if line is not None else self.file
        return f"{loc}: {format_path(path)}"

    def error(self, path: Sequence[str | int], message: str) -> UserError:
        """A UserError located at ``path``."""
        return UserError(f"{self.where(path)}: {message}")


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


_MERGE = "tag:yaml.org,2002:merge"
_COLLECTION_TAGS = {yaml.MappingNode: "tag:yaml.org,2002:map", yaml.SequenceNode: "tag:yaml.org,2002:seq"}
MAX_ALIAS_NODES = 100_000
"""Nodes that aliases may add to a file's own: a file whose aliases nest ("billion laughs") would
otherwise expand into gigabytes before any field is checked."""
MAX_DEPTH = 100
"""Mappings and lists nested in one another at most (the formats need under 10): at 500 or so the
converter, and JSON's parser at 1,000, ran out of Python's recursion limit with a traceback."""


class _Converter:
    """A composed YAML document as plain Python data plus the line of every field path.

    Why not PyYAML's own constructor: it keeps no lines. This one also refuses, with the line,
    what plain data has no room for: tags other than YAML's own, an alias inside itself, and
    aliases that expand past :data:`MAX_ALIAS_NODES`. Merge keys (``<<: *base``) follow YAML 1.1:
    a mapping's own keys win, then earlier merged mappings over later ones."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.lines: dict[PathKey, int] = {}
        self.distinct: set[int] = set()
        self.visited = 0
        self.open: set[int] = set()  # the collections being converted (an alias to one is a cycle)

    def fail(self, node: yaml.Node, path: PathKey, message: str) -> UserError:
        return UserError(f"{self.shown}:{node.start_mark.line + 1}: {format_path(path)}: {message}")

    def convert(self, node: yaml.Node, path: PathKey) -> Any:
        self.lines[path] = node.start_mark.line + 1
        self.visited += 1
        self.distinct.add(id(node))
        if self.visited > len(self.distinct) + MAX_ALIAS_NODES:
            raise self.fail(node, path, f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes; write the "
                                        "values out instead of nesting aliases")
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        if len(path) >= MAX_DEPTH:
            raise UserError(f"{self.shown}:{node.start_mark.line + 1}: nested more than {MAX_DEPTH} levels deep")
        tag = _COLLECTION_TAGS[type(node)]
        if node.tag != tag:
            raise self.fail(node, path, f"unsupported YAML tag {node.tag!r} (plain mappings, lists and scalars only)")
        if id(node) in self.open:
            raise self.fail(node, path, "an alias refers to a mapping or list that contains it (a cycle)")
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
            return self.mapping(node, path)
        finally:
            self.open.discard(id(node))

    def mapping(self, node: yaml.MappingNode, path: PathKey) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}  # (keyed like ``out``: 1 and 1.0 are one key)
        merge: tuple[yaml.Node, yaml.Node] | None = None
        for knode, vnode in node.value:
            line = knode.start_mark.line + 1
            if knode.tag == _MERGE:
                if merge is not None:
                    raise self.fail(knode, path, f"duplicate key '<<' (first given on line "
                                                 f"{merge[0].start_mark.line + 1})")
                merge = (knode, vnode)
                continue
            key, child = self.key(knode, path)
            if key in out:  # YAML forbids it; PyYAML would silently keep the last value
                raise self.fail(knode, child, f"duplicate key (first given on line {first_line[key]})")
            out[key] = self.convert(vnode, child)
            first_line[key] = self.lines[child] = line
        if merge is None:
            return out
        knode, vnode = merge
        for src in vnode.value if isinstance(vnode, yaml.SequenceNode) else [vnode]:
            if not isinstance(src, yaml.MappingNode):
                raise self.fail(knode, path, "a merge key '<<' takes a mapping or a list of mappings")
            own_lines, self.lines = self.lines, {}  # (the source's lines apart: only its new keys count)
            merged = self.convert(src, path)
            src_lines, self.lines = self.lines, own_lines
            taken = {_part(k) for k in merged if k not in out}  # (own keys and earlier merges win)
            out.update((k, v) for k, v in merged.items() if k not in out)
            own_lines.update((p, n) for p, n in src_lines.items() if len(p) > len(path) and p[len(path)] in taken)
        return out

    def key(self, knode: yaml.Node, path: PathKey) -> tuple[Any, PathKey]:
        if not isinstance(knode, yaml.ScalarNode):
            raise self.fail(knode, path, "expected a plain key, got a mapping or list as a key")
        key = self.scalar(knode, path)
        return key, (*path, _part(key))

    def scalar(self, node: yaml.ScalarNode, path: PathKey) -> Any:
        """A scalar as the type its resolved tag says (int, float, bool, null, str), except where
        YAML 1.1 (PyYAML's rules) and YAML 1.2 read a plain number differently: an unquoted
        ``1e-3`` is a float and ``0o20`` an octal int, as in YAML 1.2 (YAML 1.1 wants a dot,
        ``1.0e-3``, and has no ``0o``); a leading zero (``010``: octal 8 in YAML 1.1, 10 in 1.2)
        and base 60 (``1:30``: 90 in YAML 1.1, text in 1.2) are refused, as a silent 8 or 90 in
        a capacity or a layer size would be a wrong result."""
        value, plain = node.value, not node.style  # (plain: None, or "" in libyaml)
        if plain and node.tag in (_INT, _FLOAT) and ":" in value:
            raise self.fail(node, path, f"{value}: YAML 1.1 reads this as a base-60 number "
                                        f"({self.constructed(node, path)}); write the number, or quote it if it is text")
        if plain and _LEADING_ZERO.fullmatch(value):
            octal = f" (YAML 1.1 reads octal {self.constructed(node, path)})" if node.tag == _INT else ""
            raise self.fail(node, path, f"{value}: a number with a leading zero{octal}; write "
                                        f"{int(value.replace('_', ''), 10)}, or quote it if it is text")
        if plain and node.tag == _STR and _EXPONENT.fullmatch(value):
            return float(value)
        if plain and node.tag == _STR and _OCTAL.fullmatch(value):
            return int(value.replace("0o", "", 1), 8)
        return self.constructed(node, path)

    def constructed(self, node: yaml.ScalarNode, path: PathKey) -> Any:
        """The scalar as PyYAML's safe constructor reads it."""
        try:
            return _CONSTRUCTOR.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise self.fail(node, path, f"unsupported YAML value or tag {node.tag!r} ({exc.problem})") from None
        except (ValueError, LookupError, AttributeError, TypeError):  # an explicit tag on a value it cannot read
            raise self.fail(node, path, f"{node.value!r} is not a valid {node.tag.rsplit(':', 1)[-1]}") from None


def _part(key: Any) -> str | int:
    """A mapping key as a part of a field path."""
    return key if isinstance(key, (str, int)) else str(key)


_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_STR = "tag:yaml.org,2002:str"
_EXPONENT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")
_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_OCTAL = re.compile(r"[-+]?0o[0-7]+")
_LEADING_ZERO = re.compile(r"[-+]?0[0-9_]*[0-9][0-9_]*")


def read_text(path: Path, shown: str) -> str:
    """A hand-edited file's text; unreadable or non-UTF-8 -> a UserError naming the file and line.
    A leading byte-order mark (Windows editors write one) is dropped: YAML allowed it, JSON did not."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{shown}: cannot read file ({exc.strerror or exc})") from None
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{shown}:{line}: expected UTF-8 text, got byte 0x{raw[exc.start]:02x}") from None


def load_yaml(path: str | Path) -> tuple[Any, LineMap]:
    """Parse a YAML file; return its data and the line of every field. Syntax errors -> UserError."""
    p = Path(path)
    shown = _display(p)
    text = read_text(p, shown)
    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise UserError(f"{shown}{line}: YAML syntax error: {exc.problem or exc}") from None
    except yaml.reader.ReaderError as exc:  # (a character YAML does not allow: NUL, a control character)
        at = text.find(chr(exc.character))  # (its first use is the one refused; libyaml counts bytes, PyYAML characters)
        line = f":{text.count(chr(10), 0, at) + 1}" if at >= 0 else ""
        raise UserError(f"{shown}{line}: YAML syntax error: character #x{exc.character:04x} is not allowed "
                        "in YAML; remove it") from None
    if node is None:
        return None, LineMap(shown, {(): 1}, text)
    conv = _Converter(shown)
    data = conv.convert(node, ())
    return data, LineMap(shown, conv.lines, text)


def load_data(path: str | Path) -> tuple[Any, LineMap | None]:
    """An input file's data: JSON for a ``.json`` name, else YAML, which also gives each field's line
    (JSON's parser keeps none). Errors are one line: ``file:line: ...``."""
    p = Path(path)
    if p.suffix.lower() != ".json":
        return load_yaml(p)
    shown = _display(p)
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:  # JSON leaves duplicates undefined; Python would keep the last silently
            if key in seen:
                raise UserError(f"{shown}: duplicate key {key!r} in a JSON object")
            seen.add(key)
        return dict(pairs)

    text = read_text(p, shown)
    try:
        data = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise UserError(f"{shown}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise UserError(f"{shown}: nested more than {MAX_DEPTH} levels deep") from None
    if _depth(data) > MAX_DEPTH:
        raise UserError(f"{shown}: nested more than {MAX_DEPTH} levels deep")
    return data, None


def _depth(data: Any) -> int:
    """How deeply lists and mappings nest in ``data`` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            stack.extend((x, level + 1) for x in (item.values() if isinstance(item, dict) else item))
    return deepest


def _expected_keys(model: Any, loc: Sequence[str | int]) -> list[str]:
    """Field names allowed where an unknown key was found, by walking the pydantic model."""
    import typing

    from pydantic import BaseModel

    cls: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or part not in cls.model_fields:
            return []
        ann = cls.model_fields[part].annotation
        found = None
        stack = [ann]
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                found = t
                break
            stack.extend(typing.get_args(t))
        if found is None:
            return []
        cls = found
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return sorted(f.alias or n for n, f in cls.model_fields.items())
    return []


_PLAIN = {
    "int_parsing": "an integer",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}
_BOUND = {
    "greater_than": ("gt", ">"),
    "greater_than_equal": ("ge", ">="),
    "less_than": ("lt", "<"),
    "less_than_equal": ("le", "<="),
}


def _data_path(loc: Sequence[str | int], data: Any) -> PathKey:
    """Drop pydantic's union-member tags (``'str'``, ``'float'``) from an error location."""
    out: list[str | int] = []
    cur = data
    for i, part in enumerate(loc):
        in_dict = isinstance(cur, dict) and part in cur
        in_list = isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        if in_dict or in_list:
            cur = cur[part]
        elif i < len(loc) - 1 or not isinstance(cur, dict):
            continue  # a union tag, not a field
        out.append(part)
    return tuple(out)


def did_you_mean(word: Any, allowed: Sequence[str]) -> str:
    """``; did you mean 'x'?`` for the closest of ``allowed``, or nothing."""
    close = difflib.get_close_matches(str(word), allowed, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def _resolves(path: PathKey, data: Any) -> bool:
    """Every part of ``path`` names a key or index of ``data``."""
    cur = data
    for part in path:
        if not ((isinstance(cur, dict) and part in cur)
                or (isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur))):
            return False
        cur = cur[part]
    return True


def validation_error(exc: Any, lines: LineMap, model: Any = None, data: Any = None) -> UserError:
    """The first error of a pydantic ValidationError as one located, readable UserError.

    An unknown key is reported before anything else: a typo also makes the real key "missing", and
    "did you mean" is the useful message.
    """
    errors = exc.errors()
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])

    def where(e: Any) -> PathKey:
        loc = tuple(e["loc"])
        return _data_path(loc, data) if data is not None and e["type"] != "missing" else loc

    # a value no member of a union takes fails once per member: report the member that got furthest
    # into the value (a mapping given for `list | dict` has a bad key, not "expected a list")
    loc = where(err)
    base = loc if _resolves(loc, data) else loc[:-1]  # (less a union member's tag)
    deeper = [(p, e) for e in errors if (p := where(e))[:len(base)] == base and len(p) > len(base)
              and _resolves(p, data)]
    if err["type"] != "extra_forbidden" and deeper:
        loc, err = max(deeper, key=lambda pe: len(pe[0]))
    got = short_repr(err.get("input"))
    kind = err["type"]
    if kind == "missing":
        msg = "required field is missing"
    elif kind == "extra_forbidden":
        allowed = _expected_keys(model, loc) if model is not None else []
        hint = did_you_mean(loc[-1], allowed)
        listed = f" (expected one of: {', '.join(allowed)})" if allowed and not hint else ""
        msg = f"unknown field '{loc[-1]}'{hint}{listed}"
    elif kind in _PLAIN:
        msg = f"expected {_PLAIN[kind]}, got {got}"
    elif kind in _BOUND:
        key, op = _BOUND[kind]
        bound = err.get("ctx", {}).get(key)
        shown = f"{bound:g}" if isinstance(bound, float) else bound  # (an integer bound exactly)
        msg = f"expected a number {op} {shown}, got {got}"
    elif kind == "too_short":  # a list or mapping with fewer items than min_length
        n = err.get("ctx", {}).get("min_length")
        msg = f"expected at least {n} item{'' if n == 1 else 's'}, got {got}"
    else:
        text = re.sub(r"^(Value error|Assertion failed), ", "", err["msg"])
        text = text[0].lower() + text[1:] if text else text
        if not text.startswith("expected"):
            text = f"expected {text.removeprefix('input should be ')}"
        msg = text if ", got " in text else f"{text}, got {got}"
    return lines.error(loc, msg)


_SIZE = re.compile(r"^[ \t]*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)[ \t]*([A-Za-z]*)[ \t]*$")
# (spaces and tabs only: what \s matches differs between Python and the JavaScript of editors that
# check a config with its JSON Schema, whose pattern below is built from the same pieces)
_BYTE_UNITS = {
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "kb": 1024,
    "kib": 1024,
    "mb": 1024**2,
    "mib": 1024**2,
    "gb": 1024**3,
    "gib": 1024**3,
}
MAX_WORDS = 2**53  # capacities stay exact as floats and far inside the int64 counts
MAX_HZ = 1e15
_WORD_UNITS = {"": 1, "word": 1, "words": 1, "kwords": 1024, "mwords": 1024**2}
_FREQ_UNITS = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}


def _quantity_pattern(units: Any, *, bare: bool) -> str:
    """The JSON Schema pattern (ECMA-262: no inline flags, so each letter a class of both cases)
    of a string ``_SIZE`` reads with one of ``units`` (or none, with ``bare``)."""
    alternatives = "|".join("".join(f"[{c.lower()}{c.upper()}]" for c in u) for u in units if u)
    return rf"^[ \t]*[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?[ \t]*(?:{alternatives}){'?' if bare else ''}[ \t]*$"


SIZE_PATTERN = _quantity_pattern([*_WORD_UNITS, *_BYTE_UNITS], bare=True)
"""The strings :func:`parse_size` reads (for the config's JSON Schema)."""
FREQ_PATTERN = _quantity_pattern(_FREQ_UNITS, bare=False)
"""The strings :func:`parse_frequency` reads."""


def parse_size(value: Any, word_bits: int) -> int:
    """A capacity in words: a bare number is words; ``'64 KiB'``/``'2 MB'`` are bytes (binary, JEDEC).

    Raises ValueError (TypeError for a non-scalar) with the expected form.
    """
    expected = "expected a positive size like '64 KiB', '2 MB' or a word count"
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):  # (numpy numbers too)
        raise TypeError(f"{expected}, got {value!r}")
    if isinstance(value, numbers.Real):
        number, unit = _finite(value, value, expected), ""
    elif m := _SIZE.match(value):
        number, unit = _finite(m.group(1), value, expected), m.group(2).lower()
    else:
        raise ValueError(f"{expected}, got {short_repr(value)}")
    if number <= 0:
        raise ValueError(f"{expected}, got {short_repr(value)}")
    if unit in _WORD_UNITS:
        words = number * _WORD_UNITS[unit]
    elif unit in _BYTE_UNITS:
        words = number * _BYTE_UNITS[unit] * 8 / word_bits
    else:
        raise ValueError(f"{expected} (units: B, KiB/KB, MiB/MB, GiB/GB, words), got {value!r}")
    if words > MAX_WORDS:
        raise ValueError(f"{expected} of at most 2**53 words, got {short_repr(value)}")
    if abs(words - round(words)) > 1e-9 or round(words) < 1:
        raise ValueError(f"{expected}; {value!r} is not a whole number of {word_bits}-bit words")
    return round(words)


def parse_frequency(value: Any) -> float:
    """A clock in Hz: a bare number is Hz; ``'1 GHz'``, ``'200 MHz'`` carry units."""
    expected = "expected a positive frequency like '1 GHz' or '200 MHz' (or Hz as a number)"
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):  # (numpy numbers too)
        raise TypeError(f"{expected}, got {value!r}")
    if isinstance(value, numbers.Real):
        hz = _finite(value, value, expected)
    elif isinstance(value, str) and (m := _SIZE.match(value)) and m.group(2).lower() in _FREQ_UNITS:
        hz = _finite(m.group(1), value, expected) * _FREQ_UNITS[m.group(2).lower()]
    else:
        raise ValueError(f"{expected}, got {short_repr(value)}")
    if hz < 1 or hz > MAX_HZ:  # (below 1 Hz, the seconds, leakage and EDP of a layer ran to inf)
        raise ValueError(f"{expected} from 1 Hz up to 1 PHz, got {short_repr(value)}")
    return hz


def _finite(number: Any, value: Any, expected: str) -> float:
    """``number`` (read from the field's ``value``) as a finite float: YAML's .inf / .nan and
    numbers past float range are mistakes."""
    try:
        out = float(number)
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"{expected}, got {short_repr(value)}")
    return out


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to a readable length (a pasted 400-digit number is still a mistake)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"
