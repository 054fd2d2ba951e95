"""docs/architecture.md against the code it describes: the state diagram is the table's."""

from gemma4_incremental import _states

from conftest import REPO


def test_the_state_diagram_is_drawn_from_the_table():
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert _states.with_diagram(page) == page, "the state diagram is stale: run `make docs`"


def test_every_state_is_in_the_table_and_reachable():
    assert set(_states.TRANSITIONS) == set(_states.STATES)
    everywhere = set()
    # the lenient table, and the one with tools declared (its text is PROSE)
    for table in (_states.table().transitions, _states.table(declared=True).transitions):
        reached, todo = set(), [_states.LINE_START, _states.THOUGHT]  # the two ways a stream starts
        while todo:
            state = todo.pop()
            if state not in reached:
                reached.add(state)
                todo.extend(entry[1] for entry in table[state].values())
        everywhere |= reached
    assert everywhere == set(_states.STATES)


def test_every_action_and_event_of_the_table_is_known():
    from gemma4_incremental import _actions

    for state, row in _states.TRANSITIONS.items():
        for marker, entry in row.items():
            assert marker.startswith("<") or marker in _states.EVENTS, (state, marker)
            assert entry[1] in _states.STATES
            assert _actions.compiled(_states.table(declared=True))[state][marker][0]


def test_the_options_choose_a_table():
    tokens = __import__("gemma4_lark").tokens
    lenient, strict = _states.table(), _states.table(strict=True)
    assert lenient.transitions[_states.TEXT][tokens.CHANNEL_OPEN][1] == _states.UNLABELLED_THOUGHT
    assert strict.transitions[_states.TEXT][tokens.CHANNEL_OPEN] == (_states.STRAY, _states.TEXT)
    assert strict.initial == _states.TEXT and lenient.initial == _states.LINE_START
    assert _states.table(by_text=False).initial == _states.TEXT
    assert tokens.CHANNEL_OPEN not in _states.table(parse_thinking=False).markers(_states.TEXT)
    assert tokens.TOOL_CALL_CLOSE in _states.table(parse_thinking=False).markers(_states.TEXT)
    for strict in (False, True):
        markers = _states.table(parse_thinking=False, strict=strict).markers(_states.TEXT)
        assert not {tokens.CHANNEL_OPEN, tokens.CHANNEL_CLOSE, tokens.THOUGHT_OPEN} & set(markers)
