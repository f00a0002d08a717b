# Prints, from one of the TraceMeWrapper patches, its xla/python/profiler.cc header and the
# hunks that change the TraceMeWrapper class: every profiler.cc hunk that adds no #include. The
# include and BUILD hunks are what differ between XLA trees; the class hunks are the change.
#   awk -f class_hunks.awk PATCH            a patch of the class hunks alone
#   awk -v bare=1 -f class_hunks.awk PATCH  the same without line numbers, to compare patches
function flush(  i) {
  if (nh > 0 && !includes) {
    for (i = 1; i <= nh; i++) print hunk[i]
  }
  nh = 0
  includes = 0
}
/^diff / { flush(); ours = 0; next }
/^--- / { flush(); ours = ($2 == "a/xla/python/profiler.cc"); if (ours) print "--- " $2; next }
/^\+\+\+ / { if (ours) print "+++ " $2; next }
/^@@/ { flush(); if (ours) hunk[++nh] = bare ? "@@" : $0; next }
nh > 0 { hunk[++nh] = $0; if ($0 ~ /^\+#include/) includes = 1; next }
END { flush() }
