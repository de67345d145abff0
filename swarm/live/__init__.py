"""Live propagation of feed updates and topic messages (docs/live.md).

Pure rules: `detector` (Streamr's duplicate detector), `window` (raims' rotating generations),
`seqno` (raims' time-framed sequence numbers), `messages` (what a live message is and its
checks), `interest`, `relay`, `receiver`, `feed_order`, `loss`, `advisory`, `accounting`,
`events`. The trio shell: `service` (`LiveService`), `links`, `follower`, `subscription`;
`assembly` builds the service from a node's parts.
"""
