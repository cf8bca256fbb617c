"""burn.nn.functional (``F``): stateless ops on tensors. Module ops live in ``_module_ops``; activations,
normalisation and losses in their own files."""
