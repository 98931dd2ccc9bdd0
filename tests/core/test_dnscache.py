"""DNS cache policy (peer.core.dns.cache): TTLs, negative entries, LRU, static overrides, merging, counters."""

from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.dns.cache import DnsCache, DnsStats, Hit, Miss, NegativeHit, Wait


def resolve(cache, name, addrs, ttl, now):
    assert cache.lookup(name, now) == Miss()
    cache.resolved(name, addrs, ttl, now)


# ------------------------------------------------------------------ TTL

def test_ttl_is_clamped_up_to_min_ttl():
    c = DnsCache(min_ttl=30, max_ttl=3600)
    resolve(c, "a.test", ["192.0.2.1"], 5, now=100.0)
    assert c.lookup("a.test", 129.999) == Hit(("192.0.2.1",))
    assert c.lookup("a.test", 130.0) == Miss()


def test_ttl_is_clamped_down_to_max_ttl():
    c = DnsCache(min_ttl=30, max_ttl=3600)
    resolve(c, "a.test", ["192.0.2.1"], 86400, now=0.0)
    assert c.lookup("a.test", 3599.5) == Hit(("192.0.2.1",))
    assert c.lookup("a.test", 3600.0) == Miss()


def test_ttl_within_bounds_expires_exactly_at_now_plus_ttl():
    c = DnsCache(min_ttl=30, max_ttl=3600)
    resolve(c, "a.test", ["192.0.2.1", "192.0.2.2"], 300, now=10.0)
    assert c.lookup("a.test", 10.0) == Hit(("192.0.2.1", "192.0.2.2"))
    assert c.lookup("a.test", 309.0) == Hit(("192.0.2.1", "192.0.2.2"))
    assert c.lookup("a.test", 310.0) == Miss()


def test_ttl_none_means_min_ttl():
    c = DnsCache(min_ttl=45)
    resolve(c, "a.test", ["192.0.2.1"], None, now=0.0)
    assert c.lookup("a.test", 44.9) == Hit(("192.0.2.1",))
    assert c.lookup("a.test", 45.0) == Miss()


# ------------------------------------------------------------- negative

def test_failure_is_cached_for_negative_ttl():
    c = DnsCache(negative_ttl=60)
    assert c.lookup("gone.test", 0.0) == Miss()
    c.failed("gone.test", "NXDOMAIN", 0.0)
    assert c.lookup("gone.test", 59.0) == NegativeHit("NXDOMAIN")
    assert c.lookup("gone.test", 60.0) == Miss()


def test_empty_answer_is_a_failure():
    c = DnsCache(negative_ttl=60)
    resolve(c, "empty.test", [], 300, now=0.0)
    assert c.lookup("empty.test", 1.0) == NegativeHit("no addresses")


def test_negative_ttl_zero_caches_nothing():
    c = DnsCache(negative_ttl=0)
    assert c.lookup("gone.test", 0.0) == Miss()
    c.failed("gone.test", "NXDOMAIN", 0.0)
    assert len(c) == 0
    assert c.lookup("gone.test", 0.0) == Miss()


def test_success_replaces_negative_entry():
    c = DnsCache(negative_ttl=60)
    c.lookup("x.test", 0.0)
    c.failed("x.test", "timeout", 0.0)
    assert c.lookup("x.test", 61.0) == Miss()
    c.resolved("x.test", ["192.0.2.7"], 100, 61.0)
    assert c.lookup("x.test", 62.0) == Hit(("192.0.2.7",))


# ------------------------------------------------------------------ LRU

def test_lru_evicts_least_recently_used():
    c = DnsCache(max_size=3)
    for i, name in enumerate(["a.test", "b.test", "c.test"]):
        resolve(c, name, [f"192.0.2.{i + 1}"], 600, now=0.0)
    assert c.lookup("a.test", 1.0) == Hit(("192.0.2.1",))  # a is now most recent
    resolve(c, "d.test", ["192.0.2.4"], 600, now=2.0)  # evicts b
    assert len(c) == 3
    assert c.lookup("b.test", 3.0) == Miss()
    c.cancelled("b.test")
    assert c.lookup("a.test", 3.0) == Hit(("192.0.2.1",))
    assert c.lookup("c.test", 3.0) == Hit(("192.0.2.3",))
    assert c.lookup("d.test", 3.0) == Hit(("192.0.2.4",))
    assert c.stats().evictions == 1


# --------------------------------------------------------------- static

def test_static_exact_beats_glob_and_is_case_insensitive():
    c = DnsCache(static={"*.web.test": "127.0.0.1", "Special.Web.Test": ["127.0.0.9", "::1"]})
    assert c.lookup("special.web.test", 0.0) == Hit(("127.0.0.9", "::1"), static=True)
    assert c.lookup("SPECIAL.WEB.TEST.", 0.0) == Hit(("127.0.0.9", "::1"), static=True)
    assert c.lookup("Other.WEB.test", 0.0) == Hit(("127.0.0.1",), static=True)
    assert c.lookup("web.test", 0.0) == Miss()  # "*." needs a label before it
    assert c.stats().static_hits == 3


def test_longer_glob_beats_shorter_whatever_the_order():
    c = DnsCache(static={"*.test": "127.0.0.1", "*.deep.test": "127.0.0.2"})
    assert c.lookup("a.deep.test", 0.0) == Hit(("127.0.0.2",), static=True)
    assert c.lookup("a.shallow.test", 0.0) == Hit(("127.0.0.1",), static=True)


def test_exact_static_answers_never_expire_and_take_no_cache_room():
    c = DnsCache(static={"a.test": "127.0.0.1"}, max_size=1)
    assert c.lookup("a.test", 1e9) == Hit(("127.0.0.1",), static=True)
    assert len(c) == 0


def test_memoised_glob_answer_is_evicted_like_any_and_comes_back():
    c = DnsCache(static={"*.web.test": "127.0.0.1"}, max_size=1)
    assert c.lookup("a.web.test", 0.0) == Hit(("127.0.0.1",), static=True)
    resolve(c, "b.test", ["192.0.2.2"], 60, now=0.0)
    assert c.stats().evictions == 1
    assert c.lookup("a.web.test", 1.0) == Hit(("127.0.0.1",), static=True)


# ----------------------------------------------------------- literals

def test_ip_literals_are_their_own_answer():
    c = DnsCache(static={"*": "127.0.0.1"})
    assert c.lookup("192.0.2.55", 0.0) == Hit(("192.0.2.55",), static=True)
    assert c.lookup("2001:DB8::1", 0.0) == Hit(("2001:db8::1",), static=True)
    assert c.lookup("[::1]", 0.0) == Hit(("::1",), static=True)
    assert c.lookup("host1.test", 0.0) == Hit(("127.0.0.1",), static=True)  # glob, not a literal
    # Memoised, and still static hits the second time, never expiring.
    assert c.lookup("192.0.2.55", 1e12) == Hit(("192.0.2.55",), static=True)
    assert c.lookup("host1.test", 1e12) == Hit(("127.0.0.1",), static=True)
    s = c.stats()
    assert (s.lookups, s.static_hits, s.hits, s.misses, len(c)) == (6, 6, 0, 0, 4)


def test_dotted_name_ending_in_digits_is_not_a_literal():
    c = DnsCache()
    assert c.lookup("999.1.2.3", 0.0) == Miss()


# -------------------------------------------------------------- merging

def test_concurrent_lookups_merge_into_one_query():
    c = DnsCache()
    assert c.lookup("a.test", 0.0) == Miss()
    assert c.lookup("A.test.", 0.1) == Wait()
    assert c.lookup("a.test", 0.2) == Wait()
    c.resolved("a.test", ["192.0.2.1"], 120, 0.3)
    assert c.lookup("a.test", 0.4) == Hit(("192.0.2.1",))
    assert c.lookup("a.test", 0.5) == Hit(("192.0.2.1",))
    s = c.stats()
    assert (s.misses, s.merged, s.hits, s.in_flight) == (1, 2, 2, 0)


def test_cancelled_lets_the_next_caller_resolve():
    c = DnsCache()
    assert c.lookup("a.test", 0.0) == Miss()
    assert c.lookup("a.test", 0.0) == Wait()
    c.cancelled("A.TEST")
    assert c.stats().in_flight == 0
    assert c.lookup("a.test", 1.0) == Miss()
    assert c.lookup("a.test", 1.0) == Wait()
    assert len(c) == 0


def test_expired_entry_while_resolving_gives_wait_not_stale_answer():
    c = DnsCache(min_ttl=30)
    resolve(c, "a.test", ["192.0.2.1"], 30, now=0.0)
    assert c.lookup("a.test", 30.0) == Miss()
    assert c.lookup("a.test", 31.0) == Wait()


# ------------------------------------------------------------- counters

def test_counters_and_hit_rate_exact():
    c = DnsCache(static={"s.test": "127.0.0.1"})
    c.lookup("a.test", 0.0)  # miss
    c.lookup("a.test", 0.0)  # merged
    c.resolved("a.test", ["192.0.2.1"], 60, 0.0)
    c.lookup("a.test", 1.0)  # hit
    c.lookup("a.test", 2.0)  # hit
    c.lookup("s.test", 2.0)  # static
    c.lookup("b.test", 2.0)  # miss
    c.failed("b.test", "SERVFAIL", 2.0)
    c.lookup("b.test", 3.0)  # negative
    c.lookup("10.0.0.1", 3.0)  # static (literal)
    assert c.stats() == DnsStats(
        lookups=8, hits=2, static_hits=2, negative_hits=1, misses=2, merged=1,
        evictions=0, size=3, in_flight=0,  # a.test, b.test, the memoised literal
    )
    assert c.hit_rate == 5 / 8


def test_hit_rate_of_no_lookups_is_zero():
    assert DnsCache().hit_rate == 0.0


# ------------------------------------------------------------- property

ops = st.lists(
    st.tuples(
        st.sampled_from(["lookup", "resolved", "failed", "cancelled"]),
        st.integers(0, 7),  # name
        st.integers(0, 200),  # ttl
        st.floats(0, 40, allow_nan=False),  # time step
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops, max_size=st.integers(1, 5))
def test_never_expired_answer_and_never_over_max_size(ops, max_size):
    c = DnsCache(min_ttl=10, max_ttl=100, negative_ttl=20, max_size=max_size)
    now = 0.0
    valid_until: dict[str, float] = {}  # name -> expiry of the last stored answer
    for op, i, ttl, dt in ops:
        now += dt
        name = f"h{i}.test"
        if op == "lookup":
            d = c.lookup(name, now)
            if isinstance(d, (Hit, NegativeHit)):
                assert now < valid_until[name]
        elif op == "resolved":
            c.resolved(name, ["192.0.2.1"], ttl, now)
            valid_until[name] = now + min(max(ttl, 10), 100)
        elif op == "failed":
            c.failed(name, "x", now)
            valid_until[name] = now + 20
        else:
            c.cancelled(name)
        assert len(c) <= max_size
        assert c.stats().size <= max_size


def test_peek_knows_static_and_cached_answers_without_counting_or_marking():
    cache = DnsCache({"*.web.test": "127.0.0.9"}, min_ttl=10, max_ttl=100, negative_ttl=5)
    assert cache.peek("a.web.test", 0.0) == ("127.0.0.9",)
    assert cache.peek("10.1.2.3", 0.0) == ("10.1.2.3",)
    assert cache.peek("other.test", 0.0) is None
    resolve(cache, "other.test", ["192.0.2.7"], 50, 0.0)
    assert cache.peek("other.test", 49.0) == ("192.0.2.7",)
    assert cache.peek("other.test", 51.0) is None
    cache.lookup("gone.test", 0.0)
    cache.failed("gone.test", "NXDOMAIN", 0.0)
    assert cache.peek("gone.test", 1.0) is None
    before = cache.stats()
    cache.peek("new.test", 60.0)
    assert cache.stats() == before
    assert cache.lookup("new.test", 60.0) == Miss()  # peek marked nothing in flight
