"""The inclusion proof `swarm prove` prints and `swarm verify-proof` checks: a JSON document. Pure.

It says "chunk A is entry N of bin B of node O's log" and shows it to anyone, offline:

- the node: its overlay, Ed25519 public key and network ID (the overlay must derive from them);
- the chunk: its address, bin and bin ID (its entry, which stays when the node drops the data:
  the proof holds for a chunk the node no longer has);
- the node's signed state of that bin (epoch, size, root, signature) and the RFC 6962 audit path
  of the entry's leaf (``keccak256(0x00 || bin ID || address)``) to that root;
- the receipts that cover the entry: each downstream's signed word that it took over bin IDs
  ``[start, end]`` of this log with root R at ``end``, with the audit path of the leaf to R.

Every value is covered by a hash or a signature, so changing any byte of one makes it fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chunks.merkle import leaf_hash, verify_inclusion
from streamer.messages import Receipt, SignedState, overlay_address
from streamer.states import verify_receipt, verify_state

__all__ = [
    "FORMAT",
    "InclusionProof",
    "InvalidProofDocument",
    "ReceiptProof",
    "parse_proof",
    "proof_json",
    "verify_proof",
]

FORMAT = "swarm-inclusion-proof/1"
MAX_BIN_ID = 2**64 - 1


class InvalidProofDocument(ValueError):
    """The document is not a proof (bad JSON shape), or its proof does not hold."""


@dataclass(frozen=True)
class ReceiptProof:
    downstream: bytes
    public_key: bytes
    receipt: Receipt
    path: tuple[bytes, ...]  # the leaf's audit path to the receipt's root (size = receipt.end)


@dataclass(frozen=True)
class InclusionProof:
    network_id: int
    overlay: bytes
    public_key: bytes
    address: bytes
    bin_id: int
    state: SignedState
    path: tuple[bytes, ...]
    receipts: tuple[ReceiptProof, ...]


def proof_json(p: InclusionProof) -> dict[str, Any]:
    st = p.state
    return {
        "format": FORMAT,
        "node": {"overlay": p.overlay.hex(), "public_key": p.public_key.hex(), "network_id": p.network_id},
        "chunk": {"address": p.address.hex(), "bin": st.bin, "bin_id": p.bin_id},
        "state": {
            "epoch": st.epoch,
            "size": st.size,
            "root": st.root.hex(),
            "signature": st.signature.hex(),
        },
        "path": [h.hex() for h in p.path],
        "receipts": [
            {
                "downstream": {"overlay": r.downstream.hex(), "public_key": r.public_key.hex()},
                "start": r.receipt.start,
                "end": r.receipt.end,
                "epoch": r.receipt.epoch,
                "root": r.receipt.root.hex(),
                "signature": r.receipt.signature.hex(),
                "path": [h.hex() for h in r.path],
            }
            for r in p.receipts
        ],
    }


def parse_proof(doc: Any) -> InclusionProof:
    """The proof in a parsed JSON document; `InvalidProofDocument` naming what is wrong."""
    if not isinstance(doc, dict):
        kind = type(doc).__name__
        raise InvalidProofDocument(f"not a {FORMAT} document: a JSON object was expected, not {kind}")
    if "format" not in doc:
        raise InvalidProofDocument(f'not a {FORMAT} document: it has no "format" field')
    if doc["format"] != FORMAT:
        raise InvalidProofDocument(f"not a {FORMAT} document (format {doc['format']!r:.80})")
    try:
        node, chunk, st = _obj(doc, "node"), _obj(doc, "chunk"), _obj(doc, "state")
        bin = _int(chunk, "bin")
        state = SignedState(bin, _int(st, "epoch"), _int(st, "size"), _hex(st, "root"), _hex(st, "signature"))
        receipts = tuple(_receipt(bin, r) for r in _list(doc, "receipts"))
        bin_id = _int(chunk, "bin_id")
        if not 1 <= bin_id <= MAX_BIN_ID:
            raise InvalidProofDocument(f"malformed proof document: chunk.bin_id is {bin_id}, not 1..2^64-1")
        return InclusionProof(
            network_id=_u64(node, "network_id"),
            overlay=_hex(node, "overlay", 32),
            public_key=_hex(node, "public_key", 32),
            address=_hex(chunk, "address", 32),
            bin_id=bin_id,
            state=state,
            path=_hashes(doc, "path"),
            receipts=receipts,
        )
    except (TypeError, ValueError) as exc:  # MessageError is a ValueError
        if isinstance(exc, InvalidProofDocument):
            raise
        raise InvalidProofDocument(f"malformed proof document: {exc}") from None


def _receipt(bin: int, r: Any) -> ReceiptProof:
    if not isinstance(r, dict):
        raise TypeError(f"a receipt must be a JSON object, not {type(r).__name__}")
    downstream = _obj(r, "downstream")
    receipt = Receipt(
        bin, _int(r, "epoch"), _int(r, "start"), _int(r, "end"), _hex(r, "root"), _hex(r, "signature")
    )
    return ReceiptProof(
        _hex(downstream, "overlay", 32), _hex(downstream, "public_key", 32), receipt, _hashes(r, "path")
    )


def verify_proof(p: InclusionProof) -> list[str]:
    """Check every part; the statements that hold, or `InvalidProofDocument` naming the first
    that does not."""
    st = p.state
    if overlay_address(p.public_key, p.network_id) != p.overlay:
        raise InvalidProofDocument("the node's overlay does not derive from its public key and network ID")
    if not verify_state(p.public_key, p.overlay, st):
        raise InvalidProofDocument("the state's signature does not verify under the node's key")
    leaf = leaf_hash(p.bin_id, p.address)
    if not verify_inclusion(leaf, p.bin_id - 1, st.size, p.path, st.root):
        raise InvalidProofDocument(f"the audit path does not lead entry {p.bin_id} to the signed root")
    told = [
        f"chunk {p.address.hex()} is entry {p.bin_id} of bin {st.bin} of node {p.overlay.hex()}'s log",
        f"state signed by the node: bin {st.bin}, epoch {st.epoch}, size {st.size}, root {st.root.hex()}",
    ]
    for r in p.receipts:
        rc = r.receipt
        who = f"receipt of {r.downstream.hex()[:16]} [{rc.start}, {rc.end}]"
        if overlay_address(r.public_key, p.network_id) != r.downstream:
            raise InvalidProofDocument(f"{who}: the overlay does not derive from its public key")
        if not verify_receipt(r.public_key, p.overlay, rc):
            raise InvalidProofDocument(f"{who}: its signature does not verify")
        if not rc.start <= p.bin_id <= rc.end:
            raise InvalidProofDocument(f"{who} does not cover entry {p.bin_id}")
        if not verify_inclusion(leaf, p.bin_id - 1, rc.end, r.path, rc.root):
            raise InvalidProofDocument(f"{who}: the audit path does not lead the entry to its root")
        told.append(f"{who}: downstream {r.downstream.hex()} took the entry over (root {rc.root.hex()})")
    return told


def _field(obj: dict[str, Any], key: str) -> Any:
    if key not in obj:
        raise InvalidProofDocument(f"malformed proof document: the field {key!r} is missing")
    return obj[key]


def _obj(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = _field(obj, key)
    if not isinstance(value, dict):
        raise TypeError(f"{key} must be a JSON object, not {type(value).__name__}")
    return value


def _list(obj: dict[str, Any], key: str) -> list[Any]:
    value = _field(obj, key)
    if not isinstance(value, list):
        raise TypeError(f"{key} must be a JSON array, not {type(value).__name__}")
    return value


def _hashes(obj: dict[str, Any], key: str) -> tuple[bytes, ...]:
    return tuple(_hex_value(key, h, 32) for h in _list(obj, key))


def _hex(obj: dict[str, Any], key: str, size: int | None = None) -> bytes:
    return _hex_value(key, _field(obj, key), size)


def _hex_value(key: str, value: Any, size: int | None = None) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"{key}: expected a hex string, got {type(value).__name__}")
    try:
        data = bytes.fromhex(value)
    except ValueError:
        raise ValueError(f"{key}: {value[:80]!r} is not hex") from None
    if size is not None and len(data) != size:
        raise ValueError(f"{key}: {len(data)} bytes, not {size}")
    return data


def _u64(obj: dict[str, Any], key: str) -> int:
    value = _int(obj, key)
    if not 0 <= value <= MAX_BIN_ID:
        raise ValueError(f"{key}: {value} is not in 0..2^64-1")
    return value


def _int(obj: dict[str, Any], key: str) -> int:
    value = _field(obj, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{key}: expected an integer, got {type(value).__name__}")
    return value
