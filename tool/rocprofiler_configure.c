/* The one symbol rocprofiler-sdk looks up in a library listed in ROCP_TOOL_LIBRARIES. It lives
 * here, in the tool library only: the Rust staticlib that XLA forks and other hosts link must
 * never define it (a global rocprofiler_configure makes rocprofiler-register load the SDK at the
 * first roctx call, and abort when it cannot; rocprofiler_abi.md 2.2). */
#include <stdint.h>

struct rocprofiler_tool_configure_result_t;

struct rocprofiler_tool_configure_result_t* roctx_utils_tool_configure(uint32_t version,
                                                                       const char* runtime_version,
                                                                       uint32_t priority,
                                                                       void* client_id);

__attribute__((visibility("default"))) struct rocprofiler_tool_configure_result_t*
rocprofiler_configure(uint32_t version, const char* runtime_version, uint32_t priority,
                      void* client_id) {
  return roctx_utils_tool_configure(version, runtime_version, priority, client_id);
}
