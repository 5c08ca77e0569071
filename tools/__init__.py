"""Developer tools shipped with convc, each run as `python -m convc.tools.<name>`.

`bench.py` times the conv suite against JAX (and PyTorch); `bench_frontend.py` times the
front end (load, passes, emit) against JAX's trace-and-lower; `bench_sharding.py` times
one model on 1 to 8 XLA:CPU host devices; `gen_schema.py` writes the JSON Schema of the model format
from the op declarations.
"""
