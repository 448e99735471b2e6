#!/bin/sh
# profiler/tests/run.sh BUILD_DIR: every test of the profiler, after
# `make BUILD=BUILD_DIR profiler-tests`:
#   1. the library exports its entry points and nothing else, and links
#      nothing but libc, libdl, libpthread and zlib;
#   2. the test runner: record conversion (CUDA 12 and 13 layouts, the real
#      cuptiActivityGetNextRecord), the NCCL plugin, joins, the writer, the
#      session with a fake CUPTI, InitializeInjection for real on this
#      machine, and the round trip through stepcast's ingest and replay;
#   3. the CUPTI buffer pool stressed under ThreadSanitizer;
#   4. the GEMM microbenchmark (profiler/gemm-bench.sh) compiles with nvcc
#      against cuBLAS, and without a GPU it and profiler/device-check.sh say
#      they measured nothing (exit 2).
# Ends with one line `N passed, N failed` summing them; exit status 1 on any
# failure.
set -u
build=${1:-build}
lib=$build/libstepcast_prof.so
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1${2:+: $2}"; }

# add the summary `N passed, N failed` in LOG (of NAME, exit status RC)
summarize() {
    name=$1 rc=$2 log=$3
    cat "$log"
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -z "$summary" ]; then
        fail "$name" "no summary (exit status $rc)"
        return
    fi
    p=${summary%% passed*}
    f=${summary#*, }
    f=${f%% failed}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "FAIL $name: exit status $rc"
    fi
    passed=$((passed + p))
    failed=$((failed + f))
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "== profiler: $lib"
if [ ! -f "$lib" ]; then
    fail "prof_library_built" "$lib is missing (make BUILD=$build profiler-tests)"
else
    exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort | tr '\n' ' ')
    want="InitializeInjection InitializeInjectionNvtx2 ncclProfiler_v4 ncclProfiler_v5 "
    if [ "$exports" = "$want" ]; then
        ok "prof_exports_only_entry_points"
    else
        fail "prof_exports_only_entry_points" "exports: $exports"
    fi
    types=$(nm -D --defined-only "$lib" | awk '{print $2 $3}' | tr '\n' ' ')
    case "$types" in
    *TInitializeInjection\ *TInitializeInjectionNvtx2*) ok "prof_entry_points_are_functions" ;;
    *) fail "prof_entry_points_are_functions" "$types" ;;
    esac
    needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    bad=""
    for n in $needed; do
        case "$n" in
        libc.so.* | libdl.so.* | libpthread.so.* | libz.so.* | ld-linux*) ;;
        *) bad="$bad $n" ;;
        esac
    done
    if [ -z "$bad" ]; then
        ok "prof_links_only_libc_dl_pthread_zlib ($needed)"
    else
        fail "prof_links_only_libc_dl_pthread_zlib" "also needs$bad"
    fi
fi

echo "== profiler: tests"
"$build/tests/prof-tests" >"$log" 2>&1
summarize "prof-tests" $? "$log"

echo "== profiler: buffer pool under ThreadSanitizer"
tsan=$build/tests/prof-tsan-pool
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
"$tsan" >"$log" 2>&1
rc=$?
if grep -q "unexpected memory mapping" "$log"; then
    # kernels with high mmap randomisation: ThreadSanitizer needs ASLR off
    setarch "$(uname -m)" -R "$tsan" >"$log" 2>&1
    rc=$?
fi
summarize "prof-tsan-pool" $rc "$log"

echo "== profiler: GEMM microbenchmark"
if [ ! -x "${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}" ]; then
    echo "skipped gemm_bench_compiles_against_cublas: no nvcc"
elif sh profiler/gemm-bench.sh --compile-only --build "$build" >"$log" 2>&1 && [ -x "$build/gemm_bench" ]; then
    ok "gemm_bench_compiles_against_cublas"
    if nvidia-smi -L >/dev/null 2>&1; then
        echo "skipped gemm_bench_without_a_gpu: this machine has a GPU"
    else
        sh profiler/gemm-bench.sh --build "$build" --quick >"$log" 2>&1
        rc=$?
        if [ "$rc" -eq 2 ] && grep -q "nothing measured" "$log"; then
            ok "gemm_bench_without_a_gpu_measures_nothing"
        else
            fail "gemm_bench_without_a_gpu_measures_nothing" "exit status $rc: $(tail -n 3 "$log")"
        fi
        sh profiler/device-check.sh "$build/device-check" >"$log" 2>&1
        rc=$?
        if [ "$rc" -eq 2 ] && grep -q "nothing measured" "$log" && [ ! -e "$build/device-check" ]; then
            ok "device_check_without_a_gpu_measures_nothing"
        else
            fail "device_check_without_a_gpu_measures_nothing" "exit status $rc: $(tail -n 3 "$log")"
        fi
    fi
else
    fail "gemm_bench_compiles_against_cublas" "$(tail -n 20 "$log")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
