"""The top: the command line, one module per command, and the frozen setup's entry point.
"""
