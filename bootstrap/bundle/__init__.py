"""Offline bundles as a product: choosing what goes in, writing the folder (engines, models, wheels, setup
executables), verifying it, and reusing bytes already on this machine.
"""
