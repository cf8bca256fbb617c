"""burn.distributed: the collective interface of multi-process training, for the packages that train
(burn-train) and the backends that offer collectives on their devices (burn-cuda's NCCL).

A ``Collective`` reduces, broadcasts and gathers buffers among the ranks of a job; each operation
returns a ``Work`` whose ``wait()`` is bounded by the collective's timeout (``CollectiveTimeoutError``).
A ``DeviceCollective`` works on the devices' own buffers, in order with their kernels.
A backend plugin offers a collective for its devices as a ``burn.plugins.CollectiveSpec``
(``burn_register_collectives``); ``device_collectives(device)`` lists those serving a device.

>>> from burn.distributed import device_collectives
>>> [spec.name for spec in device_collectives(burn.device("cpu"))]  # numpy tensors: host copies
[]
"""

from ._collective import Collective, DeviceCollective, Work, check_op, check_root
from ._errors import CollectiveTimeoutError, DistributedError
from ._lookup import device_collectives

__all__ = [
    "Collective",
    "CollectiveTimeoutError",
    "DeviceCollective",
    "DistributedError",
    "Work",
    "check_op",
    "check_root",
    "device_collectives",
]
