"""The numbers every export lets a model write: the grammar's INTEGER and FLOAT, as far as the
decoder reads them (docs/constrained-decoding.md, "Numbers").

The grammar's INTEGER takes any number of digits and FLOAT any exponent; the decoder refuses an
integer of more than `values.MAX_INTEGER_DIGITS` digits and a number beyond a double (`1e400`,
`-9300800034E0700025313007`), with a positioned error. A constraint that lets a model write what
the parser then refuses is a broken constraint, so the exports take only numbers the decoder reads:

- INTEGER: the grammar's language with its run of digits bounded, so at most MAX_INTEGER_DIGITS
  digits: exactly the integers `parse_call` reads (in an interpreter whose own limit is not lower).
  This is derived: the derived expression's unbounded repetition gets a bound.
- FLOAT: no regular language is exactly "FLOAT whose value is a finite double" (`0.000…1e400` is
  finite when its zeros outnumber the exponent: counting that is not regular), so the exports take
  a regular part of it, built from the double's limits (`sys.float_info`), that holds every number
  Python writes for a finite float (`repr`, what the renderers write): a fraction without exponent,
  or a negative exponent, after at most `max_10_exp` integer digits; a non-negative exponent of
  one or two digits after at most INTEGER_DIGITS_BEFORE_EXPONENT integer digits; one integer digit
  before an exponent up to `max_10_exp`, and at `max_10_exp` itself no more than the largest
  double's digits. The digit class is INTEGER's; a test proves the result is inside FLOAT's
  language as the grammar derives it and that the decoder reads every string of it.
"""

from __future__ import annotations

import sys

from ..values import MAX_INTEGER_DIGITS
from . import ir

# Before an exponent of at most two digits (99): 200 + 99 digits stay below 10**max_10_exp.
INTEGER_DIGITS_BEFORE_EXPONENT = 200
_EXPONENT_DIGITS = 2


def _unbounded(expr: ir.Expr, out: list) -> None:
    if isinstance(expr, ir.Repeat):
        if expr.max is None or expr.max > 1:  # a run (bounded already, when bounded again)
            out.append(expr)
        _unbounded(expr.item, out)
    elif isinstance(expr, ir.Seq):
        for item in expr.items:
            _unbounded(item, out)
    elif isinstance(expr, ir.Choice):
        for option in expr.options:
            _unbounded(option, out)


def _fixed_digits(expr: ir.Expr, digit: ir.CharClass) -> int:
    """The most digits a string of `expr` has outside its repetitions."""
    if expr == digit:
        return 1
    if isinstance(expr, ir.Seq):
        return sum(_fixed_digits(i, digit) for i in expr.items)
    if isinstance(expr, ir.Choice):
        return max(_fixed_digits(o, digit) for o in expr.options)
    return 0


def _bound(expr: ir.Expr, most: int) -> ir.Expr:
    if isinstance(expr, ir.Repeat):
        return ir.Repeat(expr.item, expr.min, most if expr.max is None or expr.max > 1 else expr.max)
    if isinstance(expr, ir.Seq):
        return ir.Seq(tuple(_bound(i, most) for i in expr.items))
    if isinstance(expr, ir.Choice):
        return ir.Choice(tuple(_bound(o, most) for o in expr.options))
    return expr


def digit_class(integer: ir.Expr) -> ir.CharClass:
    """The class INTEGER repeats: its digits (its run bounded or not)."""
    runs: list = []
    _unbounded(integer, runs)
    if len(runs) != 1 or not isinstance(runs[0].item, ir.CharClass):
        raise NotImplementedError("INTEGER is no longer one unbounded run of one class")
    return runs[0].item


def bounded_integer(integer: ir.Expr, most: int = MAX_INTEGER_DIGITS) -> ir.Expr:
    """INTEGER's derived expression (its run bounded or not) with at most `most` digits."""
    digit = digit_class(integer)
    fixed = _fixed_digits(integer, digit)
    return _bound(integer, most - fixed)


def _at_most(digits: str, digit: ir.CharClass) -> ir.Expr:
    """Digit strings that compare, digit by digit from the left, at most `digits`, then any
    digits: read as a fraction, at most 0.`digits`999…."""
    expr: ir.Expr = ir.Repeat(digit, 0, None)  # equal so far: anything after
    for d in reversed(digits):
        below = [ir.seq(ir.CharClass(f"0-{int(d) - 1}" if d != "1" else "0"), ir.Repeat(digit, 0, None))] if d != "0" else []
        expr = ir.choice(*below, ir.seq(ir.Literal(d), expr), ir.Seq(()))
    return expr


def finite_float(digit: ir.CharClass) -> ir.Expr:
    """The part of FLOAT the exports take (see the module's documentation)."""
    top = sys.float_info.max_10_exp  # 308
    mantissa, exponent = repr(sys.float_info.max).split("e+")  # '1.7976931348623157', '308'
    if int(exponent) != top or "." not in mantissa:
        raise NotImplementedError("the largest double is no longer written d.ddd…e+max_10_exp")
    lead, fraction = mantissa.split(".")
    digits = ir.Repeat(digit, 0, None)
    some = ir.Repeat(digit, 1, None)
    point = ir.Literal(".")
    sign = ir.Repeat(ir.Literal("-"), 0, 1)
    e = ir.CharClass("Ee")
    plus = ir.Repeat(ir.Literal("+"), 0, 1)

    def mantissa_of(most: int, point_needed: bool) -> ir.Expr:
        whole = ir.Repeat(digit, 1, most)
        with_point = ir.choice(ir.seq(whole, point, digits), ir.seq(point, some))
        return with_point if point_needed else ir.choice(with_point, whole)

    # exponents from 10**_EXPONENT_DIGITS to top - 1, one integer digit before them
    hundreds = [ir.seq(ir.Literal(str(h)), ir.Repeat(digit, 2, 2)) for h in range(1, top // 100)]
    tens = top % 100 // 10
    upper = ir.choice(*hundreds,
                      *([ir.seq(ir.Literal(str(top // 100)), ir.CharClass(f"0-{tens - 1}"), digit)] if tens else []),
                      ir.seq(ir.Literal(str(top // 10)), ir.CharClass(f"0-{top % 10 - 1}")))
    one_digit = ir.seq(digit, ir.Repeat(ir.seq(point, digits), 0, 1))
    forms = [
        # no exponent: below 10**top
        mantissa_of(top, True),
        # a negative exponent: smaller still (underflow reads as 0.0 or a subnormal)
        ir.seq(mantissa_of(top, False), e, ir.Literal("-"), some),
        # an exponent of one or two digits
        ir.seq(mantissa_of(INTEGER_DIGITS_BEFORE_EXPONENT, False), e, plus, ir.Repeat(digit, 1, _EXPONENT_DIGITS)),
        # one digit, then an exponent below top
        ir.seq(one_digit, e, plus, upper),
        # at top: no more than the largest double's digits
        ir.seq(ir.Literal(lead), ir.Repeat(ir.seq(point, _at_most(fraction, digit)), 0, 1), e, plus, ir.Literal(str(top))),
    ]
    return ir.seq(sign, ir.choice(*forms))


def integral_float(integer: ir.Expr) -> ir.Expr:
    """An integer written as a float with a zero fraction (`3.0`), at most `max_10_exp` digits
    before the point (so below the largest double): part of FLOAT, read as a float that is an
    integer."""
    return ir.seq(bounded_integer(integer, sys.float_info.max_10_exp), ir.Literal("."), ir.Repeat(ir.Literal("0"), 1, None))
