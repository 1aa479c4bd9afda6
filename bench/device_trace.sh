#!/bin/bash
# One device call for docs/trace.md: GPU tests, every fixture under `pinlint trace --check`, two
# public programs (copied into ext/, not committed), the overhead loops. Writes to $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
python3 -c "import torch, cupy, numba, cupti; print('torch', torch.__version__, 'cupy', cupy.__version__, 'numba', numba.__version__)" 2>&1
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_trace_gpu.py 2>&1 | tail -25
for lib in cupy numba pycuda cudapython torch; do
  timeout 120 python3 -m pinlint trace --check --format json -o $R/fixtures_$lib.json -- python3 bench/trace_fixtures.py $lib > $R/fixtures_$lib.log 2>&1
  echo "fixtures $lib: exit $?"; tail -3 $R/fixtures_$lib.log
done
timeout 60 python3 -m pinlint trace --check -- python3 fixtures/PIN001/cupy_set_async.py > $R/example.txt 2>&1; echo "example exit $?"
( cd ext && timeout 60 python3 -m pinlint trace --check --format json -o $R/cupy_memcpy.json -- python3 cupy_memcpy.py > $R/cupy_memcpy.log 2>&1; echo "cupy_memcpy exit $?"
  timeout 60 python3 -m pinlint trace --check -- python3 cupy_memcpy.py > $R/cupy_memcpy.txt 2>&1
  timeout 150 python3 -m pinlint trace --check --format json -o $R/dcgan.json -- python3 dcgan_main.py --dataset fake --accel --niter 1 --outf /tmp/dcgan > $R/dcgan.log 2>&1; echo "dcgan exit $?"; tail -3 $R/dcgan.log )
for i in 1 2; do
  timeout 60 python3 bench/trace_overhead.py 2>&1 | grep OVERHEAD | sed 's/^/plain /'
  timeout 60 python3 -m pinlint trace -o $R/overhead_trace.txt -- python3 bench/trace_overhead.py 2>&1 | grep OVERHEAD | sed 's/^/traced /'
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
