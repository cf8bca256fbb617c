"""Train a small CNN on the offline 8x8 digits with the live dashboard (burn-train's main example).

    python examples/train_digits.py                    # numpy backend, 8 epochs, artifacts/digits
    python examples/train_digits.py --backend wgpu --epochs 5 --artifacts /tmp/digits
    python examples/train_digits.py --backend remote --remote-url ws://gpu-box:3000   # burn remote serve

Same as ``python -m burn_train.examples.digits``; see that module for the model and the options.
``--backend remote`` trains on a ``burn remote serve`` server (burn-remote; the token comes from
``BURN_REMOTE_TOKEN``).
"""

import os
import sys

from burn_train.examples.digits import main


def _remote(argv: list[str]) -> list[str]:
    """``--remote-url URL`` sets ``BURN_REMOTE_URL``; ``--backend remote`` becomes ``--devices remote``."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--remote-url"):
            url = arg.partition("=")[2] if "=" in arg else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if "=" in arg else 2
            if not url:
                sys.exit("train_digits: --remote-url needs a URL such as ws://127.0.0.1:3000")
            os.environ["BURN_REMOTE_URL"] = url
            continue
        if arg in ("--backend=remote",) or (arg == "--backend" and argv[i + 1 : i + 2] == ["remote"]):
            out += ["--devices", "remote"]
            i += 1 if "=" in arg else 2
            continue
        out.append(arg)
        i += 1
    return out


if __name__ == "__main__":
    main(_remote(sys.argv[1:]))
