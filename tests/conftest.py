import os
import sys

# Run from a clean checkout without installing: make the packages importable.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for sub in ("runtime-image", "operator"):
    path = os.path.join(ROOT, sub)
    if os.path.isdir(path) and path not in sys.path:
        sys.path.insert(0, path)
