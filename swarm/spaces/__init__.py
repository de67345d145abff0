"""Multi-writer spaces: many writers' feeds read in one causally consistent order.

Pure rules: `timeframe` (vectors, order keys, the compact encoding), `messages` (the formats),
`ordering` and `cycles` (the causal engine, invalid feeds, stalls), `total` (the total order),
`register` (the shared map), `reader` (all of them together). The trio shell: `replica` (one
space at a node: fetching, processing, waiting), `service` (the node's spaces), `routes` (HTTP),
`client` (writing and reading through a node's API, for the CLI).
"""
