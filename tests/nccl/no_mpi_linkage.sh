#!/bin/sh
# nccl.no-mpi: the libraries an application loads without asking for MPI carry no libmpi.
# Usage: no_mpi_linkage.sh --with-mpi PLUGIN -- LIB...
#   every LIB: neither a NEEDED entry (readelf -d) nor anything in its load closure (ldd) names
#   libmpi; PLUGIN (the MPI bootstrap plugin) must name it, which shows the check can see it.
set -u
plugin=""
if [ "$1" = "--with-mpi" ]; then plugin=$2; shift 2; fi
[ "$1" = "--" ] && shift
status=0
for lib in "$@"; do
  [ -n "$lib" ] || continue # a library this build does not make
  [ -f "$lib" ] || { echo "FAIL: $lib does not exist"; status=1; continue; }
  needed=$(readelf -d "$lib" | grep NEEDED) || { echo "FAIL: readelf -d $lib"; status=1; continue; }
  closure=$(ldd "$lib") || { echo "FAIL: ldd $lib"; status=1; continue; }
  if printf '%s\n%s\n' "$needed" "$closure" | grep -i 'libmpi\|libopen-pal\|libopen-rte'; then
    echo "FAIL: $lib pulls in MPI (above)"
    status=1
  else
    echo "ok: $lib: no MPI among $(printf '%s\n' "$closure" | wc -l) libraries it loads"
  fi
done
if [ -n "$plugin" ]; then
  if readelf -d "$plugin" | grep NEEDED | grep -q libmpi; then
    echo "ok: $plugin (the MPI bootstrap plugin) needs libmpi"
  else
    echo "FAIL: $plugin does not need libmpi: the check above could not have seen it"
    status=1
  fi
fi
exit $status
