"""What the grader accepts of a reply (grader/workers/replies.py): the worker's word, read with
care."""

from __future__ import annotations

import json
import math

import pytest

from grader import messages as msg
from grader.framework import cases
from grader.workers import replies, runner
from grader.workers.run import Source
from grader.workers.sandbox import DEFAULT_LIMITS

REQ = "0123456789abcdef"


def line(reply: dict) -> bytes:
    return (json.dumps({"req": REQ, **reply}) + "\n").encode()


def kept(line: bytes, op: str) -> dict:
    """What the grader keeps of a reply line to request REQ, of kind ``op``."""
    reply, _ = replies.read(line, REQ, op)
    return reply


def test_a_line_that_is_not_the_reply_awaited_is_passed_over():
    """Is a line for another request, or one that only names ours in passing, not taken?"""
    assert replies.read(line({"ok": True}), "fedcba9876543210", "probe") is None
    assert replies.read(line({"ok": True}), REQ, "probe") == ({"ok": True}, 2)
    assert replies.read(b'{"req": "other", "note": "%s"}\n' % REQ.encode(), REQ, "probe") is None
    assert replies.read(b"print output\n", REQ, "probe") is None


def test_a_reply_too_costly_to_parse_fails_its_test_unparsed():
    """A reply of a few megabytes of empty dicts would be gigabytes of objects once parsed:
    is it refused by counting, with the reason, as is one longer than any reply may be and
    one that is not JSON?"""
    bomb = b'{"req": "%s", "ok": true, "data": [%s{}]}\n' % (
        REQ.encode(), b"{}," * replies.MAX_ITEMS)
    assert replies.cost(bomb) > replies.MAX_ITEMS
    assert replies.read(bomb, REQ, "probe") == (replies.failed(
        msg.MSG_REPLY_TOO_LARGE.format(what=f"over {replies.MAX_ITEMS:,} values in one reply")),
        0)
    head = line({"ok": True})[:30]
    assert replies.read(head, REQ, "probe", truncated=True) == (replies.failed(
        msg.MSG_REPLY_TOO_LARGE.format(what="over 4 MiB")), 0)
    assert replies.read(head + b"\n", REQ, "probe") == (
        replies.failed(msg.MSG_REPLY_UNREADABLE), 0)


def test_only_the_fields_a_reply_needs_are_kept_each_of_its_type():
    """Are NaN and other values of the wrong type dropped where a text or a count belongs,
    every field only the grader may set (a test not found, a timeout, a crash) dropped, and
    texts cut to length, so that whatever a worker sends, the results can be written?"""
    forged = line({"ok": 1, "missing": "not found", "timeout": 5, "crashed": "x",
                   "not_run": "x", "unverified": "x", "differs": "x", "threads": math.nan,
                   "error": {"type": math.nan, "message": "m" * 5000, "extra": 1},
                   "tampered": ["jax.jit", math.inf, {"a": 1}], "restored": [math.nan],
                   "value": {"str": "kept as sent"}, "ask": {"op": "call"}})
    assert kept(forged, "call") == {
        "ok": False, "error": {"message": "m" * replies.MAX_TEXT},
        "tampered": ["jax.jit"], "value": {"str": "kept as sent"}}
    assert kept(line({"ok": True, "threads": True, "devices": 8}), "call") == {
        "ok": True}
    program = "A" * (2 * replies.MAX_TEXT)  # a program (base64) is kept whole, a text is cut
    assert kept(line({"ok": True, "program": program, "error": {"base": "b" * 5000}}),
                "export") == {"ok": True, "program": program,
                              "error": {"base": "b" * replies.MAX_TEXT}}
    assert kept(line({"ok": True, "devices": 8.0}), "ready") == {"ok": True}
    assert kept(line({"ok": True, "found": {"f": "function", "g": math.nan}}), "lookup") == {
        "ok": True, "found": {"f": "function"}}


def test_a_verifiers_measures_are_read_the_same_way():
    """Is each measure of a verifier's reply kept as ok, data and error only?"""
    reply = line({"ok": True, "differs": math.nan, "measured": [
        {"ok": True, "data": {"none": None}, "unverified": "x"}, "junk",
        {"ok": False, "error": {"type": "ValueError", "message": "no such measure"}}]})
    assert kept(reply, "verify") == {"ok": True, "measured": [
        {"ok": True, "data": {"none": None}}, {"ok": False},
        {"ok": False, "error": {"type": "ValueError", "message": "no such measure"}}]}


@pytest.mark.slow
@pytest.mark.parametrize("budget, kept, reason", [
    ("MAX_RUN_ITEMS", "kept",
     lambda used: msg.MSG_REPLIES_TOO_LARGE.format(devices=8, items=used)),
    ("MAX_RUN_BYTES", "kept_bytes",  # a string of a few MiB is one value but many bytes
     lambda used: msg.MSG_REPLIES_TOO_MANY_BYTES.format(devices=8, mib=used // 2**20))],
    ids=["values", "bytes"])
def test_a_run_keeps_replies_only_up_to_its_budget(monkeypatch, budget, kept, reason):
    """With a budget (in values, or in bytes) that one reply uses up, is every later test of
    the run failed with the reason, unread, while the first is kept?"""
    source = Source("a.py", "a.py", "def halo_difference(x):\n    return x\n")
    chosen = [c for c in cases.for_exercise("halo_difference") if 8 in c.device_counts][:3]
    first = runner.run([source], chosen[:1], 8, DEFAULT_LIMITS)
    used = getattr(first, kept)
    monkeypatch.setattr(replies, budget, used)
    result = runner.run([source], chosen, 8, DEFAULT_LIMITS)
    assert used > 0 and result.outcomes[chosen[0].id] == first.outcomes[chosen[0].id]
    for later in chosen[1:]:
        assert result.outcomes[later.id] == replies.failed(reason(used))


def test_the_grader_quotes_what_a_submission_wrote_briefly_and_check_in_full():
    """A test's error carries 700 characters a submission chose: in the grader's feedback
    (brief), is it cut to a short excerpt, and shown in full by check()? Is a type name of 500
    characters cut to 40 in both, and the grader's own reason for an unreadable reply never
    cut?"""
    found = next(c for c in cases.for_exercise("halo_difference") if c.hidden)
    words = " ".join(f"word{i:03d}" for i in range(90))[:700]
    raised = {"ok": False, "error": {"type": "E" * 500, "message": words}}
    brief = cases.decide(found, {8: raised}, {8: None}, brief=True)
    full = cases.decide(found, {8: raised}, {8: None})
    assert words in full.message
    assert len(brief.message) < 200
    assert all("E" * 37 in m and "E" * 38 not in m for m in (brief.message, full.message))
    assert words[:60] in brief.message and words[:100] not in brief.message
    why = msg.MSG_REPLIES_TOO_MANY_BYTES.format(devices=8, mib=32)
    unread = cases.decide(found, {8: replies.failed(why)}, {8: None}, brief=True)
    assert why in unread.message
