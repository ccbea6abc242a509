#!/bin/bash
# Bundle ptdp's dependencies for a GPU node that has a CUDA toolkit but no MPI, HDF5, BLAS,
# autotools or network: Debian 12's Open MPI, parallel HDF5 and OpenBLAS (runtime and
# development packages, plus every shared library they need beyond the C/C++ runtime), each
# extracted with dpkg -x into one relocatable prefix, with an env.sh that points the compiler,
# linker, loader, pkg-config and Open MPI (OPAL_PREFIX) at it.
#
#   jobs/bundle-deps.sh [OUT_DIR]       (default: ./ptdp-deps; run on Debian 12 with network,
#                                        where jobs/setup.sh has installed the same packages)
# makes OUT_DIR/prefix/{usr,etc,env.sh} and OUT_DIR/ptdp-deps.tar.gz (the prefix alone).
# On the GPU node, with ptdp's `make dist` tarball beside it:
#   tar xf ptdp-deps.tar.gz && tar xf ptdp-0.1.0.tar.gz && source prefix/env.sh
#   cd ptdp-0.1.0 && ./configure --with-cuda && make -j
# Library dependencies are found from the extracted files themselves (ELF NEEDED entries),
# mapped to packages with dpkg -S on this machine, downloaded and extracted, until closed.
# Left out, as present on any GPU image: glibc, libgcc_s, libstdc++, libgomp, zlib (BASE below).
# Debian 12's binaries need glibc >= 2.36 (Ubuntu 24.04 has 2.39; Ubuntu 22.04's 2.35 is too old).
set -euo pipefail
out=$(mkdir -p "${1:-ptdp-deps}" && cd "${1:-ptdp-deps}" && pwd)
P=$out/prefix
debs=$out/debs
L=usr/lib/x86_64-linux-gnu
ROOTS="openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
       libhdf5-openmpi-dev libhdf5-openmpi-103-1 libhdf5-openmpi-hl-100
       libopenblas-dev libopenblas-pthread-dev libopenblas0 libopenblas0-pthread"
BASE="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libresolv.so.2
      ld-linux-x86-64.so.2 libgcc_s.so.1 libstdc++.so.6 libgomp.so.1 libz.so.1"
command -v apt-get >/dev/null && command -v dpkg >/dev/null || { echo "bundle-deps: needs Debian's apt-get and dpkg" >&2; exit 1; }
. /etc/os-release
[ "${VERSION_ID:-}" = 12 ] || echo "bundle-deps: warning: this is $PRETTY_NAME, not Debian 12" >&2
rm -rf "$P"
mkdir -p "$P" "$debs"

fetch() { # download (once) and extract the packages named
  local p
  for p in "$@"; do
    ls "$debs/${p}_"*.deb >/dev/null 2>&1 ||
      (cd "$debs" && apt-get download -q "$p" 2>&1 >/dev/null | { grep -v 'unsandboxed as root' || true; } >&2)
    dpkg -x "$debs/${p}_"*.deb "$P"
    echo "$p" >> "$out/packages.txt"
  done
}

# sonames the extracted ELF files need that neither the prefix nor BASE provides
missing_sonames() {
  find "$P" -type f \( -name '*.so*' -o -perm -u+x \) -print0 |
    xargs -0 -r readelf -d 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u |
    while read -r so; do
      case " $(echo $BASE) " in *" $so "*) continue ;; esac
      [ -n "$(find "$P" -name "$so" -print -quit)" ] || echo "$so"
    done
}

# A needed soname present only as a versioned file elsewhere in the prefix (an alternatives
# link, made by postinst on a real install): link it into the library directory.
link_alternatives() {
  local so f
  for so in $(missing_sonames); do
    f=$(find "$P" -name "$so.*" -type f -print -quit)
    [ -n "$f" ] && ln -sfn "$f" "$P/$L/$so" && ln -sfn "$(realpath --relative-to="$P/$L" "$f")" "$P/$L/$so"
  done
  return 0
}

: > "$out/packages.txt"
fetch $ROOTS
link_alternatives
for round in 1 2 3 4 5 6 7 8; do
  new=""
  for so in $(missing_sonames); do
    # a soname that is an alternatives link (libpsm_infinipath.so.1): its versioned file's package
    pkg=$({ dpkg -S "*/$so" || dpkg -S "*/$so.*"; } 2>/dev/null | grep -v -- '-dbg' | head -n 1 | cut -d: -f1) || true
    [ -n "$pkg" ] || { echo "bundle-deps: no installed package provides $so (install it, or add it to BASE)" >&2; exit 1; }
    grep -qx "$pkg" "$out/packages.txt" || case " $new " in *" $pkg "*) ;; *) new="$new $pkg" ;; esac
  done
  [ -n "$new" ] || break
  echo "bundle-deps: round $round adds$new"
  fetch $new
  link_alternatives
done
[ -z "$(missing_sonames)" ] || { echo "bundle-deps: unresolved: $(missing_sonames | tr '\n' ' ')" >&2; exit 1; }

# What Debian's postinst scripts would do (update-alternatives): the generic names
for t in mpicc mpicxx mpic++ mpirun mpiexec; do
  [ -e "$P/usr/bin/$t.openmpi" ] && ln -sfn "$t.openmpi" "$P/usr/bin/$t"
done
for f in libopenblas.so libopenblas.so.0 libblas.so libblas.so.3; do
  [ -e "$P/$L/openblas-pthread/$f" ] && ln -sfn "openblas-pthread/$f" "$P/$L/$f"
done
mkdir -p "$P/$L/pkgconfig"
[ -e "$P/$L/openblas-pthread/pkgconfig/openblas.pc" ] && cp "$P/$L/openblas-pthread/pkgconfig/openblas.pc" "$P/$L/pkgconfig/"
for pc in mpi mpi-c; do [ -e "$P/$L/pkgconfig/ompi-c.pc" ] && ln -sfn ompi-c.pc "$P/$L/pkgconfig/$pc.pc"; done
# pkg-config files name /usr: make them relative to where each lies (${pcfiledir}/../.. = usr)
find "$P" -name '*.pc' -type f | while read -r pc; do
  up=$(realpath --relative-to="$(dirname "$pc")" "$P/usr")
  sed -i -e "s|=/usr\b|=\${pcfiledir}/$up|g" -e "s|-\([IL]\)/usr\b|-\1\${pcfiledir}/$up|g" "$pc"
done

cat > "$P/env.sh" <<'EOF'
# source prefix/env.sh (bash): use the bundled Open MPI, parallel HDF5 and OpenBLAS from here.
P=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
L=$P/usr/lib/x86_64-linux-gnu
export PATH=$P/usr/bin${PATH:+:$PATH}
export CPATH=$P/usr/include:$L/openmpi/include:$P/usr/include/hdf5/openmpi:$P/usr/include/x86_64-linux-gnu/openblas-pthread${CPATH:+:$CPATH}
export LIBRARY_PATH=$L:$L/openblas-pthread:$L/hdf5/openmpi:$L/openmpi/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=$L:$L/openblas-pthread:$L/hdf5/openmpi:$L/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$L/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
# Open MPI finds its components, help files and wrapper data under its prefix, moved here
export OPAL_PREFIX=$P/usr OPAL_SYSCONFDIR=$P/etc/openmpi
# Debian's Open MPI uses the external PMIx, installed under its own prefix
export PMIX_INSTALL_PREFIX=$L/pmix2
unset L
EOF
# not needed to build or run ptdp: static libraries, documentation, translations
find "$P" -name '*.a' -type f -delete
rm -rf "$P/usr/share/doc" "$P/usr/share/man" "$P/usr/share/locale" "$P/usr/share/lintian" "$P/usr/share/info"
rm -f "$out/ptdp-deps.tar.gz"
tar czf "$out/ptdp-deps.tar.gz" -C "$out" prefix
echo "bundle-deps: $(wc -l < "$out/packages.txt") packages, $(du -sh "$debs" | cut -f1) of .deb files," \
     "prefix $(du -sh "$P" | cut -f1), $out/ptdp-deps.tar.gz $(du -h "$out/ptdp-deps.tar.gz" | cut -f1)"
