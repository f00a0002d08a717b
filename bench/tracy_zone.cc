// Tracy v0.14's zone as the anchor of bench/side_by_side.cc (issue 44): compiled by
// scripts/bench_tracy.sh together with Tracy's own client (TracyClient.cpp, from crates.io's
// tracy-client-sys, pinned by bench/tracy/Cargo.lock) into libbench_tracy.so, which
// side_by_side dlopens when BENCH_TRACY_LIB names it. Each call is one zone as Tracy's users
// write it, so the zone's begin and end are inlined from Tracy's headers here, as in their code:
//
//   roctx_bench_tracy_static   ZoneScopedN("..."): a static source location, the label a literal
//   roctx_bench_tracy_runtime  ZoneTransientN(label): the label known only at run time, copied
//                              into a source location Tracy allocates per zone
//
// side_by_side reaches each through one indirect call per pair; ours takes two direct calls.
#include <cstring>

#include "tracy/Tracy.hpp"
#include "common/TracyVersion.hpp"

extern "C" {

__attribute__((visibility("default"))) int roctx_bench_tracy_version() {
  return tracy::Version::Major * 10000 + tracy::Version::Minor * 100 + tracy::Version::Patch;
}

__attribute__((visibility("default"))) void roctx_bench_tracy_static() {
  ZoneScopedN("Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#");
}

__attribute__((visibility("default"))) void roctx_bench_tracy_runtime(const char* label) {
  ZoneTransientN(zone, label, true);
}

}  // extern "C"
