"""The token store's check: a revocation is seen by the next check, however it was made."""

from __future__ import annotations

from assay.plugins.service.tokens import TokenStore


def test_a_token_revoked_through_another_connection_is_refused_at_the_next_check(tmp_path):
    serving, admin = (
        TokenStore(tmp_path / "tokens.sqlite3"),
        TokenStore(tmp_path / "tokens.sqlite3"),
    )
    token, info = admin.create("alice")
    assert (
        serving.verify(token) is not None and serving.verify(token) is not None
    )  # known, and kept
    assert admin.revoke(info.token_id)
    assert serving.verify(token) is None


def test_a_token_revoked_through_the_same_store_is_refused_at_the_next_check(tmp_path):
    store = TokenStore(tmp_path / "tokens.sqlite3")
    token, info = store.create("alice")
    assert store.verify(token) is not None and store.verify(token) is not None  # known, and kept
    assert store.revoke(info.token_id)
    assert store.verify(token) is None


def test_a_wrong_secret_for_a_kept_token_id_is_refused(tmp_path):
    store = TokenStore(tmp_path / "tokens.sqlite3")
    token, _ = store.create("alice")
    assert store.verify(token) is not None and store.verify(token) is not None  # known, and kept
    assert store.verify(token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")) is None


def test_unknown_token_ids_are_not_kept(tmp_path):
    store = TokenStore(tmp_path / "tokens.sqlite3")
    store.create("alice")
    for n in range(50):
        assert store.verify(f"asy_{n:012x}_" + "x" * 43) is None
    assert store._local.rows == {}
