"""burn.nn: modules, configs, initializers and the functional API (``burn.nn.functional``)."""
