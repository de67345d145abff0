"""The reserve's services above the store: uploads and their tags, the pusher that keeps an
upload's chunks until they are durable, eviction in the background, offer leases, what the
reserve reports.
"""
