"""Node identity: Ed25519 keys, derived overlays, signed handshakes and peer records, the key file."""

from __future__ import annotations

import dataclasses
import os
import stat
import struct
from pathlib import Path
from typing import Any

import pytest
from Crypto.Hash import keccak

from streamer import (
    HANDSHAKE_DOMAIN,
    PEER_RECORD_DOMAIN,
    BadPeerRecord,
    GoodbyeCode,
    Handshake,
    HandshakeError,
    KeyFileError,
    NodeIdentity,
    Peers,
    decode,
    encode,
    handshake_signing_bytes,
    load_or_create_identity,
    make_handshake,
    make_peer_record,
    overlay_address,
    peer_record_signing_bytes,
    verify_handshake,
    verify_peer_record,
    verify_signature,
)

NETWORK = 10
VERSION = 1
CHALLENGE = bytes(range(0xA0, 0xC0))  # the nonce of the Hello the verifier sent
OTHER_CHALLENGE = bytes(range(0xC0, 0xE0))  # the nonce of another connection's Hello

# RFC 8032 section 7.1, test 1 (empty message).
RFC_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
RFC_SIGNATURE = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)


@pytest.fixture
def alice() -> NodeIdentity:
    return NodeIdentity.from_private_bytes(bytes(range(32)))


@pytest.fixture
def bob() -> NodeIdentity:
    return NodeIdentity.from_private_bytes(bytes(range(1, 33)))


@pytest.fixture
def handshake(alice: NodeIdentity) -> Handshake:
    return make_handshake(
        alice,
        version=VERSION,
        network_id=NETWORK,
        epoch=1700000000,
        host="10.0.0.1",
        port=1634,
        challenge=CHALLENGE,
    )


# -- keys and signatures --------------------------------------------------------------------------


def test_rfc8032_test_vector() -> None:
    identity = NodeIdentity.from_private_bytes(RFC_SEED)
    assert identity.public_key == RFC_PUBLIC
    assert identity.sign(b"") == RFC_SIGNATURE
    assert identity.private_bytes() == RFC_SEED
    assert verify_signature(RFC_PUBLIC, b"", RFC_SIGNATURE)


def test_sign_and_verify(alice: NodeIdentity, bob: NodeIdentity) -> None:
    sig = alice.sign(b"hello")
    assert len(sig) == 64
    assert verify_signature(alice.public_key, b"hello", sig)
    assert not verify_signature(alice.public_key, b"hellO", sig)
    assert not verify_signature(bob.public_key, b"hello", sig)
    assert not verify_signature(alice.public_key, b"hello", sig[:-1] + bytes([sig[-1] ^ 1]))
    assert not verify_signature(alice.public_key, b"hello", sig[:63])
    assert not verify_signature(alice.public_key[:31], b"hello", sig)
    assert not verify_signature(b"\xff" * 32, b"hello", sig)  # not a curve point


def test_generate_gives_distinct_keys_that_round_trip() -> None:
    a, b = NodeIdentity.generate(), NodeIdentity.generate()
    assert a != b
    again = NodeIdentity.from_private_bytes(a.private_bytes())
    assert again == a and again.public_key == a.public_key
    assert len(a.private_bytes()) == 32 and len(a.public_key) == 32
    assert a.private_bytes().hex() not in repr(a)


def test_from_private_bytes_wants_32_bytes() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        NodeIdentity.from_private_bytes(bytes(31))


def test_overlay_is_keccak_of_key_and_network(alice: NodeIdentity) -> None:
    expected = keccak.new(digest_bits=256, data=alice.public_key + struct.pack(">Q", NETWORK)).digest()
    assert alice.overlay(NETWORK) == overlay_address(alice.public_key, NETWORK) == expected
    assert alice.overlay(NETWORK + 1) != expected


# -- handshake ------------------------------------------------------------------------------------


def test_handshake_fields(handshake: Handshake, alice: NodeIdentity) -> None:
    assert handshake.overlay == alice.overlay(NETWORK)
    assert handshake.public_key == alice.public_key
    assert (handshake.version, handshake.network_id, handshake.epoch) == (VERSION, NETWORK, 1700000000)
    assert (handshake.host, handshake.port) == ("10.0.0.1", 1634)
    verify_handshake(handshake, network_id=NETWORK, version=VERSION, challenge=CHALLENGE)


def test_handshake_verifies_after_the_wire(handshake: Handshake) -> None:
    received = decode(encode(handshake))
    assert isinstance(received, Handshake)
    verify_handshake(received, network_id=NETWORK, version=VERSION, challenge=CHALLENGE)


def test_signed_bytes_are_the_domain_tag_the_body_without_signature_and_the_challenge(
    handshake: Handshake,
) -> None:
    body = encode(handshake)[5:]
    signed = handshake_signing_bytes(handshake, CHALLENGE)
    assert signed == HANDSHAKE_DOMAIN + body[:84] + body[148:] + CHALLENGE + bytes(32)  # plain channel
    assert verify_signature(handshake.public_key, signed, handshake.signature)


def test_signed_bytes_layout(alice: NodeIdentity) -> None:
    """docs/protocol.md section 6, byte for byte: the challenge comes last, after the host."""
    hs = Handshake(VERSION, NETWORK, alice.overlay(NETWORK), 0x5F, "h", 1634, alice.public_key, bytes(64))
    assert handshake_signing_bytes(hs, CHALLENGE) == (
        b"swarm-handshake-v1"
        + bytes.fromhex("0001 000000000000000a")
        + alice.overlay(NETWORK)
        + bytes.fromhex("000000000000005f 0662")
        + alice.public_key
        + b"\x01h"
        + CHALLENGE
        + bytes(32)  # the channel binding of a plain channel
    )
    assert HANDSHAKE_DOMAIN == b"swarm-handshake-v1"


def test_one_handshake_per_challenge(alice: NodeIdentity) -> None:
    """Everything but the signature is the same for two connections; the signature differs."""
    fields: dict[str, Any] = {"version": VERSION, "network_id": NETWORK, "epoch": 1, "host": "h", "port": 1}
    first = make_handshake(alice, **fields, challenge=CHALLENGE)
    second = make_handshake(alice, **fields, challenge=OTHER_CHALLENGE)
    assert first.signature != second.signature
    assert dataclasses.replace(first, signature=second.signature) == second
    verify_handshake(first, network_id=NETWORK, version=VERSION, challenge=CHALLENGE)
    verify_handshake(second, network_id=NETWORK, version=VERSION, challenge=OTHER_CHALLENGE)


@pytest.mark.parametrize(
    "challenge",
    [
        OTHER_CHALLENGE,
        bytes(32),
        bytes([CHALLENGE[0] ^ 1]) + CHALLENGE[1:],
        CHALLENGE[:-1] + bytes([CHALLENGE[-1] ^ 0x80]),
    ],
    ids=["another-connection", "zeros", "first-bit", "last-bit"],
)
def test_handshake_replayed_under_another_challenge_fails_the_signature(
    handshake: Handshake, challenge: bytes
) -> None:
    """A handshake recorded on one connection (signed over that connection's nonce) is refused on
    a connection whose verifier sent another nonce: a bad signature, BAD_HANDSHAKE."""
    with pytest.raises(HandshakeError, match="bad handshake signature") as info:
        verify_handshake(handshake, network_id=NETWORK, version=VERSION, challenge=challenge)
    assert info.value.code is GoodbyeCode.BAD_HANDSHAKE


@pytest.mark.parametrize("size", [0, 31, 33, 64])
def test_challenge_must_be_32_bytes(alice: NodeIdentity, handshake: Handshake, size: int) -> None:
    wrong = bytes(size)
    pattern = rf"handshake challenge must be 32 bytes, got {size}"
    with pytest.raises(ValueError, match=pattern):
        handshake_signing_bytes(handshake, wrong)
    with pytest.raises(ValueError, match=pattern):
        make_handshake(alice, version=VERSION, network_id=NETWORK, epoch=1, host="h", port=1, challenge=wrong)
    with pytest.raises(ValueError, match=pattern) as info:
        verify_handshake(handshake, network_id=NETWORK, version=VERSION, challenge=wrong)
    assert not isinstance(info.value, HandshakeError)  # our own mistake, not the peer's


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("epoch", 1700000001),
        ("host", "10.0.0.2"),
        ("port", 1635),
        ("signature", bytes(64)),
    ],
)
def test_tampered_field_fails_the_signature(handshake: Handshake, field: str, value: Any) -> None:
    tampered = dataclasses.replace(handshake, **{field: value})
    with pytest.raises(HandshakeError, match="bad handshake signature") as info:
        verify_handshake(tampered, network_id=NETWORK, version=VERSION, challenge=CHALLENGE)
    assert info.value.code is GoodbyeCode.BAD_HANDSHAKE


def test_tampered_version_fails_the_signature(handshake: Handshake) -> None:
    tampered = dataclasses.replace(handshake, version=VERSION + 1)
    with pytest.raises(HandshakeError, match="bad handshake signature") as info:
        verify_handshake(tampered, network_id=NETWORK, version=VERSION + 1, challenge=CHALLENGE)
    assert info.value.code is GoodbyeCode.BAD_HANDSHAKE


def test_tampered_network_with_rederived_overlay_fails_the_signature(handshake: Handshake) -> None:
    tampered = dataclasses.replace(
        handshake, network_id=NETWORK + 1, overlay=overlay_address(handshake.public_key, NETWORK + 1)
    )
    with pytest.raises(HandshakeError, match="bad handshake signature") as info:
        verify_handshake(tampered, network_id=NETWORK + 1, version=VERSION, challenge=CHALLENGE)
    assert info.value.code is GoodbyeCode.BAD_HANDSHAKE


def test_swapped_public_key_fails(handshake: Handshake, bob: NodeIdentity) -> None:
    tampered = dataclasses.replace(handshake, public_key=bob.public_key, overlay=bob.overlay(NETWORK))
    with pytest.raises(HandshakeError, match="bad handshake signature"):
        verify_handshake(tampered, network_id=NETWORK, version=VERSION, challenge=CHALLENGE)


def test_overlay_not_derived_from_key(handshake: Handshake, bob: NodeIdentity) -> None:
    claimed = bob.overlay(NETWORK)
    with pytest.raises(
        HandshakeError, match=f"claims overlay {claimed.hex()} but its public key gives"
    ) as info:
        verify_handshake(
            dataclasses.replace(handshake, overlay=claimed),
            network_id=NETWORK,
            version=VERSION,
            challenge=CHALLENGE,
        )
    assert info.value.code is GoodbyeCode.BAD_HANDSHAKE


def test_overlay_mismatch_is_caught_even_with_a_valid_signature(alice: NodeIdentity) -> None:
    """A peer signing a handshake that claims someone else's overlay is still refused."""
    forged = Handshake(VERSION, NETWORK, b"\x42" * 32, 1, "h", 1, alice.public_key, bytes(64))
    forged = dataclasses.replace(forged, signature=alice.sign(handshake_signing_bytes(forged, CHALLENGE)))
    assert verify_signature(alice.public_key, handshake_signing_bytes(forged, CHALLENGE), forged.signature)
    with pytest.raises(HandshakeError, match="claims overlay") as info:
        verify_handshake(forged, network_id=NETWORK, version=VERSION, challenge=CHALLENGE)
    assert info.value.code is GoodbyeCode.BAD_HANDSHAKE


def test_wrong_network(handshake: Handshake) -> None:
    with pytest.raises(HandshakeError, match="peer is on network 10, we are on network 11") as info:
        verify_handshake(handshake, network_id=11, version=VERSION, challenge=CHALLENGE)
    assert info.value.code is GoodbyeCode.WRONG_NETWORK


def test_version_mismatch(handshake: Handshake) -> None:
    with pytest.raises(HandshakeError, match="peer speaks protocol version 1, we speak version 2") as info:
        verify_handshake(handshake, network_id=NETWORK, version=2, challenge=CHALLENGE)
    assert info.value.code is GoodbyeCode.VERSION_MISMATCH


# -- peer records ---------------------------------------------------------------------------------


def test_peer_record_round_trip(alice: NodeIdentity) -> None:
    rec = make_peer_record(alice, network_id=NETWORK, host="node-a.example", port=1634)
    assert rec.overlay == alice.overlay(NETWORK)
    received = decode(encode(Peers((rec,))))
    assert isinstance(received, Peers)
    verify_peer_record(received.records[0], NETWORK)


def test_peer_record_signed_bytes(alice: NodeIdentity) -> None:
    rec = make_peer_record(alice, network_id=NETWORK, host="h", port=1634)
    assert peer_record_signing_bytes(rec) == (
        PEER_RECORD_DOMAIN + struct.pack(">QH", NETWORK, 1634) + alice.public_key + b"\x01h"
    )
    assert HANDSHAKE_DOMAIN != PEER_RECORD_DOMAIN


@pytest.mark.parametrize(
    ("field", "value"), [("host", "evil.example"), ("port", 1), ("signature", bytes(64))]
)
def test_tampered_peer_record(alice: NodeIdentity, field: str, value: Any) -> None:
    rec = dataclasses.replace(
        make_peer_record(alice, network_id=NETWORK, host="h", port=1634), **{field: value}
    )
    with pytest.raises(BadPeerRecord, match="bad signature on peer record") as info:
        verify_peer_record(rec, NETWORK)
    assert info.value.code is GoodbyeCode.BAD_HANDSHAKE


def test_peer_record_from_another_network(alice: NodeIdentity) -> None:
    rec = make_peer_record(alice, network_id=NETWORK + 1, host="h", port=1634)
    with pytest.raises(BadPeerRecord, match="is for network 11, we are on network 10") as info:
        verify_peer_record(rec, NETWORK)
    assert info.value.code is GoodbyeCode.WRONG_NETWORK
    assert isinstance(info.value, HandshakeError)


def test_peer_record_signature_cannot_be_replayed_as_a_handshake(alice: NodeIdentity) -> None:
    rec = make_peer_record(alice, network_id=NETWORK, host="h", port=1634)
    replay = Handshake(
        VERSION, NETWORK, alice.overlay(NETWORK), 0, "h", 1634, alice.public_key, rec.signature
    )
    with pytest.raises(HandshakeError, match="bad handshake signature"):
        verify_handshake(replay, network_id=NETWORK, version=VERSION, challenge=CHALLENGE)


def test_handshake_signature_cannot_be_replayed_as_a_peer_record(handshake: Handshake) -> None:
    rec = make_peer_record(
        NodeIdentity.from_private_bytes(bytes(range(32))), network_id=NETWORK, host="h", port=1
    )
    replay = dataclasses.replace(rec, host=handshake.host, port=handshake.port, signature=handshake.signature)
    with pytest.raises(BadPeerRecord, match="bad signature"):
        verify_peer_record(replay, NETWORK)


def test_domain_tag_is_what_separates_the_two(alice: NodeIdentity) -> None:
    """Signing the record's field bytes under the handshake tag gives a signature the record refuses."""
    rec = make_peer_record(alice, network_id=NETWORK, host="h", port=1634)
    fields = peer_record_signing_bytes(rec)[len(PEER_RECORD_DOMAIN) :]
    wrong_tag = dataclasses.replace(rec, signature=alice.sign(HANDSHAKE_DOMAIN + fields))
    with pytest.raises(BadPeerRecord):
        verify_peer_record(wrong_tag, NETWORK)


# -- key file -------------------------------------------------------------------------------------


def test_key_file_created_owner_only_and_reloaded_identical(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "node.key"
    first = load_or_create_identity(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == first.private_bytes()
    again = load_or_create_identity(str(path))
    assert again.private_bytes() == first.private_bytes()
    assert again.public_key == first.public_key
    assert again.overlay(NETWORK) == first.overlay(NETWORK)


def test_key_file_respects_a_restrictive_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        load_or_create_identity(tmp_path / "k")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "k").stat().st_mode) == 0o600


def test_existing_key_file_is_used(tmp_path: Path) -> None:
    path = tmp_path / "node.key"
    path.write_bytes(RFC_SEED)
    path.chmod(0o600)
    assert load_or_create_identity(path).public_key == RFC_PUBLIC


@pytest.mark.parametrize("content", [b"", bytes(31), bytes(33), RFC_SEED.hex().encode()])
def test_wrong_size_key_file_raises_and_is_left_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "node.key"
    path.write_bytes(content)
    path.chmod(0o600)
    before = path.stat()
    with pytest.raises(KeyFileError, match=rf"key file {path} is .*expected exactly 32 bytes"):
        load_or_create_identity(path)
    assert path.read_bytes() == content
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o620])
def test_key_file_accessible_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "node.key"
    path.write_bytes(RFC_SEED)
    path.chmod(mode)
    with pytest.raises(
        KeyFileError, match=rf"key file {path} is accessible by group/others \(mode {mode:#o}\)"
    ):
        load_or_create_identity(path)
    assert path.read_bytes() == RFC_SEED
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_key_path_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir(mode=0o700)
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_or_create_identity(tmp_path / "d")
