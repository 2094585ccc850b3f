#!/bin/sh
# For make test's summary: the SIMD paths test_cast (its log: $1) did not test because this CPU
# lacks them. test_cast prints "test_cast: paths: scalar sse2 ... (auto = ...)"; on a CPU with
# AVX512_VBMI the avx512 paths run twice, the second time as "-novbmi" (the byte-domain FP8
# kernels), so without a "-novbmi" path the VBMI table kernels went untested.
[ -f "$1" ] || exit 0
paths=$(sed -n 's/^test_cast: paths: \(.*\) (auto = .*/\1/p' "$1")
case $(uname -m) in
    x86_64|amd64) want="sse2 avx2 avx512 avx512bf16" ;;
    aarch64|arm64) want="neon" ;;
    *) want="" ;;
esac
miss=""
for w in $want; do
    case " $paths " in *" $w "*) ;; *) miss="$miss $w" ;; esac
done
case " $paths " in
    *" avx512 "*) case "$paths" in *novbmi*) ;; *) miss="$miss avx512-vbmi-tables" ;; esac ;;
esac
[ -z "$miss" ] || echo "test_cast: SIMD paths not tested, this CPU lacks them (missing CPU feature):$miss"
