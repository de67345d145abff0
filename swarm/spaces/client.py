"""Using a space through a node's HTTP API (`swarm.api.spaces`): the CLI's and the tests' client.

Writing happens here, with the writer's key: the node says what the member's next message must
carry (its sequence number, the timeframe the node has processed and the member's previous
one); the client composes the message, signs it as a feed update and posts it. Two writes with
one key at once would take the same sequence number: the second gets 409 and is retried with
the next. The space key (the invitation: it admits members) and its name live in a space file,
readable by its owner only.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v2
from chunks.keyfile import KeyFileError, create_owner_only, read_owner_only
from swarm.spaces.messages import (
    MEMBERS_TOPIC,
    Kind,
    MemberEntry,
    compose,
    encode_member_entry,
    message_topic,
)

__all__ = ["SpaceApiError", "SpaceClient", "SpaceFile", "load_space_file", "save_space_file"]

RETRIES = 3


class SpaceApiError(Exception):
    """The node refused or could not be reached; the text says what happened, in one line."""


@dataclass(frozen=True)
class SpaceFile:
    """A space's invitation: its name and the space key, which admits members."""

    name: str
    key: Secp256k1Key

    @property
    def space(self) -> bytes:
        return self.key.owner


def save_space_file(path: Path, space: SpaceFile) -> None:
    doc = {"space": space.space.hex(), "name": space.name, "key": space.key.private_bytes().hex()}
    create_owner_only(path, (json.dumps(doc) + "\n").encode())


def load_space_file(path: Path) -> SpaceFile:
    """The space file at ``path``; KeyFileError if it cannot be used."""
    data = read_owner_only(path, 4096)
    try:
        doc = json.loads(data)
        space = SpaceFile(str(doc["name"]), Secp256k1Key.from_hex(doc["key"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise KeyFileError(f"{path} is not a space file: {exc}") from None
    if space.space.hex() != doc.get("space"):
        raise KeyFileError(f"{path}: its key does not match the space id it names")
    return space


class SpaceClient:
    """Talks to one node's API about spaces."""

    def __init__(self, api: str, client: httpx.Client | None = None) -> None:
        self.api = api.rstrip("/")
        self.http = client or httpx.Client(timeout=60.0)

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.http.request(method, self.api + path, **kwargs)
        except httpx.HTTPError as exc:
            raise SpaceApiError(
                f"cannot reach the node API at {self.api}: {exc} (is the node running?)"
            ) from None

    def _json(self, method: str, path: str, expect: int = 200, **kwargs: Any) -> Any:
        response = self._call(method, path, **kwargs)
        if response.status_code != expect:
            raise SpaceApiError(f"{method} {path}: {response.status_code} {_message(response)}")
        return response.json()

    # -- the member list -------------------------------------------------------------------------

    def create(self, name: str, creator: Secp256k1Key) -> SpaceFile:
        """A new space named ``name`` with ``creator`` as its first member."""
        space = SpaceFile(name, Secp256k1Key.generate())
        self._post_member(space, 0, MemberEntry(creator.owner, name))
        return space

    def join(self, space: SpaceFile, member: Secp256k1Key) -> int:
        """Admit ``member`` (a no-op if it is one); returns its member index."""
        for _ in range(RETRIES):
            summary = self.summary(space.space)
            known = [m["member"] for m in summary["members"] if m["owner"] == member.owner.hex()]
            if known:
                return int(known[0])
            response = self._post_member(
                space, summary["member_list"], MemberEntry(member.owner), ok=(201, 409)
            )
            if response.status_code == 201:
                return len(summary["members"])
        raise SpaceApiError("the member list kept changing under this join; try again")

    def _post_member(
        self, space: SpaceFile, index: int, entry: MemberEntry, ok: tuple[int, ...] = (201,)
    ) -> httpx.Response:
        soc = make_update_v2(space.key, MEMBERS_TOPIC, index, encode_member_entry(entry))
        response = self._call("POST", f"/spaces/{space.space.hex()}/members/{index}", content=soc.data)
        if response.status_code not in ok:
            raise SpaceApiError(
                f"member list update {index} refused: {response.status_code} {_message(response)}"
            )
        return response

    # -- writing -----------------------------------------------------------------------------------

    def write(self, space: bytes, signer: Secp256k1Key, kind: Kind, **body: str) -> tuple[int, int]:
        """Write the member's next message (``text=`` or ``key=``/``value=``); returns
        ``(member index, sequence number)``."""
        owner = signer.owner.hex()
        for _ in range(RETRIES):
            view = self._json("GET", f"/spaces/{space.hex()}/writer/{owner}")
            payload = compose(
                view["member"],
                tuple(view["previous"]),
                tuple(view["timeframe"]),
                kind,
                written_at=int(time.time() * 1000),
                **body,
            )
            soc = make_update_v2(signer, message_topic(space), view["next"], payload)
            response = self._call(
                "POST", f"/spaces/{space.hex()}/messages/{owner}/{view['next']}", content=soc.data
            )
            if response.status_code == 201:
                return int(view["member"]), int(view["next"])
            if response.status_code != 409:
                raise SpaceApiError(f"message refused: {response.status_code} {_message(response)}")
        raise SpaceApiError("another writer with this key keeps taking the next sequence number")

    # -- reading -----------------------------------------------------------------------------------

    def summary(self, space: bytes) -> Any:
        return self._json("GET", f"/spaces/{space.hex()}")

    def log(self, space: bytes, *, mode: str = "causal", start: int = 0, wait: int = 0) -> Any:
        params = {"mode": mode, "from": str(start), "wait": str(wait)}
        return self._json("GET", f"/spaces/{space.hex()}/log", params=params, timeout=wait + 30.0)

    def state(self, space: bytes) -> bytes:
        response = self._call("GET", f"/spaces/{space.hex()}/state")
        if response.status_code != 200:
            raise SpaceApiError(f"state: {response.status_code} {_message(response)}")
        return response.content

    def status(self, space: bytes) -> Any:
        return self._json("GET", f"/spaces/{space.hex()}/status")

    def close(self) -> None:
        self.http.close()


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("message", response.text))
    except ValueError:
        return response.text.strip()[:200]
