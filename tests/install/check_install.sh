#!/usr/bin/env bash
# Builds examples/first_training.cpp as a user of xgrad would, and checks that it prints
# tests/expected/first_training.txt:
#   pkg-config  install the build into a temporary DESTDIR; g++ with `pkg-config xgrad`, once against
#               libxgrad.so and once against libxgrad.a (`--static`); also checks the installed files
#   cmake       install likewise; a CMake project with find_package(xgrad CONFIG REQUIRED)
#   subproject  a meson project with subprojects/xgrad (this source tree) and xgrad.wrap
# usage: check_install.sh MODE SOURCE_DIR BUILD_DIR PREFIX LIBDIR VERSION
set -euo pipefail
mode=$1 src=$2 build=$3 prefix=$4 libdir=$5 version=$6
here=$src/tests/install
expected=$src/tests/expected/first_training.txt

work=$(mktemp -d "${TMPDIR:-/tmp}/xgrad_install_XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/project"
cp "$src/examples/first_training.cpp" "$work/project/train.cpp"

# Runs a built program and compares its output with the expected file.
check_output() {
    local what=$1
    shift
    if ! "$@" > "$work/out.txt"; then
        echo "FAIL ($what): the program exited with status $?"
        exit 1
    fi
    if ! diff -u "$expected" "$work/out.txt"; then
        echo "FAIL ($what): the output differs from $expected"
        exit 1
    fi
    echo "ok ($what): the output matches $expected"
}

install_into_destdir() {
    root=$work/root
    meson install -C "$build" --destdir "$root" --no-rebuild --quiet > "$work/install.log" ||
        { cat "$work/install.log"; exit 1; }
    case $libdir in /*) lib=$root$libdir ;; *) lib=$root$prefix/$libdir ;; esac
}

case $mode in
pkg-config)
    install_into_destdir
    # What a user's system gets: both libraries (with the soname links), every public header, the
    # generated version.hpp, xgrad.pc, the CMake package and the HTML documentation.
    missing=0
    for f in "$lib/libxgrad.a" "$lib/libxgrad.so" "$lib/pkgconfig/xgrad.pc" \
             "$lib/cmake/xgrad/xgradConfig.cmake" "$lib/cmake/xgrad/xgradConfigVersion.cmake" \
             "$root$prefix/include/xgrad/version.hpp" "$root$prefix/share/doc/xgrad/html/index.html"; do
        [ -e "$f" ] || { echo "FAIL: not installed: ${f#"$root"}"; missing=1; }
    done
    soname=$(readelf -d "$lib/libxgrad.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [ -L "$lib/$soname" ] || { echo "FAIL: no link named after the soname ($soname)"; missing=1; }
    (cd "$src/include" && find xgrad -name '*.hpp' | sort) > "$work/headers.src"
    (cd "$root$prefix/include" && find xgrad -name '*.hpp' ! -name version.hpp | sort) > "$work/headers.installed"
    diff "$work/headers.src" "$work/headers.installed" ||
        { echo "FAIL: installed headers differ from include/ (add new headers to include/meson.build)"; missing=1; }
    [ $missing = 0 ] || exit 1
    echo "ok: installed $soname, libxgrad.a, headers, xgrad.pc, the CMake package and the docs"

    export PKG_CONFIG_PATH=$lib/pkgconfig
    cxx=${CXX:-c++}
    cd "$work/project"
    # Against the shared library. PKG_CONFIG_SYSROOT_DIR puts the DESTDIR before xgrad's paths.
    flags=$(PKG_CONFIG_SYSROOT_DIR=$root pkg-config --cflags --libs xgrad)
    echo "pkg-config --cflags --libs xgrad: $flags"
    $cxx -std=c++20 -O1 train.cpp $flags -o train_shared
    check_output "g++ and pkg-config, libxgrad.so" env LD_LIBRARY_PATH="$lib" ./train_shared
    # Headers and library agree on the version.
    printf '#include <xgrad/version.hpp>\n#include <iostream>\nint main() { std::cout << xgrad::version() << " " << XGRAD_VERSION_STRING << "\\n"; }\n' > version.cpp
    $cxx -std=c++20 version.cpp $flags -o version
    got=$(LD_LIBRARY_PATH="$lib" ./version)
    [ "$got" = "$version $version" ] || { echo "FAIL: version.cpp printed '$got', not '$version $version'"; exit 1; }
    echo "ok: xgrad::version() and XGRAD_VERSION_STRING are both $version"
    # Against the static library, with what `--static` adds. Here the prefix is redefined rather than
    # a sysroot given, since a sysroot would move OpenBLAS's and CUDA's paths into the DESTDIR too.
    flags=$(pkg-config --define-variable=prefix="$root$prefix" --static --cflags --libs xgrad)
    echo "pkg-config --static --cflags --libs xgrad: $flags"
    $cxx -std=c++20 -O1 train.cpp ${flags/-lxgrad/-l:libxgrad.a} -o train_static
    if readelf -d train_static | grep -q 'libxgrad\.so'; then
        echo "FAIL: train_static needs libxgrad.so"
        exit 1
    fi
    check_output "g++ and pkg-config --static, libxgrad.a" ./train_static
    ;;
cmake)
    install_into_destdir
    cp "$here/CMakeLists.txt" "$work/project/"
    generator=()
    command -v ninja > /dev/null && generator=(-G Ninja)
    cmake -S "$work/project" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$root$prefix" > "$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
    cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
    # No LD_LIBRARY_PATH: CMake gives the program an RPATH to the imported libxgrad.so.
    check_output "CMake find_package(xgrad CONFIG REQUIRED)" "$work/build/train"
    ;;
subproject)
    cp "$here/meson.build" "$work/project/"
    mkdir "$work/project/subprojects"
    cp "$here/xgrad.wrap" "$work/project/subprojects/"
    ln -s "$src" "$work/project/subprojects/xgrad"
    # The subproject builds the whole library: without optimisation and without the CUDA backend that
    # takes about a minute on two cores, and the program's output is the same.
    meson setup "$work/build" "$work/project" --force-fallback-for=xgrad -Dbuildtype=plain \
        -Dxgrad:cuda=disabled > "$work/setup.log" || { cat "$work/setup.log"; exit 1; }
    meson compile -C "$work/build" train > "$work/build.log" || { cat "$work/build.log"; exit 1; }
    check_output "meson subproject" "$work/build/train"
    ;;
*)
    echo "usage: $0 pkg-config|cmake|subproject SOURCE_DIR BUILD_DIR PREFIX LIBDIR VERSION"
    exit 2
    ;;
esac
