#!/usr/bin/env bash
# Packs memaudit for a machine that has PyTorch but none of the build's
# packages (a cloud GPU image: no apt, no network): one archive holding
#   bin/      the four programs, stripped, finding their libraries in ../lib
#   lib/      every shared library they load (their ldd closure, stripped)
#             except the C and C++ runtimes, which are the host's
#   lib/memaudit/  the SentencePiece module (subword tokenizers), and where
#             scripts/gpu-check.sh puts the engine module it compiles there
#             against that machine's LibTorch
#   deps/     Abseil, GoogleTest and zlib for that compile (scripts/gpu-deps.sh;
#             Abseil's libraries are links into lib/)
#   data/fortunes  the English corpus the language-model examples read
#   src/      the source tree (the engine's sources, examples, bench/, scripts/)
#   BUNDLE-INFO  version, commit, and the oldest C library it runs on
#
#   scripts/build.sh && scripts/gpu-bundle.sh [OUT]   # default build/memaudit-gpu-bundle.tar.xz
#
# Why the host's C library and C++ runtime, not Debian's: the engine module
# is compiled on the host, against the host's LibTorch, with the host's
# compiler, so it needs the host's libstdc++ and glibc; one process has one of
# each, so the bundled programs use them too. That works wherever the host's
# are at least as new as the ones the programs were built against (glibc
# 2.36 and GCC 12 on Debian 12; BUNDLE-INFO names the oldest glibc the
# programs' symbols need, 2.35): Ubuntu 22.04 and 24.04, the base of NVIDIA's
# CUDA images (not RHEL 9, whose glibc is 2.34). Bundling Debian's instead
# would break the other direction:
# a host compiler newer than GCC 12 emits symbols Debian's libstdc++ lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/memaudit-gpu-bundle.tar.xz}"
programs=(memaudit memaudit-coordinator memaudit-scorer memaudit-worker)
max_bytes=$((40 * 1024 * 1024))
for p in "${programs[@]}"; do
  [ -x "build/bin/$p" ] || { echo "gpu-bundle: build/bin/$p missing: run scripts/build.sh first" >&2; exit 1; }
done
for c in patchelf strip xz git; do
  command -v "$c" >/dev/null || { echo "gpu-bundle: $c not found (scripts/install-deps.sh)" >&2; exit 1; }
done
version=$(sed -n 's/^project(memaudit VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
name="memaudit-$version"
root="$stage/$name"
mkdir -p "$root"/{bin,lib/memaudit,data,src}

# The host provides these: the C library and its loader, the C++ runtime.
host_provided='^(ld-linux-x86-64|libc|libm|libdl|librt|libpthread|libresolv|libutil|libstdc\+\+|libgcc_s)\.so'
for p in "${programs[@]}"; do
  strip --strip-all -o "$root/bin/$p" "build/bin/$p"
  patchelf --set-rpath '$ORIGIN/../lib' "$root/bin/$p"
done
# The SentencePiece module (subword tokenizers) sits where the worker looks,
# lib/memaudit/, finding its libraries in lib/.
strip --strip-all -o "$root/lib/memaudit/libmemaudit_sentencepiece.so" \
  build/bin/libmemaudit_sentencepiece.so
patchelf --set-rpath '$ORIGIN/..' "$root/lib/memaudit/libmemaudit_sentencepiece.so"
ldd "${programs[@]/#/build/bin/}" build/bin/libmemaudit_sentencepiece.so |
  awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r soname path; do
    [[ $soname =~ $host_provided ]] && continue
    cp -L "$path" "$root/lib/$soname"
    chmod u+w "$root/lib/$soname"
    strip --strip-unneeded "$root/lib/$soname"
    # A library's own dependencies are found through its own run path.
    patchelf --set-rpath '$ORIGIN' "$root/lib/$soname"
  done
if (cd "$root" && LD_LIBRARY_PATH= ldd bin/* lib/*.so* | grep -q 'not found'); then
  echo "gpu-bundle: a bundled program or library misses a library:" >&2
  (cd "$root" && ldd bin/* lib/*.so* | grep 'not found') >&2
  exit 1
fi

# What compiling the engine module there needs; Abseil's shared libraries
# are the ones in lib/ (the module and the programs share them at run time).
scripts/gpu-deps.sh "$root/deps" >/dev/null
for f in "$root"/deps/lib/x86_64-linux-gnu/libabsl_*.so.*.*; do
  soname=$(objdump -p "$f" | awk '$1 == "SONAME" {print $2}')
  if [ -f "$root/lib/$soname" ]; then
    rm "$f"
    ln -s "../../../lib/$soname" "$f"
  fi
done

cp -a /usr/share/games/fortunes "$root/data/fortunes"
# The working tree: tracked files and new ones, without what git ignores (a
# tracked file deleted in the tree is left out).
git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$root/src"

# The newest GLIBC_ symbol version any bundled file asks for.
glibc=$(objdump -T "$root"/bin/* "$root"/lib/*.so* 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
glibcxx=$(objdump -T "$root"/bin/* "$root"/lib/*.so* 2>/dev/null |
  grep -o 'GLIBCXX_[0-9.]*' | sed 's/GLIBCXX_//' | sort -uV | tail -1)
cat >"$root/BUNDLE-INFO" <<EOF
version=$version
commit=$(git rev-parse --short=12 HEAD)
built_on=$(. /etc/os-release && echo "$PRETTY_NAME")
needs_glibc=$glibc
needs_glibcxx=$glibcxx
EOF

mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - "$name" | xz -T0 -9 >"$out"
bytes=$(stat -c %s "$out")
echo "gpu-bundle: $out $((bytes / 1024 / 1024)) MiB ($bytes bytes; $(ls "$root/lib" | wc -l) libraries; needs glibc >= $glibc, GLIBCXX >= $glibcxx)"
if [ "$bytes" -gt "$max_bytes" ]; then
  echo "gpu-bundle: larger than $((max_bytes / 1024 / 1024)) MiB" >&2
  exit 1
fi
