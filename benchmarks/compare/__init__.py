"""Strom side by side with PyFlink, Bytewax and a plain-Python loop (`python -m benchmarks.compare`).

`programs/` holds one program per engine; `environments` says where each runs (PyFlink and Bytewax in
virtualenvs of their own); `report` prints the table.
"""
