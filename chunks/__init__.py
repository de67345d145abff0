"""The chunk model: what a chunk is and how it is named, apart from where it is kept.

Content-addressed chunks (``span || payload``, named by their BMT hash: `bmt`, with the slow
reference hasher `bmt_reference` beside it), single-owner chunks (`soc`: signed by a secp256k1
key, `ethkey`), sequence feeds built on them (`feeds`), keys on disk (`keyfile`), and the Merkle
logs whose proofs provable streams carry (`merkle`). Pure values and hashing: no trio, no disk
but a key file, no store. It sits at the bottom beside `pot`, below `localstore` (which keeps
chunks) and `streamer` (which carries them), so that anything that only names or checks chunks,
a verifier worker above all, imports neither the store nor its database.
"""

from chunks.bmt import KECCAK_BACKEND, bmt_address, keccak256
from chunks.chunk import CHUNK_SIZE, SPAN_SIZE, Chunk, InvalidChunk

__all__ = ["CHUNK_SIZE", "KECCAK_BACKEND", "SPAN_SIZE", "Chunk", "InvalidChunk", "bmt_address", "keccak256"]
