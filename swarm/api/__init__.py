"""The HTTP API of a node: every route, the Bee-shaped ones, the dashboard and the documents
(`/sync`, `/topology`, `/metrics`) it serves.

Routes get the node's services through small `Protocol`s; the node builds the app.
"""
