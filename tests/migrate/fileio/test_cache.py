"""tapeshift.migrate.fileio.cache: keys, atomic JSON entries, corruption tolerated."""

import json

from tapeshift.migrate.fileio.cache import Cache, cache_key, decode_bytes, encode_bytes


def test_key_depends_on_bytes_kind_mode_and_options():
    base = cache_key(b"x = 1\n", "python", "tape", {"a": 1})
    assert base == cache_key(b"x = 1\n", "python", "tape", {"a": 1})
    assert len({base, cache_key(b"x = 2\n", "python", "tape", {"a": 1}),
                cache_key(b"x = 1\n", "notebook", "tape", {"a": 1}),
                cache_key(b"x = 1\n", "python", "compat", {"a": 1}),
                cache_key(b"x = 1\n", "python", "tape", {"a": 2})}) == 5


def test_put_get_and_marker_files(tmp_path):
    cache = Cache(tmp_path / "c")
    key = cache_key(b"data", "python", "tape")
    assert cache.get(key) is None
    assert cache.put(key, {"output": encode_bytes(b"\xff\r\n")})
    assert decode_bytes(cache.get(key)["output"]) == b"\xff\r\n"
    assert (tmp_path / "c" / ".gitignore").read_text().strip().endswith("*")
    assert (tmp_path / "c" / "CACHEDIR.TAG").exists()
    assert (cache.hits, cache.misses) == (1, 1)
    assert not [p for p in (tmp_path / "c").rglob("*.tmp")]


def test_corrupt_or_foreign_entries_are_misses_and_removed(tmp_path):
    cache = Cache(tmp_path)
    key = cache_key(b"data", "python", "tape")
    cache.put(key, {"v": 1})
    entry = next(tmp_path.rglob(f"{key}.json"))
    for damaged in (b"{trunc", b"\xff\xfe", json.dumps({"format": 1, "key": "other", "value": {}}).encode()):
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_bytes(damaged)
        assert cache.get(key) is None
        assert not entry.exists()


def test_unwritable_cache_does_not_fail(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert Cache(blocker / "c").put("ab" * 32, {"v": 1}) is False
