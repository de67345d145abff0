"""Mantaray manifests: Swarm's path -> reference trie, encoded as Bee and bee-js encode it.

`nodes` is the byte format of one node (pure), `trie` builds a manifest's nodes from its entries
and cuts them into chunks (pure), `reader` walks a stored manifest through a function that reads
a node's bytes (lookups, listing), and `paths` holds the collection rules shared by the API and the
command line (content types, index and error documents, tar archives).
"""
