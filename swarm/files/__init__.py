"""Files as chunk trees: splitting bytes into chunks (`chunker`), reading them back (`joiner`),
uploads and downloads streamed through them (`transfer`).
"""
