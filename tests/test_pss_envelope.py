"""PSS envelopes (swarm/live/pss.py): a message reaches the nodes under its targets, sealed for
its recipient only; anything else is refused by name, never with another error."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks.ethkey import Secp256k1Key
from swarm.live.pss import BadEnvelope, live_topic, open_envelope, parse_targets, seal

ALICE, BOB = Secp256k1Key.from_hex("11" * 32), Secp256k1Key.from_hex("22" * 32)
TOPIC = bytes(range(32))

overlays = st.binary(min_size=32, max_size=32)
messages = st.binary(max_size=4000)
prefixes = st.text("0123456789abcdef", min_size=1, max_size=6)


def naive_is_target(overlay: bytes, targets: tuple[str, ...]) -> bool:
    return any(overlay.hex()[: len(t)] == t for t in targets)


@settings(max_examples=60, deadline=None)
@given(
    overlay=overlays,
    message=messages,
    targets=st.lists(prefixes, min_size=1, max_size=4),
    sealed=st.booleans(),
)
def test_a_message_reaches_exactly_its_targets_and_its_recipient(
    overlay: bytes, message: bytes, targets: list[str], sealed: bool
) -> None:
    envelope = seal(TOPIC, message, tuple(targets), BOB.public_key_compressed if sealed else None)
    mine = naive_is_target(overlay, tuple(targets))
    assert open_envelope(TOPIC, envelope, overlay, BOB) == (message if mine else None)
    if sealed:
        if len(message) >= 8:
            assert message not in envelope  # not in the clear
        assert open_envelope(TOPIC, envelope, overlay, ALICE) is None  # another key: not hers
        assert open_envelope(bytes(32), envelope, overlay, BOB) is None  # another topic's check word
    else:
        assert open_envelope(TOPIC, envelope, overlay, ALICE) == (message if mine else None)


def test_the_recipient_key_in_every_form_seals_alike() -> None:
    overlay = bytes.fromhex("ab" * 32)
    for key in (BOB.public_key_compressed, b"\x04" + BOB.public_key):
        envelope = seal(TOPIC, b"hello", ("ab",), key)
        assert open_envelope(TOPIC, envelope, overlay, BOB) == b"hello"
    assert live_topic(TOPIC) != TOPIC and len(live_topic(TOPIC)) == 32


@settings(max_examples=300, deadline=None)
@given(junk=st.binary(max_size=200))
def test_junk_is_a_bad_envelope_or_not_for_us(junk: bytes) -> None:
    with contextlib.suppress(BadEnvelope):  # anything else escaping fails the test
        open_envelope(TOPIC, junk, bytes(32), BOB)


@pytest.mark.parametrize("text", ["", "zz", "abcdef0", "ab,,cd", "ab, cd"])
def test_targets_that_are_not_hex_prefixes_are_named(text: str) -> None:
    with pytest.raises(BadEnvelope, match="targets must be hex prefixes"):
        parse_targets(text)
    assert parse_targets("AB,0f1") == ("ab", "0f1")


async def test_pss_send_names_what_is_wrong(tmp_path: Path) -> None:
    """`POST /pss/send` refuses bad targets, a recipient that is no key and an envelope too big
    for a live message, each with a 400 naming it; a good one is a 201."""
    import httpx
    import trio

    from swarm.testing import node_config, start_node

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "n"))
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{node.api_port}", timeout=10) as client:
                topic = "ab" * 32
                ok = await client.post(f"/pss/send/{topic}/00?recipient={BOB.public_key.hex()}", content=b"x")
                assert ok.status_code == 201, ok.text
                for path, body, words in (
                    (f"/pss/send/{topic}/zz", b"x", "targets must be hex"),
                    (f"/pss/send/{topic}/00?recipient=abcd", b"x", "not a secp256k1 public key"),
                    (f"/pss/send/{topic}/" + ",".join(["abcdef"] * 20), b"x" * 4000, "at most 4096"),
                    (f"/pss/send/{topic}/" + ",".join(["abcdef"] * 40), b"x", "at most 255"),
                ):
                    bad = await client.post(path, content=body)
                    assert bad.status_code == 400 and words in bad.json()["message"], bad.text
            nursery.cancel_scope.cancel()
