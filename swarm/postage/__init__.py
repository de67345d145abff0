"""Postage without a chain, as Bee's dev mode keeps it: local batches and their stamp accounting.

`swarm.postage.batches` is the pure core (a batch, its buckets, which chunk got which stamp
index); `swarm.postage.book` keeps the batches in the node's LevelDB state so they survive a
restart. docs/bee-compat.md says what differs from Bee.
"""
