#!/usr/bin/env bash
# Builds xgrammar's C++ core (the grammar engine behind src/constrain) once and installs it into a
# cache outside the tree, where CMake finds it (cmake/xgrammar.cmake). Idempotent: a finished
# install is recognised by its stamp file and nothing is fetched or built again.
#   scripts/install-xgrammar.sh          (scripts/install-deps.sh calls it)
# Source: PyPI's sdist xgrammar==0.2.9, sha256-checked; it holds the C++ core and its CMake build.
# Prefix: $WEFT_XGRAMMAR_ROOT, else ${XDG_CACHE_HOME:-~/.cache}/weft-deps/xgrammar-0.2.9.
# The library is built static, with -fPIC, without the Python bindings, LTO or -Werror (so clang
# and the sanitizer builds can link it too), at -O2 with the system g++, after applying
# scripts/patches/xgrammar-<version>-*.patch (each says what it fixes).
set -euo pipefail

version=0.2.9
sha256=87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90
# files.pythonhosted.org's path is derived from the file's blake2b digest, so it never changes.
url="https://files.pythonhosted.org/packages/3a/2f/5bf8e8fa6619cff534932f79b0abc81a417d354bc5093252c1a6081d0a93/xgrammar-${version}.tar.gz"
# Bump when the build recipe below changes, so caches built by an older recipe are rebuilt;
# the patches' own hashes are part of the stamp.
recipe=2
patches_dir="$(cd "$(dirname "$0")" && pwd)/patches"
patches=("$patches_dir"/xgrammar-"$version"-*.patch)
[ -e "${patches[0]}" ] || patches=()
patch_sums=""
if ((${#patches[@]})); then patch_sums=$(cat "${patches[@]}" | sha256sum | cut -d' ' -f1); fi

prefix="${WEFT_XGRAMMAR_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/weft-deps/xgrammar-${version}}"
stamp="$prefix/weft-install.stamp"
want_stamp="xgrammar $version sha256 $sha256 recipe $recipe patches ${patch_sums:-none}"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ]; then
  echo "install-xgrammar: cached ($prefix)"
  exit 0
fi

mkdir -p "$(dirname "$prefix")"
# Two builds started at once (two worktrees, CI steps) wait for each other instead of racing.
exec 9>"$prefix.lock"
flock 9
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ]; then
  echo "install-xgrammar: cached ($prefix)"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-xgrammar.XXXXXX")
trap 'rm -rf "$work"' EXIT
tarball="$work/xgrammar-${version}.tar.gz"

echo "install-xgrammar: fetching xgrammar $version"
if ! curl -sSfL --retry 3 -o "$tarball" "$url"; then
  echo "install-xgrammar: $url failed; trying pip download" >&2
  rm -f "$tarball"
  python3 -m pip download --no-deps --no-binary :all: \
    -d "$work" "xgrammar==${version}" >&2
fi
got=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ "$got" != "$sha256" ]; then
  echo "install-xgrammar: $tarball has sha256 $got, expected $sha256" >&2
  exit 1
fi

tar -xzf "$tarball" -C "$work"
src="$work/xgrammar-${version}"
# cmake/config.cmake is included after the command line is read and overrides it.
sed -i 's/^set(XGRAMMAR_BUILD_PYTHON_BINDINGS ON)/set(XGRAMMAR_BUILD_PYTHON_BINDINGS OFF)/' \
  "$src/cmake/config.cmake"
grep -q '^set(XGRAMMAR_BUILD_PYTHON_BINDINGS OFF)' "$src/cmake/config.cmake" || {
  echo "install-xgrammar: could not turn the Python bindings off in cmake/config.cmake" >&2
  exit 1
}

for p in "${patches[@]}"; do
  patch -d "$src" -p1 --forward --quiet <"$p" || {
    echo "install-xgrammar: $p does not apply" >&2; exit 1; }
  echo "install-xgrammar: applied $(basename "$p")"
done

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs="${WEFT_JOBS:-$(nproc)}"
staging="$prefix.staging"
rm -rf "$staging"
echo "install-xgrammar: building libxgrammar.a (a few minutes on 2 cores)"
# xgrammar puts -O3 -flto=auto -Werror before CMAKE_CXX_FLAGS; the flags here come later and win.
cmake -S "$src" -B "$work/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="${WEFT_XGRAMMAR_CXX:-g++}" \
  -DCMAKE_CXX_FLAGS="-O2 -fno-lto -Wno-error" \
  -DCMAKE_INSTALL_PREFIX="$staging" >"$work/configure.log" 2>&1 || {
  cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" --target xgrammar -j "$jobs" >"$work/build.log" 2>&1 || {
  tail -60 "$work/build.log" >&2; exit 1; }
cmake --install "$work/build" >/dev/null
cp "$src/LICENSE" "$src/NOTICE" "$staging/" 2>/dev/null || true
test -f "$staging/lib/libxgrammar.a" -o -f "$staging/lib64/libxgrammar.a" || {
  echo "install-xgrammar: no libxgrammar.a under $staging" >&2; exit 1; }

echo "$want_stamp" >"$staging/weft-install.stamp"
rm -rf "$prefix"
mv "$staging" "$prefix"
echo "install-xgrammar: installed $prefix"
