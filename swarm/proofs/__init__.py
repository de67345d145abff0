"""Provable bin streams at the node: composing the syncer's parts for `--provable-sync`
(`service`) and the proof documents `swarm prove` writes and `swarm verify-proof` checks
(`document`).
"""
