"""The record stage: ``<home>/state.json`` (what is installed, from where, with which hashes) and the last failure.
"""
