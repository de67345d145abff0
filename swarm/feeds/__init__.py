"""Reading sequence feeds through the swarm: the probe planner (`lookup`, pure) and its driver
(`finder`). The feed formats are `chunks.feeds`.
"""
