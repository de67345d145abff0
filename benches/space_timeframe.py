"""Timeframe bytes per message against the number of members: DXOS's full vector vs the delta.

Per member count, the mean over a history (`benches.space_workload`) of

- ``dxos``: the full vector as DXOS sends it, every known other feed as its 32-byte key and
  sequence number (protobuf fields);
- ``vector``: the same vector with member indices instead of keys;
- ``delta``: this project's encoding (`swarm.spaces.timeframe`), the entries changed since the
  writer's previous message;

for all members writing alike (``uniform``), and for a few writing most (``skewed``: member
``i`` in proportion to ``1 / (i + 1)``). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
from statistics import fmean

from benches.space_workload import history
from swarm.spaces.timeframe import delta_between, encode_delta, full_vector_size


def sizes(members: int, messages: int, skewed: bool) -> dict[str, float]:
    written = history(members, messages, skewed=skewed)
    return {
        "dxos": round(fmean(full_vector_size(w.timeframe, w.member, key_size=32) for w in written), 1),
        "vector": round(fmean(full_vector_size(w.timeframe, w.member, key_size=0) for w in written), 1),
        "delta": round(
            fmean(len(encode_delta(delta_between(w.previous, w.timeframe, w.member))) for w in written), 1
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=4000)
    args = parser.parse_args()
    result: dict[str, object] = {"messages": args.messages}
    for members in (2, 4, 8, 16, 32, 64, 128):
        result[str(members)] = {
            "uniform": sizes(members, args.messages, False),
            "skewed": sizes(members, args.messages, True),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
