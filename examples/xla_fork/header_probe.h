// Which nvtx_utils.h a translation unit compiled against. Both declare the same functions, but
// roctx_utils' copy also declares the older title_text form of detail::RangePush; the fork's
// (upstream's) does not.
#ifndef XLA_FORK_EXAMPLE_HEADER_PROBE_H_
#define XLA_FORK_EXAMPLE_HEADER_PROBE_H_

#include <type_traits>
#include <utility>

#include "tsl/profiler/lib/nvtx_utils.h"

template <typename Domain, typename = void>
struct SeesTitleTextOverload : std::false_type {};

template <typename Domain>
struct SeesTitleTextOverload<Domain, std::void_t<decltype(tsl::profiler::detail::RangePush(
                                         std::declval<Domain>(), nullptr, "", 0, nullptr, 0))>>
    : std::true_type {};

#endif  // XLA_FORK_EXAMPLE_HEADER_PROBE_H_
