"""pluggy markers for the project name ``burn``; plugin authors import them from ``burn.plugins``."""

import pluggy

PROJECT = "burn"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
