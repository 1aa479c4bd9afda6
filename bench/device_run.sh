#!/bin/bash
# The device call behind docs/trace.md and docs/verification.md (one call, time-boxed): GPU tests,
# every fixture under `pinlint trace --check`, two public programs copied into ext/ (not
# committed), the overhead loops, then `pinlint verify` with the recorder, one rule at a time.
set -o pipefail
export PYTHONUNBUFFERED=1
START=$SECONDS; DEADLINE=$((START + ${BUDGET:-560}))
R=$OUT/r; mkdir -p $R
python3 -c "import torch, cupy, numba, pycuda; print('torch', torch.__version__, 'cupy', cupy.__version__, 'numba', numba.__version__, 'pycuda', pycuda.VERSION_TEXT)" 2>&1 | tail -1
python3 -m pip list 2>/dev/null | grep -i -E "^(cupti-python|cuda-bindings|numba-cuda|nvidia-cuda-cupti) " | tr -s ' '
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_trace_gpu.py 2>&1 | tail -4
for lib in cupy numba pycuda cudapython torch; do
  timeout 120 python3 -m pinlint trace --check --format json -o $R/fixtures_$lib.json -- python3 bench/trace_fixtures.py $lib > $R/fixtures_$lib.log 2>&1
  echo "fixtures $lib: exit $?"
done
timeout 60 python3 -m pinlint trace --check --kernels -- python3 fixtures/PIN007/torch_cuda_loop.py > $R/example_torch.txt 2>&1; echo "example exit $?"
( cd ext && timeout 60 python3 -m pinlint trace --check --format json -o $R/cupy_memcpy.json -- python3 cupy_memcpy.py > $R/cupy_memcpy.log 2>&1; echo "cupy_memcpy exit $?"
  timeout 60 python3 -m pinlint trace --check -- python3 cupy_memcpy.py > $R/cupy_memcpy.txt 2>&1
  timeout 150 python3 -m pinlint trace --check --format json -o $R/dcgan.json --plot $R/dcgan.png -- python3 dcgan_main.py --dataset fake --accel --niter 1 --outf /tmp/dcgan > $R/dcgan.log 2>&1; echo "dcgan exit $?"
  t0=$EPOCHREALTIME; timeout 100 python3 dcgan_main.py --dataset fake --accel --niter 1 --outf /tmp/dcgan2 > /dev/null 2>&1
  python3 -c "print('dcgan plain wall %.2f s' % ($EPOCHREALTIME - $t0))" )
for i in 1 2; do
  timeout 60 python3 bench/trace_overhead.py 2>&1 | grep OVERHEAD | sed 's/^/plain /'
  timeout 60 python3 -m pinlint trace -o $R/overhead_trace.txt -- python3 bench/trace_overhead.py 2>&1 | grep OVERHEAD | sed 's/^/traced /'
done
echo "traces done at $((SECONDS - START)) s"
verify() {  # name, then pinlint verify arguments
  local name=$1; shift
  local left=$((DEADLINE - SECONDS))
  if [ $left -lt 20 ]; then echo "verify $name: skipped (no time left)"; return; fi
  timeout $left python3 -m pinlint verify "$@" --sizes min --repeats 4 --format json > $R/verify_$name.json 2> $R/verify_$name.log
  echo "verify $name: exit $? at $((SECONDS - START)) s"
}
verify PIN001 fixtures/PIN001
verify PIN002 fixtures/PIN002
verify PIN007 fixtures/PIN007
verify PIN004 fixtures/PIN004
verify races fixtures/PIN005 fixtures/PIN006
verify PIN003 fixtures/PIN003 --processes 1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
