"""Which record a WARC revisit refers to, and when a fetch is one (pure).

Rule 6 of :mod:`peer.core.warc.record`, as decisions: a continuous crawl
(peer/engine/revisits.py) asks :func:`revisit_profile` whether a fetch is
archived as a ``revisit`` of the page's original capture, and
:func:`refers_after` which record the URL's next revisit refers to. The
original is always a ``response`` record that stands for the page
(:func:`stands_for_page`): never a revisit (it holds no payload of its own),
never a 304, a failure or a capture cut short. WARC 1.1 §6.7 (revisit
profiles), §5.16 (``WARC-Refers-To``), §5.17 (``WARC-Refers-To-Date``).
"""

from __future__ import annotations

from peer.core.warc.record import Capture, Refers, RevisitProfile, status_of, warc_date

__all__ = ["refers_after", "revisit_profile", "stands_for_page"]


def _status_code(capture: Capture) -> int | None:
    text = status_of(capture.response_head)
    return None if text is None else int(text)


def stands_for_page(capture: Capture) -> bool:
    """Whether ``capture``'s ``response`` record holds what a later revisit may stand for.

    An answer with a whole payload that is the page's (2xx, 3xx, 4xx): not a
    304 (it has none), not a 1xx, 429 or 5xx (a failure, after which the
    page's validators and its last good capture are the earlier ones, as
    peer/core/revisit/policy.py ``classify`` reads them), not cut short.
    """
    status = _status_code(capture)
    return status is not None and 200 <= status < 500 and status not in (304, 429) and capture.truncated is None


def revisit_profile(capture: Capture, earlier: Refers | None, payload: str | None) -> RevisitProfile | None:
    """The profile ``capture`` is archived with as a revisit of ``earlier``; None for a ``response``.

    ``payload`` is :func:`peer.core.warc.record.payload_digest` of ``capture``, the algorithm
    ``earlier``'s is in. A 304 is server-not-modified (§6.7.3); an answer
    standing for the page whose payload digest is ``earlier``'s is
    identical-payload-digest (§6.7.2). Without ``earlier`` nothing is a
    revisit: a 304 to a URL's first request is archived as the response it is.
    """
    if earlier is None:
        return None
    if _status_code(capture) == 304:
        return RevisitProfile.SERVER_NOT_MODIFIED
    if payload is not None and payload == earlier.payload_digest and stands_for_page(capture):
        return RevisitProfile.IDENTICAL_PAYLOAD
    return None


def refers_after(earlier: Refers | None, capture: Capture, profile: RevisitProfile | None,
                 record_id: str, payload: str) -> Refers | None:
    """What the URL's next revisit refers to once ``capture`` is archived.

    A revisit record changes nothing: it is never referred to. A response
    standing for the page is the new original (``record_id``, its date as
    :func:`warc_date` writes it, ``payload``); a failure (1xx, 429, 5xx) or a
    304 keeps ``earlier``; a page cut short leaves nothing to refer to.
    """
    if profile is not None:
        return earlier
    if stands_for_page(capture):
        return Refers(record_id, warc_date(capture.date), payload)
    status = _status_code(capture)
    if status is None or status == 304 or status == 429 or status < 200 or status >= 500:
        return earlier
    return None
