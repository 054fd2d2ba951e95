"""gemma4_lark.constrain.ir: `seq` and `choice` flatten nested sequences and choices."""

from gemma4_lark.constrain.ir import Choice, Literal, Ref, Seq, Special, choice, seq


def test_seq_and_choice_flatten():
    a, b, c = Literal("a"), Special('<|"|>'), Ref("c")
    assert seq(a) == a
    assert seq(a, seq(b, c)) == Seq((a, b, c))
    assert choice(a, choice(b, c)) == Choice((a, b, c))
    assert choice(seq(a, b), c) == Choice((Seq((a, b)), c))
