#!/bin/sh
# make test-be: the big-endian (s390x) tool against the native one on the same files. load
# --checksum hashes each element as the file holds it (little-endian), so both print the same
# line; convert and sample write the same bytes. Inputs: the sample, the reference files (one
# holds every dtype) and a file of F32/BF16/F16/F64/I64/C64 tensors bigger than the load's
# chunk and staging buffers and the writer's 1 MiB pieces.
#   sh tests/be_same.sh NATIVE_TOOL "RUNNER BE_TOOL" DIR
set -eu
native=$1
be=$2
dir=$3
mkdir -p "$dir"

# the sample: written by each tool (the writer on a big-endian host)
$native sample "$dir/sample.safetensors" > /dev/null
$be sample "$dir/sample_be.safetensors" > /dev/null
cmp "$dir/sample.safetensors" "$dir/sample_be.safetensors"
echo "sample: the same bytes"

# six big tensors; their bytes are the reference files' (any bytes will do, NaNs included)
h='{"c64":{"dtype":"C64","shape":[250,301],"data_offsets":[0,602000]},'
h=$h'"f64":{"dtype":"F64","shape":[301,250],"data_offsets":[602000,1204000]},'
h=$h'"i64":{"dtype":"I64","shape":[77,1000],"data_offsets":[1204000,1820000]},'
h=$h'"f32":{"dtype":"F32","shape":[1000,321],"data_offsets":[1820000,3104000]},'
h=$h'"bf16":{"dtype":"BF16","shape":[700,300],"data_offsets":[3104000,3524000]},'
h=$h'"f16":{"dtype":"F16","shape":[333,777],"data_offsets":[3524000,4041482]}}'
while [ $(( ${#h} % 8 )) -ne 0 ]; do h="$h "; done
big=$dir/big.safetensors
printf "$(printf '\\%03o\\%03o' $(( ${#h} % 256 )) $(( ${#h} / 256 )))" > "$big"
printf '\0\0\0\0\0\0' >> "$big"
printf '%s' "$h" >> "$big"
cat tests/data/reference/*.safetensors tests/data/reference/*.safetensors | head -c 4041482 >> "$big"
$native verify "$big" > /dev/null

n=0
for f in "$dir/sample.safetensors" tests/data/reference/*.safetensors "$big"; do
    for opts in "" "--dtype f32 --io mmap --threads 3" "--dtype bf16 --io direct" \
                "--dtype f16 --threads 2"; do
        # shellcheck disable=SC2086
        want=$($native load "$f" $opts --checksum | grep '^checksum')
        # shellcheck disable=SC2086
        got=$($be load "$f" $opts --checksum | grep '^checksum')
        if [ "$got" != "$want" ]; then
            echo "load $f $opts --checksum: big-endian $got, native $want" >&2
            exit 1
        fi
        n=$((n + 1))
    done
    for dt in "" f32 bf16; do
        o=$dir/out_native.safetensors
        b=$dir/out_be.safetensors
        rm -f "$o" "$b"
        $native convert "$f" "$o" ${dt:+--dtype $dt} > /dev/null
        $be convert "$f" "$b" ${dt:+--dtype $dt} --threads 2 > /dev/null
        if ! cmp "$o" "$b"; then
            echo "convert $f ${dt:+--dtype $dt}: the files differ" >&2
            exit 1
        fi
        n=$((n + 1))
    done
done
echo "be_same.sh: $n loads and converts give the native checksums and bytes"
