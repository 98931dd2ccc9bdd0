"""peer.core.run.runs: resume, fresh, ask or refuse; the rules of the module docstring."""

from __future__ import annotations

import dataclasses

import pytest

from peer.core.run.runs import Choice, Fingerprint, RunRecord, decide, first_run

FP = Fingerprint(("http://a.test/",), ("*.a.test",), (), 0)


def finished(fp: Fingerprint = FP, reason: str = "frontier empty") -> RunRecord:
    return first_run(fp, 100.0).ending(200.0, reason, 42)


def killed(fp: Fingerprint = FP) -> RunRecord:
    return first_run(fp, 100.0)


def choose(record: RunRecord | None, now: Fingerprint = FP, *, has_state: bool = True,
           resume: bool = False, fresh: bool = False, tty: bool = False) -> Choice:
    return decide(has_state=has_state, record=record, now=now, resume=resume, fresh=fresh,
                  tty=tty).choice


def test_no_state_is_a_new_crawl():
    assert choose(None, has_state=False) is Choice.NEW


def test_flags_win():
    assert choose(finished(), fresh=True) is Choice.FRESH
    assert choose(finished(), resume=True) is Choice.RESUME


def test_a_terminal_is_asked():
    assert choose(finished(), tty=True) is Choice.ASK
    assert choose(killed(), tty=True) is Choice.ASK


@pytest.mark.parametrize("reason", ["frontier empty", "cluster done", "max_pages reached"])
def test_a_finished_crawl_is_refused_without_a_terminal(reason):
    d = decide(has_state=True, record=finished(reason=reason), now=FP, resume=False, fresh=False, tty=False)
    assert d.choice is Choice.REFUSE and reason in d.why


def test_a_graceful_leave_is_a_clean_stop_the_same_command_resumes():
    # A service manager's stop of a peer started with --leave: the same command
    # starts it again, resuming (never fresh); a changed scope still refuses.
    d = decide(has_state=True, record=finished(reason="left the ring"), now=FP, resume=False,
               fresh=False, tty=False)
    assert d.choice is Choice.RESUME and "left the ring gracefully (42 pages)" in d.why
    wider = Fingerprint(FP.seeds, ("*.a.test", "*.b.test"), (), 0)
    assert choose(finished(reason="left the ring"), wider) is Choice.REFUSE


def test_an_interrupted_run_resumes_without_a_terminal():
    assert choose(killed()) is Choice.RESUME
    assert choose(finished(reason="stopped")) is Choice.RESUME  # SIGINT/SIGTERM
    assert choose(None) is Choice.RESUME  # a state older than run records


def test_a_changed_scope_is_refused_and_named():
    wider = Fingerprint(FP.seeds, ("*.a.test", "*.b.test"), (), 2)
    d = decide(has_state=True, record=killed(), now=wider, resume=False, fresh=False, tty=False)
    assert d.choice is Choice.REFUSE
    assert d.changes == ("crawl.allow_hosts +[*.b.test]", "crawl.max_depth 0 -> 2")


def test_changed_url_rules_are_a_changed_scope():
    # Rules changed and the crawl resumed, without a word: the pages fetched
    # before are not fetched again, so links the old rules dropped stay dropped.
    before = Fingerprint(FP.seeds, FP.allow_hosts, (), 0, ("include:*/library/*",))
    rec = dataclasses.replace(killed(), fingerprint=before)
    now = Fingerprint(FP.seeds, FP.allow_hosts, (), 0, ("exclude:re:[?&]q=", "include:*/library/*"))
    d = decide(has_state=True, record=rec, now=now, resume=False, fresh=False, tty=False)
    assert d.choice is Choice.REFUSE
    assert d.changes == ("crawl.rules +[exclude:re:[?&]q=]",)
    flipped = Fingerprint(FP.seeds, FP.allow_hosts, (), 0, ("include:*/library/*", "exclude:re:[?&]q="))
    assert now.changes(flipped) == ("crawl.rules reordered",)
    assert RunRecord.from_dict(rec.to_dict()) == rec
    # A record written before rules were kept says nothing of them.
    old = rec.to_dict()
    del old["fingerprint"]["rules"]
    assert RunRecord.from_dict(old).fingerprint.changes(now) == ()


def test_seed_changes_are_listed_short():
    now = Fingerprint(tuple(f"http://s{i}.test/" for i in range(5)), FP.allow_hosts, (), 0)
    (change,) = FP.changes(now)
    assert change == ("crawl.seeds +[http://s0.test/, http://s1.test/, http://s2.test/, ... 2 more] "
                      "-[http://a.test/]")
    assert FP.changes(Fingerprint(FP.seeds[::-1], FP.allow_hosts, (), 0)) == ()  # order is no change


def test_the_record_round_trips_and_counts_runs():
    rec = finished()
    again = RunRecord.from_dict(rec.to_dict())
    assert again == rec and again.finished
    nxt = again.starting(FP, 300.0)
    assert (nxt.runs, nxt.ended, nxt.stop_reason, nxt.pages) == (2, None, "", 0)
    with pytest.raises((KeyError, TypeError, ValueError)):
        RunRecord.from_dict({"runs": "x"})


def test_changed_allow_domains_are_a_changed_scope():
    before = Fingerprint(FP.seeds, (), (), 0, (), ("example.com",))
    rec = dataclasses.replace(killed(), fingerprint=before)
    now = Fingerprint(FP.seeds, (), (), 0, (), ("example.com", "example.org"))
    d = decide(has_state=True, record=rec, now=now, resume=False, fresh=False, tty=False)
    assert d.choice is Choice.REFUSE and d.changes == ("crawl.allow_domains +[example.org]",)
    assert RunRecord.from_dict(rec.to_dict()) == rec
    # A record written before allow_domains were kept says nothing of them.
    old = rec.to_dict()
    del old["fingerprint"]["allow_domains"]
    assert RunRecord.from_dict(old).fingerprint.changes(now) == ()
