"""The command line: `swarm` and its commands (argument parsing, output, the local swarm runner).

Each command talks to a node over its HTTP API (or starts one); nothing here is imported by the
node itself.
"""
