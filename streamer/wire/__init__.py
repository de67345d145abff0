"""The wire messages, one declaration each, by sub-protocol; everything else about a message is
derived from its declaration.

- ``fields``: the kinds of field (an u8, a bin, an address, chunk data...) and ``compound`` the
  lists and a nested record: how each is checked and how it goes on the wire; ``limits``: the
  sizes they share.
- ``declare``: ``@message(code)`` and ``@record``, which make a declared class a validating
  frozen dataclass and derive its body's layout (``layout``), read with ``body.BodyReader``.
- ``connection``, ``pullsync``, ``provable``, ``retrieval``, ``pushsync``, ``gossip``, ``live``:
  the messages of each sub-protocol (docs/protocol.md).
- ``registry``: all of them: ``MESSAGE_CLASSES``, ``MessageType``, ``payload_size``.

streamer/codec.py frames them; streamer/messages.py re-exports all of it under the old names.
"""
