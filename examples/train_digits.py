"""Train a small CNN on the offline 8x8 digits with the live dashboard (burn-train's main example).

    python examples/train_digits.py                    # numpy backend, 8 epochs, artifacts/digits
    python examples/train_digits.py --backend wgpu --epochs 5 --artifacts /tmp/digits
    python examples/train_digits.py --backend remote --remote-url ws://gpu-box:3000   # burn remote serve

Same as ``python -m burn_train.examples.digits``; see that module for the model and the options
(``--backend remote --remote-url URL`` trains on a ``burn remote serve`` server, the token from
``BURN_REMOTE_TOKEN``).
"""

import sys

from burn_train.examples.digits import main

if __name__ == "__main__":
    main(sys.argv[1:])
