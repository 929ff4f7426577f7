"""The native library's file name on this platform. Imported by ``_ffi`` and read by
``setup.py`` (which cannot import the package: importing it loads the library)."""

import sys

if sys.platform == "darwin":
    LIBRARY_NAME = "librate.dylib"
elif sys.platform == "win32":
    LIBRARY_NAME = "rate.dll"
else:
    LIBRARY_NAME = "librate.so"
