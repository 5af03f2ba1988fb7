"""The record stage: ``<home>/state.json`` (what is installed, from where, with which hashes), the record built from
the stages' results, and the last failure.
"""
