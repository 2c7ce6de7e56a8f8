"""Connection URLs for every topology: one server, a replica set behind Sentinel, a cluster. Bad
URLs are refused with a typed error that shows a good one; passwords never appear in messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from rippl_core import InvalidInputError, Rippl
from rippl_core._runtime.connection import DEFAULT_REPLICA_TIMEOUT_MS, locate, parse_url


def test_a_single_server_url_keeps_its_redis_options() -> None:
    location = parse_url("falkordb://:s3cret@db.internal:6380/0?socket_keepalive=true&replicas=2")
    assert location.topology == "server" and location.replicas == 2
    assert location.server_url == "redis://:s3cret@db.internal:6380/0?socket_keepalive=true"
    assert "s3cret" not in location.describe() and "***" in location.describe()
    assert parse_url("falkordbs://h:6379").server_url == "rediss://h:6379"
    assert parse_url("unix:///tmp/redis.sock").server_url == "unix:///tmp/redis.sock"


def test_a_sentinel_url_names_the_sentinels_and_the_service() -> None:
    location = parse_url("falkordb+sentinel://alice:pw@s1:26379,s2,[::1]:26380/mymaster"
                         "?sentinel_password=spw&replicas=1&replica_timeout_ms=250")
    assert location.topology == "sentinel" and location.service == "mymaster"
    assert location.nodes == (("s1", 26379), ("s2", 26379), ("::1", 26380))
    assert location.options == {"username": "alice", "password": "pw", "sentinel_password": "spw"}
    assert (location.replicas, location.replica_timeout_ms) == (1, 250)
    assert "pw" not in location.describe() and "mymaster" in location.describe()
    assert "Sentinel" in location.hint and "failing over" in location.hint


def test_a_cluster_url_lists_seed_nodes() -> None:
    location = parse_url("falkordb+cluster://10.0.0.1:7000,10.0.0.2:7001,10.0.0.3")
    assert location.topology == "cluster" and location.service is None
    assert location.nodes == (("10.0.0.1", 7000), ("10.0.0.2", 7001), ("10.0.0.3", 6379))
    assert location.replicas is None and location.replica_timeout_ms == DEFAULT_REPLICA_TIMEOUT_MS
    assert "slot" in location.hint


@pytest.mark.parametrize(("url", "says"), [
    ("", "empty"),
    ("http://host:6379", "unsupported url scheme"),
    ("falkordb+sentinel://h:26379", "names no Sentinel service"),
    ("falkordb+sentinel://h:26379/a/b", "names no Sentinel service"),
    ("falkordb+cluster://h:7000/1", "a cluster url has no path"),
    ("falkordb+cluster://h:7000,,h2:7001", "empty host"),
    ("falkordb+cluster://h:port", "bad port"),
    ("falkordb+cluster://h:7000?replicas=-1", "replicas"),
    ("falkordb+cluster://h:7000?replicas=one", "replicas"),
    ("falkordb://h:6379?replica_timeout_ms=0", "replica_timeout_ms"),
    ("falkordb+sentinel://h/svc?password=x", "unknown url option"),
])
def test_a_bad_url_is_refused_with_a_good_example(url: str, says: str) -> None:
    with pytest.raises(InvalidInputError, match=says) as refused:
        parse_url(url)
    assert "falkordb" in str(refused.value) or says in ("bad port", "replicas", "replica_timeout_ms",
                                                        "unknown url option")


def test_the_environment_and_explicit_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RIPPL_FALKORDB_URL", "falkordb+sentinel://s1:26379/svc")
    assert locate().topology == "sentinel"
    assert locate(tmp_path / "x.db").topology == "embedded"  # an explicit path wins
    assert locate(url="falkordb+cluster://c:7000").topology == "cluster"
    with pytest.raises(InvalidInputError, match="not both"):
        locate(tmp_path / "x.db", "falkordb://h")


def test_an_unreachable_replica_set_fails_at_open_with_what_to_do() -> None:
    from rippl_core.testing import free_port

    url = f"falkordb+sentinel://127.0.0.1:{free_port()}/nowhere"
    with pytest.raises(Exception) as failed:
        Rippl.open(url=url, graph="g")
    assert type(failed.value).__name__ == "UnavailableError"
    assert "Sentinel" in str(failed.value) and "nowhere" in str(failed.value)
