"""What the kit can install, as configuration: the model catalog, the engine pins, the bundle platforms and the
bundle manifest format, and the MODEL argument. Knows nothing of this machine (``detect``) or the network.
"""
