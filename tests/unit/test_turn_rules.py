"""The turn queue's pure rules: how pending messages become one turn's text and language, who may talk."""

from herald.turns.models import AgentTurns, QueuedMessage, Session, SessionStatus, Turn, turn_language, turn_text


def test_one_message_is_its_own_turn_text() -> None:
    assert turn_text(["just this\nwith two lines"]) == "just this\nwith two lines"


def test_several_messages_are_numbered_in_order_under_one_line_saying_there_are_several() -> None:
    assert turn_text(["first", "second\nmore", "third"]).splitlines() == [
        "3 messages arrived while you were working; read them together, in order:",
        "1. first",
        "2. second",
        "   more",
        "3. third",
    ]


def test_turn_language_is_the_newest_messages_or_the_newest_that_named_one() -> None:
    assert turn_language(["pt", "en"]) == "en"
    assert turn_language(["pt", None]) == "pt"
    assert turn_language([None, None]) is None


def test_turn_of_pending_messages_keeps_their_order_and_ids() -> None:
    pending = [QueuedMessage(f"msg_{n}", "alice", f"m{n}", "pt" if n < 2 else "en", n) for n in range(3)]
    turn = Turn.of(AgentTurns("lalu", "s1", "po"), "turn_x", pending)
    assert turn.message_ids == ("msg_0", "msg_1", "msg_2")
    assert turn.lang == "en"
    assert turn.group_id == "lalu/s1/po"
    assert Turn.from_message(turn.to_message()) == turn


def test_developers_and_above_may_talk_to_agents_viewers_and_strangers_may_not() -> None:
    session = Session(
        "s1",
        "lalu",
        {"v": "viewer", "d": "developer", "a": "admin", "o": "owner"},
        ("po",),
        SessionStatus.ACTIVE,
    )
    assert [session.may_converse(user) for user in ("v", "d", "a", "o", "x")] == [False, True, True, True, False]
