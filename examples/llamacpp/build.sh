#!/bin/sh
# build.sh — llama.cpp's llama-server and llama-batched-bench, and a small random-weight model, built once
# and cached for the llamacpp campaign. No GPU, no Hugging Face, no network but PyPI.
#
# The llama.cpp source is the one vendored in the llama-cpp-python sdist on PyPI (pinned below, checked
# by its sha256), so a machine that reaches only the package registries can build it. The cache is keyed
# by that version and the machine (the build is -march=native): a second run finds it and does nothing.
#
#   sh build.sh            build what is missing; print the cache directory last
#   sh build.sh --where    print the cache directory (exit 1 when it is not complete yet)
#
# Environment: SIGNOFF_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/signoff), JOBS (default: all cores),
# PYTHON (default python3: makes the cache's own venv for llama.cpp's gguf package and numpy).
set -eu

VERSION=0.3.36 # llama-cpp-python; its vendor/llama.cpp is the source built here
SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
HERE=$(cd "$(dirname "$0")" && pwd -P)
ROOT=${SIGNOFF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/signoff}
CACHE=$ROOT/llama.cpp-$VERSION-$(uname -m)
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

say() { echo "build.sh: $*" >&2; }
die() { say "$*"; exit 1; }

complete() { [ -x "$CACHE/bin/llama-server" ] && [ -x "$CACHE/bin/llama-batched-bench" ] && [ -f "$CACHE/model/tiny-llama.gguf" ]; }

if [ "${1:-}" = --where ]; then
    complete || die "not built yet: sh $HERE/build.sh"
    echo "$CACHE"
    exit 0
fi
if complete; then echo "$CACHE"; exit 0; fi

for tool in cmake make cc c++; do
    command -v $tool >/dev/null || die "$tool is not installed (Debian: apt install cmake build-essential)"
done
mkdir -p "$CACHE"
# One build at a time per cache: two test workers (or two shells) may ask at once.
exec 9>"$CACHE/.lock"
if command -v flock >/dev/null; then flock 9; fi
if complete; then echo "$CACHE"; exit 0; fi

SRC=$CACHE/src/llama_cpp_python-$VERSION/vendor/llama.cpp
if [ ! -f "$SRC/CMakeLists.txt" ]; then
    mkdir -p "$CACHE/src"
    tarball=$CACHE/src/llama_cpp_python-$VERSION.tar.gz
    if [ ! -f "$tarball" ]; then
        say "downloading the llama-cpp-python $VERSION sdist from PyPI (77 MB)"
        "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: \
            "llama-cpp-python==$VERSION" -d "$CACHE/src" 2>"$CACHE/src/pip.log" ||
            { tail -n 5 "$CACHE/src/pip.log" >&2; die "pip download llama-cpp-python==$VERSION failed"; }
    fi
    got=$(sha256sum "$tarball" | cut -d' ' -f1)
    [ "$got" = "$SHA256" ] || { rm -f "$tarball"; die "llama-cpp-python-$VERSION.tar.gz has sha256 $got, not $SHA256"; }
    tar -xzf "$tarball" -C "$CACHE/src"
fi

if [ ! -x "$CACHE/bin/llama-server" ] || [ ! -x "$CACHE/bin/llama-batched-bench" ]; then
    say "building llama-server and llama-batched-bench with $JOBS jobs (about 5 minutes on 2 quiet cores, up to 20 on a busy machine)"
    start=$(date +%s)
    # Static, CPU only, no UI assets (the prebuilt UI would be fetched from Hugging Face), no TLS, no tests.
    # llama-server links llama.cpp's multimodal library (tools/mtmd) itself, so that one is built too.
    cmake -S "$SRC" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF >"$CACHE/cmake.log" 2>&1 ||
        { tail -n 20 "$CACHE/cmake.log" >&2; die "cmake configure failed ($CACHE/cmake.log)"; }
    cmake --build "$CACHE/build" --target llama-server llama-batched-bench -j "$JOBS" >"$CACHE/make.log" 2>&1 ||
        { tail -n 20 "$CACHE/make.log" >&2; die "the build failed ($CACHE/make.log)"; }
    mkdir -p "$CACHE/bin"
    cp "$CACHE/build/bin/llama-server" "$CACHE/build/bin/llama-batched-bench" "$CACHE/bin/"
    say "built in $(($(date +%s) - start)) s"
fi

if [ ! -f "$CACHE/model/tiny-llama.gguf" ]; then
    if [ ! -x "$CACHE/py/bin/python" ]; then
        "$PYTHON" -m venv "$CACHE/py" && "$CACHE/py/bin/pip" install --quiet numpy pyyaml ||
            die "could not make a venv with numpy for llama.cpp's gguf package"
    fi
    mkdir -p "$CACHE/model"
    PYTHONPATH=$SRC/gguf-py "$CACHE/py/bin/python" "$HERE/makemodel.py" \
        --vocab "$SRC/models/ggml-vocab-llama-spm.gguf" --out "$CACHE/model/tiny-llama.gguf.tmp" &&
        mv "$CACHE/model/tiny-llama.gguf.tmp" "$CACHE/model/tiny-llama.gguf"
fi
complete || die "incomplete cache in $CACHE"
echo "$CACHE"
