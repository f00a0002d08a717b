// rocprofiler-register as the test doubles model it (rocprofiler_abi.md 2.1): a runtime (roctx at
// its first call, HIP at hipInit) registers its tables, and when a tool is indicated, register
// finds rocprofiler-sdk and calls its rocprofiler_set_api_table, which runs the SDK's tool
// discovery once. Shared by fake_roctx.cc and fake_hip.cc.
#ifndef ROCTX_UTILS_CC_TESTS_FAKE_REGISTER_H_
#define ROCTX_UTILS_CC_TESTS_FAKE_REGISTER_H_

#include <dlfcn.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace fake_register {

inline bool EnvSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

inline bool EnvBool(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !(s == "0" || s == "false" || s == "no" || s == "off" || s == "n" || s == "f");
}

// register's test for a tool: ROCPROFILER_REGISTER_FORCE_LOAD true (rocprofiler_force_configure
// sets it), ROCP_TOOL_LIBRARIES or ROCPROFILER_REGISTER_LIBRARY set, or a global
// rocprofiler_configure; ROCPROFILER_REGISTER_ENABLED=0 disables all of it.
inline bool ToolIndicated() {
  return EnvBool("ROCPROFILER_REGISTER_ENABLED", true) &&
         (EnvBool("ROCPROFILER_REGISTER_FORCE_LOAD", false) || EnvSet("ROCP_TOOL_LIBRARIES") ||
          EnvSet("ROCPROFILER_REGISTER_LIBRARY") ||
          dlsym(RTLD_DEFAULT, "rocprofiler_configure") != nullptr);
}

using SetApiTable = int (*)(const char* name, uint64_t lib_version, uint64_t lib_instance,
                            void** tables, uint64_t num_tables);

// rocprofiler_set_api_table from the global scope, else after loading the SDK as register does
// ($ROCPROFILER_REGISTER_LIBRARY, else the unversioned librocprofiler-sdk.so, RTLD_GLOBAL). Null
// where the real register would abort.
inline SetApiTable FindSdk() {
  if (void* set = dlsym(RTLD_DEFAULT, "rocprofiler_set_api_table")) {
    return reinterpret_cast<SetApiTable>(set);
  }
  const char* lib = std::getenv("ROCPROFILER_REGISTER_LIBRARY");
  dlopen(lib != nullptr && *lib != '\0' ? lib : "librocprofiler-sdk.so", RTLD_GLOBAL | RTLD_LAZY);
  return reinterpret_cast<SetApiTable>(dlsym(RTLD_DEFAULT, "rocprofiler_set_api_table"));
}

}  // namespace fake_register

#endif  // ROCTX_UTILS_CC_TESTS_FAKE_REGISTER_H_
