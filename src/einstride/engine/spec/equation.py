"""Parse einsum equations into typed, immutable specs with integer label ids.

Two levels, both immutable and hashable:

* :class:`Equation` -- the equation alone (string or sublist form), independent of shapes:
  one tuple of label ids per input term, the output term, and where each label was
  written (for messages).  ``ELLIPSIS`` marks the ``...`` of a term.
* :class:`EinsumSpec` -- an equation bound to operand shapes: every axis of every operand
  has a concrete label id (the dimensions covered by ``...`` get ids of their own), every
  label has a size, and the output is a tuple of ids.  This is what the planner, the
  gradients and other backends consume.

>>> spec = parse_equation("bij,bjk->bik", (8, 2, 3), (8, 3, 4))
>>> spec.inputs, spec.output
(((0, 1, 2), (0, 2, 3)), (0, 1, 3))
>>> spec.sizes, spec.names
((8, 2, 3, 4), ('b', 'i', 'j', 'k'))
>>> spec = parse_equation("...i,i", (5, 2, 3), (3,))   # implicit output: '...' first
>>> spec.inputs, spec.output, spec.names
(((1, 2, 0), (0,)), (1, 2), ('i', '…0', '…1'))
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

from ...errors import EinsumError, EinsumTypeError
from ...memory import check_listing

__all__ = [
    "ELLIPSIS",
    "MAX_LABEL",
    "EinsumSpec",
    "Equation",
    "bind",
    "int_tuple",
    "parse_equation",
    "parse_sublists",
    "parse_subscripts",
    "quoted",
    "shorten_equation",
    "sub_equation",
]

ELLIPSIS: Final = -1
"""The marker of ``...`` inside :attr:`Equation.terms` and :attr:`Equation.output`."""

_SPECIAL = frozenset(",.->")

MAX_LABEL: Final = 2**63 - 1
"""The largest int label of the sublist form."""

_INT = {int}


def int_tuple(value: object) -> TypeGuard[tuple[int, ...]]:
    """Whether ``value`` is a tuple of plain ints (no bools, no NumPy integers): the common
    shape or path entry, which callers check cheaply before the general way.

    >>> int_tuple((2, 3)), int_tuple((2, True)), int_tuple([2, 3]), int_tuple(())
    (True, False, False, True)
    """
    return type(value) is tuple and set(map(type, value)) <= _INT


# Messages quote at most this many characters of an equation (or a term, or a shape).
_SHOWN = 80


def shorten_equation(text: str, position: int | None = None, width: int = _SHOWN) -> str:
    """``text`` itself when it has at most ``width`` characters, else the ``width`` characters
    around ``position`` (from the start when ``None``) with ``…`` where text was cut, so an
    error about a 10^5-character equation stays one short line.  Any message quoting user
    text can use it.

    >>> shorten_equation("ij,jk->ik")
    'ij,jk->ik'
    >>> shorten_equation("a" * 50 + "-" + "b" * 50, 50, width=10)
    '…aaaaa-bbbb…'
    """
    if len(text) <= width:
        return text
    centre = 0 if position is None else min(max(position, 0), len(text))
    start = max(0, min(centre - width // 2, len(text) - width))
    end = start + width
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def quoted(text: str) -> str:
    """An equation as an error message quotes it: :func:`shorten_equation`'s, in quotes.

    >>> quoted("ij,jk->ik")
    "'ij,jk->ik'"
    """
    return repr(shorten_equation(text))


@dataclass(frozen=True)
class Equation:
    """An einsum equation independent of shapes.

    ``terms[i]`` holds the label ids of input term ``i`` in writing order, with
    :data:`ELLIPSIS` where ``...`` stands; ``output`` likewise (computed in implicit mode).
    ``names[id]`` is the label as written (a character, or the int of the sublist form);
    ``positions[i][k]`` / ``output_positions[k]`` is where item ``k`` was written (a
    character index into ``text``, or the index inside the sublist).

    >>> eq = parse_subscripts("ij, jk")
    >>> eq.terms, eq.output, eq.explicit, eq.names
    (((0, 1), (1, 2)), (0, 2), False, ('i', 'j', 'k'))
    >>> eq.positions
    ((0, 1), (4, 5))
    """

    text: str
    terms: tuple[tuple[int, ...], ...]
    output: tuple[int, ...]
    explicit: bool
    names: tuple[str, ...]
    positions: tuple[tuple[int, ...], ...]
    output_positions: tuple[int, ...]
    sublist: bool = False

    @property
    def has_ellipsis(self) -> bool:
        """Whether a term or the output has ``...`` (a property, not a cached one: Python
        3.11's functools cached property takes a lock of its class's, which a child forked
        while another thread held it could never take: a review)."""
        return any(ELLIPSIS in term for term in self.terms) or ELLIPSIS in self.output

    def where(self, term: int | None, item: int) -> str:
        """Words for where item ``item`` of input term ``term`` (None: the output) was written."""
        terms = len(self.positions)
        if term is not None and not -terms <= term < terms:
            raise EinsumError(f"einsum: the equation has {terms} input terms, no term {term}")
        items = self.output_positions if term is None else self.positions[term]
        if not -len(items) <= item < len(items):
            raise EinsumError(f"einsum: the term has {len(items)} items, no item {item}")
        pos = items[item]
        return f"sublist index {pos}" if self.sublist else f"position {pos}"

    def fail(self, message: str, position: int | None = None) -> EinsumError:
        """An :class:`EinsumError` whose message starts with this equation (shortened around
        ``position`` when long)."""
        return _fail_text(self.text, message, position)


@dataclass(frozen=True)
class EinsumSpec:
    """An equation bound to operand shapes: the contract between parser, planner and backends.

    * ``inputs[i]``: one label id per axis of operand ``i`` (repeats mean a diagonal).
      The dimensions under ``...`` get their own ids, shared between operands the NumPy way
      (right-aligned), so broadcasting is just "same id".
    * ``output``: the label ids of the result's axes (repeats mean diagonal expansion).
    * ``sizes[id]``: the size of each label (for ``...`` dimensions: the broadcast size).
    * ``names[id]``: printable names; ``...`` dimension ``j`` is named ``'…j'``.
    * ``stretched[i]``: the axes of operand ``i`` of size 1 that broadcast against a larger
      ``...`` dimension (a backend reads them at index 0; a gradient sums over them).
    """

    equation: Equation
    inputs: tuple[tuple[int, ...], ...]
    output: tuple[int, ...]
    sizes: tuple[int, ...]
    names: tuple[str, ...]
    stretched: tuple[tuple[int, ...], ...]

    @property
    def text(self) -> str:
        return self.equation.text

    def label_string(self, labels: Sequence[int]) -> str:
        """Labels as text: concatenated when every name is one character, else spaced.

        >>> parse_equation("ij->ji", (2, 3)).label_string((1, 0))
        'ji'
        """
        unknown = [label for label in labels if not 0 <= label < len(self.names)]
        if unknown:
            raise EinsumError(f"einsum: no label {unknown[0]} (the spec has {len(self.names)})")
        names = [self.names[label] for label in labels]
        joiner = "" if all(len(n) == 1 for n in names) else " "
        return joiner.join(names)

    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """The operand shapes this spec was bound to."""
        return tuple(
            tuple(1 if axis in stretch else self.sizes[label] for axis, label in enumerate(term))
            for term, stretch in zip(self.inputs, self.stretched)
        )

    @property
    def output_shape(self) -> tuple[int, ...]:
        return tuple(self.sizes[label] for label in self.output)

    def describe(self) -> str:
        """The equation with every ``...`` spelled out as its dimensions' names."""
        ins = ",".join(self.label_string(term) for term in self.inputs)
        return f"{ins}->{self.label_string(self.output)}"


# -- the string form -------------------------------------------------------------------------


@functools.lru_cache(maxsize=2048)
def parse_subscripts(subscripts: str) -> Equation:
    """Parse the string form (cached); whitespace is ignored anywhere.

    >>> parse_subscripts("ii").output          # implicit mode: 'i' appears twice
    ()
    >>> parse_subscripts("ba").output          # implicit output is sorted
    (1, 0)
    >>> parse_subscripts("i->jj")
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum 'i->jj': output label 'j' (position 3) appears in no input
    """
    if not isinstance(subscripts, str):
        raise EinsumTypeError(f"einsum subscripts must be a str, not {type(subscripts).__name__}")
    chars = [(pos, ch) for pos, ch in enumerate(subscripts) if not ch.isspace()]
    fail = functools.partial(_fail_text, subscripts)
    inputs_part, output_part = _split_arrow(chars, fail)
    ids: dict[str, int] = {}
    terms, positions = [], []
    for term_chars in _split_terms(inputs_part):
        labels, where = _parse_term(term_chars, ids, fail)
        terms.append(labels)
        positions.append(where)
    names = tuple(ids)
    if output_part is None:
        output = _implicit_output(terms, names)
        out_pos: tuple[int, ...] = (-1,) * len(output)
        return Equation(subscripts, tuple(terms), output, False, names, tuple(positions), out_pos)
    for pos, ch in output_part:
        if ch == ",":
            raise fail(f"the output cannot have ',' (position {pos})", pos)
    output, out_pos = _parse_term(output_part, ids, fail, output=True)
    return Equation(subscripts, tuple(terms), output, True, names, tuple(positions), out_pos)


def _fail_text(text: str, message: str, position: int | None = None) -> EinsumError:
    return EinsumError(f"einsum {shorten_equation(text, position)!r}: {message}")


def _split_arrow(
    chars: list[tuple[int, str]], fail: Any
) -> tuple[list[tuple[int, str]], list[tuple[int, str]] | None]:
    """Split at the one ``->``; a lone ``-`` or ``>`` or a second arrow is an error."""
    arrow = None
    k = 0
    while k < len(chars):
        pos, ch = chars[k]
        if ch == "-":
            if k + 1 >= len(chars) or chars[k + 1][1] != ">":
                raise fail(f"'-' (position {pos}) is not followed by '>'", pos)
            if arrow is not None:
                raise fail(f"a second '->' (position {pos}); at most one is allowed", pos)
            arrow = k
            k += 2
            continue
        if ch == ">":
            raise fail(f"'>' (position {pos}) is not preceded by '-'", pos)
        k += 1
    if arrow is None:
        return chars, None
    return chars[:arrow], chars[arrow + 2 :]


def _split_terms(chars: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    terms: list[list[tuple[int, str]]] = [[]]
    for pos, ch in chars:
        if ch == ",":
            terms.append([])
        else:
            terms[-1].append((pos, ch))
    return terms


def _parse_term(
    chars: list[tuple[int, str]], ids: dict[str, int], fail: Any, output: bool = False
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Labels (ids, ``ELLIPSIS`` for ``...``) and their positions; new labels get new ids."""
    labels: list[int] = []
    where: list[int] = []
    k = 0
    while k < len(chars):
        pos, ch = chars[k]
        if ch == ".":
            if [c for _, c in chars[k : k + 3]] != [".", ".", "."]:
                raise fail(f"'.' (position {pos}) is not part of an ellipsis '...'", pos)
            if ELLIPSIS in labels:
                raise fail(f"a second '...' in one term (position {pos})", pos)
            labels.append(ELLIPSIS)
            where.append(pos)
            k += 3
            continue
        if ch not in ids:
            if output:
                raise fail(f"output label {ch!r} (position {pos}) appears in no input", pos)
            ids[ch] = len(ids)
        labels.append(ids[ch])
        where.append(pos)
        k += 1
    return tuple(labels), tuple(where)


def _implicit_output(terms: Sequence[tuple[int, ...]], names: Sequence[str]) -> tuple[int, ...]:
    """Labels written exactly once, by code point (ints: by value), after ``...`` if any."""
    counts: dict[int, int] = {}
    for term in terms:
        for label in term:
            counts[label] = counts.get(label, 0) + 1
    single = [label for label, n in counts.items() if n == 1 and label != ELLIPSIS]
    single.sort(key=lambda label: names[label])
    if ELLIPSIS in counts:
        return (ELLIPSIS, *single)
    return tuple(single)


# -- the sublist form ------------------------------------------------------------------------


def parse_sublists(
    sublists: Sequence[Sequence[Any]], output: Sequence[Any] | None = None
) -> Equation:
    """Parse the sublist form: per operand a list of non-negative ints and ``...``.

    >>> eq = parse_sublists([[0, 1], [1, 2]], [0, 2])
    >>> eq.text, eq.terms, eq.output, eq.names
    ('[0,1],[1,2]->[0,2]', ((0, 1), (1, 2)), (0, 2), ('0', '1', '2'))
    >>> parse_sublists([[10, 2]]).output            # implicit: sorted by value
    (1, 0)
    """
    raw_terms = [_sublist_items(s, i) for i, s in enumerate(sublists)]
    raw_out = None if output is None else _sublist_items(output, None)
    text = ",".join(_render_sublist(t) for t in raw_terms)
    if raw_out is not None:
        text += "->" + _render_sublist(raw_out)
    ids: dict[int, int] = {}
    terms: list[tuple[int, ...]] = []
    for items in raw_terms:
        labels: list[int] = []
        for item in items:
            if item is not Ellipsis and item not in ids:
                ids[item] = len(ids)
            labels.append(ELLIPSIS if item is Ellipsis else ids[item])
        terms.append(tuple(labels))
    names = tuple(str(k) for k in ids)
    values = tuple(ids)
    positions = tuple(tuple(range(len(t))) for t in terms)
    for k, written in enumerate(terms):
        if written.count(ELLIPSIS) > 1:
            raise _fail_text(text, f"a second '...' in sublist {k}")
    if raw_out is None:
        counts: dict[int, int] = {}
        for written in terms:
            for label in written:
                counts[label] = counts.get(label, 0) + 1
        single = sorted(
            (lab for lab, n in counts.items() if n == 1 and lab != ELLIPSIS),
            key=lambda lab: values[lab],
        )
        implicit = ((ELLIPSIS,) if ELLIPSIS in counts else ()) + tuple(single)
        return Equation(
            text,
            tuple(terms),
            implicit,
            False,
            names,
            positions,
            (-1,) * len(implicit),
            sublist=True,
        )
    out = _sublist_output(raw_out, ids, text)
    return Equation(
        text, tuple(terms), out, True, names, positions, tuple(range(len(out))), sublist=True
    )


def _sublist_output(raw: list[Any], ids: dict[int, int], text: str) -> tuple[int, ...]:
    out = []
    for k, item in enumerate(raw):
        if item is Ellipsis:
            if ELLIPSIS in out:
                raise _fail_text(text, f"a second '...' in the output sublist (index {k})")
            out.append(ELLIPSIS)
        elif item not in ids:
            raise _fail_text(
                text, f"output label {item} (sublist index {k}) appears in no input", len(text)
            )
        else:
            out.append(ids[item])
    return tuple(out)


def _sublist_items(sublist: Any, index: int | None) -> list[Any]:
    what = "the output sublist" if index is None else f"the sublist of operand {index}"
    if isinstance(sublist, (str, bytes)) or not hasattr(sublist, "__iter__"):
        raise EinsumTypeError(
            f"einsum: {what} must be a list of ints and '...', got {_shown(sublist)}"
        )
    items: list[Any] = []
    for k, item in enumerate(sublist):
        if item is Ellipsis:
            items.append(Ellipsis)
            continue
        try:  # (an array has __index__, which raises unless it holds one integer)
            label = None if isinstance(item, bool) else operator.index(item)
        except TypeError:
            label = None
        if label is None:
            raise EinsumTypeError(
                f"einsum: {what} has {_shown(item)} at index {k}; labels "
                "must be non-negative ints or ... (Ellipsis)"
            )
        if label < 0:
            raise EinsumError(f"einsum: {what} has the negative label {label} at index {k}")
        if label > MAX_LABEL:
            raise EinsumError(
                f"einsum: {what} has the label {_shown(label)} at index {k}; labels are ints "
                f"in [0, {MAX_LABEL}]"
            )
        items.append(label)
    return items


def _shown(value: Any) -> str:
    """``repr(value)`` for a message, shortened; an int too long to print says its size."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"<an int of {value.bit_length()} bits>"
    try:
        return shorten_equation(repr(value))
    except Exception:  # a repr that fails or refuses: name the type instead
        return f"a {type(value).__name__}"


def _render_sublist(items: Sequence[Any]) -> str:
    return "[" + ",".join("..." if x is Ellipsis else str(x) for x in items) + "]"


# -- binding to shapes -----------------------------------------------------------------------


def bind(equation: Equation, shapes: Sequence[Sequence[int]]) -> EinsumSpec:
    """Bind an equation to operand shapes: check ranks and sizes, give ``...`` dims ids.

    >>> bind(parse_subscripts("ij,jk"), [(2, 3), (4, 5)])
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum 'ij,jk': operand 1 label 'j' (position 3) has size 4, ...
    """
    if len(shapes) != len(equation.terms):
        raise equation.fail(
            f"{len(equation.terms)} input term(s) but {len(shapes)} operand(s) were given"
        )
    if not equation.has_ellipsis:
        plain = _bind_plain(equation, shapes)
        if plain is not None:
            return plain
    return _bind_general(equation, shapes)


def _bind_general(equation: Equation, shapes: Sequence[Sequence[int]]) -> EinsumSpec:
    """:func:`bind` for any equation: ``...`` dimensions broadcast, every error explained."""
    ellipsis_ranks = [_ellipsis_rank(equation, i, tuple(s)) for i, s in enumerate(shapes)]
    n_ell = max((r for r in ellipsis_ranks if r is not None), default=0)
    base = len(equation.names)
    sizes: list[int | None] = [None] * (base + n_ell)
    first: list[int] = [-1] * (base + n_ell)
    inputs, stretched = [], []
    for i, shape in enumerate(shapes):
        labels = _expand_term(equation.terms[i], ellipsis_ranks[i], base, n_ell)
        inputs.append(labels)
        _check_named_sizes(equation, i, labels, tuple(shape), sizes, first, base)
    for i, shape in enumerate(shapes):
        _broadcast_ellipsis(equation, i, inputs[i], tuple(shape), sizes, first, base)
    for i, shape in enumerate(shapes):
        stretched.append(
            tuple(
                ax
                for ax, (label, n) in enumerate(zip(inputs[i], shape))
                if label >= base and n == 1 and sizes[label] != 1
            )
        )
    output = _bind_output(equation, n_ell, base, sizes)
    names = equation.names + tuple(f"…{j}" for j in range(n_ell))
    final_sizes = tuple(0 if s is None else s for s in sizes)
    return EinsumSpec(equation, tuple(inputs), output, final_sizes, names, tuple(stretched))


def _bind_plain(equation: Equation, shapes: Sequence[Sequence[int]]) -> EinsumSpec | None:
    """:func:`bind` without ``...``: the sizes, or None when a rank or a size disagrees (the
    general path then says what is wrong)."""
    sizes = [-1] * len(equation.names)
    for term, shape in zip(equation.terms, shapes):
        if len(term) != len(shape):
            return None
        for label, n in zip(term, shape):
            known = sizes[label]
            if known != n:
                if known != -1:
                    return None
                sizes[label] = n
    return EinsumSpec(
        equation, equation.terms, equation.output, tuple(sizes), equation.names, ((),) * len(shapes)
    )


def _ellipsis_rank(equation: Equation, i: int, shape: tuple[int, ...]) -> int | None:
    term = equation.terms[i]
    named = len(term) - (1 if ELLIPSIS in term else 0)
    if ELLIPSIS not in term:
        if len(shape) != named:
            raise equation.fail(
                f"operand {i} has {len(shape)} dimension(s) (shape {_shape_text(shape)}) but its "
                f"term {_term_text(equation, i)!r} names {named} label(s)",
                _term_start(equation, i),
            )
        return None
    if len(shape) < named:
        raise equation.fail(
            f"operand {i} has {len(shape)} dimension(s) (shape {_shape_text(shape)}) but its "
            f"term {_term_text(equation, i)!r} names {named} label(s) besides '...'",
            _term_start(equation, i),
        )
    return len(shape) - named


def _term_text(equation: Equation, i: int) -> str:
    text = "".join("..." if lab == ELLIPSIS else equation.names[lab] for lab in equation.terms[i])
    return shorten_equation(text)


def _term_start(equation: Equation, i: int) -> int | None:
    """Where term ``i`` starts in the equation's text (None in the sublist form)."""
    if equation.sublist or not equation.positions[i]:
        return None
    return equation.positions[i][0]


def _shape_text(shape: tuple[Any, ...]) -> str:
    return shorten_equation(str(shape))


def _expand_term(term: tuple[int, ...], rank: int | None, base: int, n_ell: int) -> tuple[int, ...]:
    if rank is None:
        return term
    k = term.index(ELLIPSIS)
    dims = tuple(range(base + n_ell - rank, base + n_ell))
    return term[:k] + dims + term[k + 1 :]


def _check_named_sizes(
    equation: Equation,
    i: int,
    labels: tuple[int, ...],
    shape: tuple[int, ...],
    sizes: list[int | None],
    first: list[int],
    base: int,
) -> None:
    """Named labels: every dimension carrying one has the same size (no size-1 broadcast)."""
    items = [lab for lab in equation.terms[i]]
    ell = items.index(ELLIPSIS) if ELLIPSIS in items else None
    n_ell_here = len(labels) - len(items) + (1 if ell is not None else 0)
    for axis, (label, n) in enumerate(zip(labels, shape)):
        if label >= base:
            continue
        item = axis if ell is None or axis < ell else axis - n_ell_here + 1
        known = sizes[label]
        if known is None:
            sizes[label], first[label] = n, i
        elif known != n:
            hint = ""
            if 1 in (known, n):
                hint = " (named labels never broadcast; write '...' to broadcast a dimension)"
            pos = None if equation.sublist else equation.positions[i][item]
            raise equation.fail(
                f"operand {i} label {equation.names[label]!r} ({equation.where(i, item)}) has "
                f"size {n}, but operand {first[label]} gave it size {known}{hint}",
                pos,
            )


def _broadcast_ellipsis(
    equation: Equation,
    i: int,
    labels: tuple[int, ...],
    shape: tuple[int, ...],
    sizes: list[int | None],
    first: list[int],
    base: int,
) -> None:
    """``...`` dimensions broadcast the NumPy way: equal sizes, or 1 stretches."""
    for label, n in zip(labels, shape):
        if label < base:
            continue
        known = sizes[label]
        if known is None or (known == 1 and n != 1):
            sizes[label], first[label] = n, i
        elif n not in (1, known):
            raise equation.fail(
                f"operand {i}'s '...' dimension {label - base} has size {n}, but operand "
                f"{first[label]}'s has size {known}; they do not broadcast"
            )


def _bind_output(
    equation: Equation, n_ell: int, base: int, sizes: list[int | None]
) -> tuple[int, ...]:
    out = equation.output
    if ELLIPSIS in out:
        return _expand_term(out, n_ell, base, n_ell)
    if n_ell > 0:
        shape = tuple(sizes[base:])
        raise equation.fail(
            f"the inputs' '...' covers {n_ell} dimension(s) of broadcast shape "
            f"{_shape_text(shape)}, but the explicit output has no '...' to hold them",
            None if equation.sublist else len(equation.text),
        )
    return out


def parse_equation(subscripts: str, *shapes: Sequence[int]) -> EinsumSpec:
    """Parse ``subscripts`` (cached) and bind it to the operand ``shapes``: sequences of ints
    ``>= 0`` (anything else in a shape is a ``TypeError``, a negative length an
    :class:`EinsumError`).

    >>> spec = parse_equation("ii->i", (3, 3))
    >>> spec.inputs, spec.output, spec.sizes
    (((0, 0),), (0,), (3,))
    >>> parse_equation("a...,a...->a...", (2, 1, 4), (2, 3, 1)).stretched
    ((1,), (2,))
    >>> parse_equation("ij", (-2, 3))
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum 'ij': shape 0 (-2, 3) has a negative length
    """
    if not isinstance(subscripts, str):  # (before the cache: a list is unhashable, a review)
        raise EinsumTypeError(
            f"parse_equation: subscripts must be a str, not {type(subscripts).__name__}"
        )
    equation = parse_subscripts(subscripts)
    return bind(equation, [_checked_shape(equation, s, i) for i, s in enumerate(shapes)])


def sub_equation(spec: EinsumSpec, terms: Sequence[Sequence[int]]) -> Equation:
    """The equation over ``spec``'s labels with the input ``terms`` (label ids, some axes of
    the spec's left out) and the spec's output: its ``...`` dimensions are named labels
    (``'…0'``), which never broadcast.  A plan of a call whose broadcast axes are read at
    index 0 is the plan of this equation (see the NumPy planner's ``dropped_axes``).

    >>> spec = parse_equation("ik,jk->ij", (2, 3), (4, 3))
    >>> inner = sub_equation(spec, [(0,), (2, 1)])
    >>> inner.text, bind(inner, [(2,), (4, 3)]).sizes
    ('i,jk->ij', (2, 3, 4))
    """
    return _sub_equation(spec.names, tuple(tuple(term) for term in terms), spec.output)


@functools.lru_cache(maxsize=1024)
def _sub_equation(
    names: tuple[str, ...], terms: tuple[tuple[int, ...], ...], output: tuple[int, ...]
) -> Equation:
    used = {x for term in terms for x in term}.union(output)
    joiner = "" if all(len(names[x]) == 1 for x in used) else " "  # as label_string's
    text = ",".join(joiner.join(names[x] for x in term) for term in terms)
    return Equation(
        text=text + "->" + joiner.join(names[x] for x in output),
        terms=terms,
        output=output,
        explicit=True,
        names=names,
        positions=tuple(tuple(range(len(term))) for term in terms),
        output_positions=tuple(range(len(output))),
        sublist=True,  # (positions are indices into each term, as the sublist form's)
    )


def _checked_shape(equation: Equation, shape: Any, i: int) -> tuple[int, ...]:
    """A shape for :func:`parse_equation`: a sequence of ints ``>= 0`` (``bool`` is not one)."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise EinsumTypeError(
            f"parse_equation: shape {i} must be a sequence of ints, not {_shown(shape)}"
        )
    check_listing(shape, f"parse_equation shape {i}")
    dims = tuple(shape)
    for n in dims:
        if isinstance(n, bool) or not hasattr(n, "__index__"):
            raise EinsumTypeError(
                f"parse_equation: shape {i} {_shown(dims)} has {_shown(n)}; lengths are ints"
            )
    lengths = tuple(operator.index(n) for n in dims)
    if any(n < 0 for n in lengths):
        raise equation.fail(f"shape {i} {_shape_text(lengths)} has a negative length")
    return lengths
