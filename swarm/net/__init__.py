"""The node on the network: peer connections and sessions, gossip, the address book, retrieval
and push syncing with the rule of whom to ask (`peer_choice`, pure) and its hedged shell.
"""
