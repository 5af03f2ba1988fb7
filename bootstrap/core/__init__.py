"""The lowest layer: errors and exit codes, settings (the one environment reader), the console and its messages,
the install home and its lock, atomic writes, bounded file formats, hashing, subprocesses, templating.

Every other package may import ``core``; ``core`` imports nothing else of the kit.
"""
