"""Manifest speed: building and storing the manifest of a directory of N files, and reading
every entry back (what `POST /bzz` with a collection and `swarm manifest ls` cost beyond the
files themselves).

- ``save_entries_per_s``: entries per second of `swarm.manifest.trie.save` (the trie, every
  node encoded and hashed into chunks), for N paths shaped like a website's (directories,
  names past 30 bytes, metadata on every file);
- ``walk_entries_per_s``: entries per second of `ManifestReader.entries()` over the stored nodes
  (decoding every node; no network);
- ``nodes``, ``chunks``: how many nodes and chunks the manifest has.

Best of ``--repeats`` passes. Prints one JSON line. Run ``python -m benches.bmt`` beside it on a
shared machine.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence

import trio

from swarm.manifest.paths import content_type_for, file_entry
from swarm.manifest.reader import ManifestReader
from swarm.manifest.trie import Entry, save


def site_entries(count: int, seed: int = 1) -> dict[bytes, Entry]:
    rng = random.Random(seed)
    entries = {}
    for i in range(count):
        directory = f"section-{rng.randrange(20)}/part-{rng.randrange(5)}"
        name = f"article-{i:06d}-{rng.choice(['a', 'a-much-longer-title-of-the-page'])}.html"
        entries[f"{directory}/{name}".encode()] = file_entry(rng.randbytes(32), name, content_type_for(name))
    return entries


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    entries = site_entries(args.entries)
    save_best = walk_best = float("inf")
    for _ in range(args.repeats):
        started = time.perf_counter()
        saved = save(entries)
        save_best = min(save_best, time.perf_counter() - started)

        async def read(reference: bytes, nodes: dict[bytes, bytes] = saved.nodes) -> bytes:
            return nodes[reference]

        started = time.perf_counter()
        walked = trio.run(ManifestReader(read, saved.reference).entries)
        walk_best = min(walk_best, time.perf_counter() - started)
        assert walked == entries
    print(
        json.dumps(
            {
                "bench": "manifest",
                "entries": args.entries,
                "save_entries_per_s": round(args.entries / save_best),
                "walk_entries_per_s": round(args.entries / walk_best),
                "nodes": len(saved.nodes),
                "chunks": len(saved.chunks),
            }
        )
    )


if __name__ == "__main__":
    main()
