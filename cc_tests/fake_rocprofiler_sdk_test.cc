// Checks the fake rocprofiler-sdk (fake_rocprofiler_sdk.cc) against rocprofiler_abi.md: this test
// plays the tool. It dlopens the fake (RTLD_NOW | RTLD_GLOBAL, as the FFI checklist says), drives
// force_configure -> configure -> initialize with its own C++ configure function, subscribes
// marker kinds with callbacks declared from the spec's layouts (not from the fake's), then
// replays markers and checks what arrives. The SDK state is process-global and configured once,
// so one binary per environment:
//   FAKE_ROCPROFILER_VERSION  the SDK version the fake pretends to be
//   FAKE_SDK_PATH             the fake SDK to dlopen
//   FAKE_ROCTX_PATH           the fake SDK roctx (forwarding check)
//   FAKE_ROCTX_LEGACY_PATH    the fake legacy libroctx64 (must never forward)
//   EXPECT_MODE               normal | early_roctx (a roctx call before configuring) | locked
//                             (FAKE_ROCPROFILER_LOCKED=1: someone else owns the SDK) |
//                             wrong_client_id (the tool names itself with the other layout)
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

// ---- the spec's layouts (rocprofiler_abi.md 3.3, 5.1, 5.5), declared independently ----

struct Rec6 {
  uint64_t context_id;
  uint64_t thread_id;
  uint64_t internal;
  uint64_t external;
  int32_t kind;
  int32_t operation;
  int32_t phase;
  void* payload;
};
static_assert(sizeof(Rec6) == 56, "6.x record");
static_assert(offsetof(Rec6, kind) == 32 && offsetof(Rec6, payload) == 48, "6.x record");

struct Rec7 {
  uint64_t context_id;
  uint64_t thread_id;
  uint64_t internal;
  uint64_t external;
  uint64_t ancestor;
  int32_t kind;
  int32_t operation;
  int32_t phase;
  void* payload;
};
static_assert(sizeof(Rec7) == 64, "7.x record");
static_assert(offsetof(Rec7, kind) == 40 && offsetof(Rec7, payload) == 56, "7.x record");

struct ToolResult {
  size_t size;
  int (*initialize)(void (*fini)(), void* tool_data);
  void (*finalize)(void* tool_data);
  void* tool_data;
};
static_assert(sizeof(ToolResult) == 32, "tool_configure_result");

struct ClientId6 {
  const char* name;
  uint32_t handle;
};
struct ClientId7 {
  size_t size;
  const char* name;
  uint32_t handle;
};

constexpr int kEnter = 1, kExit = 2;
constexpr int kMarkerCore = 7, kMarkerControl = 8, kMarkerName = 9, kCodeObject = 10,
              kMarkerRange = 21;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

uint32_t EnvVersion() {
  const std::string v = Env("FAKE_ROCPROFILER_VERSION");
  return v.empty() ? 10000 : static_cast<uint32_t>(std::stoul(v));
}
bool Is7() { return EnvVersion() >= 10000; }
int Locked() { return EnvVersion() < 500 ? 15 : 16; }
int AlreadyConfigured() { return EnvVersion() < 500 ? 14 : 15; }
int InvalidArgument() { return EnvVersion() < 500 ? 18 : 19; }
uint64_t NoneHandle() { return EnvVersion() > 10000 ? 0 : UINT64_MAX; }
std::string Mode() {
  const std::string m = Env("EXPECT_MODE");
  return m.empty() ? "normal" : m;
}

uint64_t Gettid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

// ---- what the callbacks saw ----

struct Seen {
  uint64_t context_id = 0, thread_id = 0, internal = 0, external = 0, ancestor = 0;
  int kind = 0, op = 0, phase = 0;
  unsigned char payload[32] = {};
  bool has_payload = false;
  std::string message;  // copied from payload @8 for message-carrying operations
  uint64_t* user_data = nullptr;
  uint64_t user_data_at_entry = 0;
  void* cb_data = nullptr;
};

std::mutex g_seen_mutex;
std::vector<Seen> g_seen;
int g_cb_data_tag = 0;
int g_raw_tag = 0;  // cb_data of the CODE_OBJECT subscription, which gets raw records only

bool CarriesMessage(int kind, int op) {
  return (kind == kMarkerCore && (op == 0 || op == 1 || op == 3)) || kind == kMarkerName ||
         (kind == kMarkerRange && op <= 2);
}

void Observe(Seen s, void* payload, bool deref_payload) {
  if (deref_payload && payload != nullptr) {
    std::memcpy(s.payload, payload, sizeof(s.payload));
    s.has_payload = true;
    if (CarriesMessage(s.kind, s.op)) {
      const char* msg = nullptr;
      std::memcpy(&msg, s.payload + 8, sizeof(msg));
      s.message = msg ? msg : "<null>";
    }
  }
  if (s.user_data != nullptr) {
    s.user_data_at_entry = *s.user_data;
    // ENTER leaves a mark that the matching EXIT must see again.
    if (s.phase == kEnter) *s.user_data = 0x5EED000000000000ull | s.internal;
  }
  std::lock_guard<std::mutex> lock(g_seen_mutex);
  g_seen.push_back(s);
}

void Cb6(Rec6 r, uint64_t* user_data, void* cb_data) {
  Seen s;
  s.context_id = r.context_id, s.thread_id = r.thread_id, s.internal = r.internal;
  s.external = r.external, s.kind = r.kind, s.op = r.operation, s.phase = r.phase;
  s.user_data = user_data, s.cb_data = cb_data;
  Observe(s, r.payload, cb_data != &g_raw_tag);
}

void Cb7(Rec7 r, uint64_t* user_data, void* cb_data) {
  Seen s;
  s.context_id = r.context_id, s.thread_id = r.thread_id, s.internal = r.internal;
  s.external = r.external, s.ancestor = r.ancestor, s.kind = r.kind, s.op = r.operation;
  s.phase = r.phase, s.user_data = user_data, s.cb_data = cb_data;
  Observe(s, r.payload, cb_data != &g_raw_tag);
}

void* Callback() { return Is7() ? reinterpret_cast<void*>(&Cb7) : reinterpret_cast<void*>(&Cb6); }

std::vector<Seen> TakeSeen() {
  std::lock_guard<std::mutex> lock(g_seen_mutex);
  std::vector<Seen> out;
  out.swap(g_seen);
  return out;
}

template <typename T>
T At(const unsigned char* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof(v));
  return v;
}

// ---- the fake SDK's entry points ----

struct Api {
  int (*get_version)(uint32_t*, uint32_t*, uint32_t*) = nullptr;
  int (*get_version_triplet)(uint32_t*) = nullptr;
  int (*is_initialized)(int*) = nullptr;
  int (*is_finalized)(int*) = nullptr;
  int (*force_configure)(ToolResult* (*)(uint32_t, const char*, uint32_t, void*)) = nullptr;
  int (*create_context)(uint64_t*) = nullptr;
  int (*configure_callback)(uint64_t, int, const int32_t*, size_t, void*, void*) = nullptr;
  int (*start_context)(uint64_t) = nullptr;
  int (*stop_context)(uint64_t) = nullptr;
  int (*context_is_active)(uint64_t, int*) = nullptr;
  int (*context_is_valid)(uint64_t, int*) = nullptr;
  int (*get_timestamp)(uint64_t*) = nullptr;
  int (*get_thread_id)(uint64_t*) = nullptr;
  const char* (*status_name)(int) = nullptr;
  const char* (*status_string)(int) = nullptr;
  void* configure_symbol = nullptr;  // must stay null: rocprofiler_configure is not exported
  // probes
  int (*marker)(int, int, int, const char*, uint64_t, int64_t) = nullptr;
  int (*marker_raw)(int, const void*, size_t) = nullptr;
  int (*context_active)() = nullptr;
  int (*configured_kinds)(int*, int) = nullptr;
  int (*client_id_corrupted)() = nullptr;
  int (*configure_calls)() = nullptr;
  int (*initialize_calls)() = nullptr;
  int (*tool_finalize_calls)() = nullptr;
  int (*client_finalize_calls)() = nullptr;
  void (*client_name)(char*, size_t) = nullptr;
  void (*finalize)() = nullptr;
};

struct Roctx {
  int (*RangePushA)(const char*) = nullptr;
  int (*RangePop)() = nullptr;
  void (*MarkA)(const char*) = nullptr;
  uint64_t (*RangeStartA)(const char*) = nullptr;
  void (*RangeStop)(uint64_t) = nullptr;
  int (*GetThreadId)(uint64_t*) = nullptr;
  int (*ProfilerPause)(uint64_t) = nullptr;
  int (*ProfilerResume)(uint64_t) = nullptr;
  int (*NameHipDevice)(const char*, int) = nullptr;
  int (*NameHipStream)(const char*, const void*) = nullptr;
  int (*sdk_state)() = nullptr;
};

template <typename T>
void Bind(void* handle, const char* name, T* out) {
  *out = reinterpret_cast<T>(dlsym(handle, name));
}

// Everything the one configure sequence produced, recorded as it happened.
struct World {
  bool loaded = false;
  std::string error;
  Api api;
  Roctx roctx, legacy;
  int early_roctx_state = -99;

  int pre_is_init = -99;
  int pre_create_status = -99;
  uint64_t pre_create_handle = 0;
  int pre_configure_status = -99;

  int configure_seen = 0;
  uint32_t configure_version = 0;
  std::string runtime_version;
  uint32_t priority = 99;
  unsigned char client_id_at_entry[24] = {};

  int initialize_seen = 0;
  void (*fini)() = nullptr;
  void* tool_data_at_init = nullptr;
  int init_is_init = -99;
  int create_status = -99;
  uint64_t ctx = 0;
  int cfg_core = -99, cfg_control = -99, cfg_name = -99, cfg_code_object = -99;
  int cfg_core_again = -99, cfg_range = -99, cfg_none = -99, cfg_kind99 = -99;
  int cfg_bad_ctx = -99, cfg_bad_op = -99;
  int create_nonzero_status = -99;
  uint64_t create_nonzero_out = 0;
  int nested_force = -99;
  int start_status = -99;

  int force_status = -99;
  int post_is_init = -99;
  int post_create_status = -99;
  int post_configure_status = -99;
  int second_force = -99;
};

World g_world;
int g_tool_data = 0;
int g_tool_finalize_seen = 0;
void* g_tool_finalize_data = nullptr;

int ToolInitialize(void (*fini)(), void* tool_data) {
  World& w = g_world;
  const Api& a = w.api;
  ++w.initialize_seen;
  w.fini = fini;
  w.tool_data_at_init = tool_data;
  a.is_initialized(&w.init_is_init);

  uint64_t ctx = 0;
  w.create_status = a.create_context(&ctx);
  w.ctx = ctx;
  void* cb = Callback();
  const int32_t resume_only[] = {1};
  w.cfg_core = a.configure_callback(ctx, kMarkerCore, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_control = a.configure_callback(ctx, kMarkerControl, resume_only, 1, cb, &g_cb_data_tag);
  w.cfg_name = a.configure_callback(ctx, kMarkerName, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_code_object = a.configure_callback(ctx, kCodeObject, nullptr, 0, cb, &g_raw_tag);
  w.cfg_range = a.configure_callback(ctx, kMarkerRange, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_core_again = a.configure_callback(ctx, kMarkerCore, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_none = a.configure_callback(ctx, 0, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_kind99 = a.configure_callback(ctx, 99, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_bad_ctx = a.configure_callback(ctx + 777, 11, nullptr, 0, cb, &g_cb_data_tag);
  const int32_t bad_op[] = {600};
  w.cfg_bad_op = a.configure_callback(ctx, 11, bad_op, 1, cb, &g_cb_data_tag);

  w.create_nonzero_out = 42;
  w.create_nonzero_status = a.create_context(&w.create_nonzero_out);

  w.nested_force = a.force_configure(nullptr);
  w.start_status = a.start_context(ctx);
  return 0;
}

void ToolFinalize(void* tool_data) {
  ++g_tool_finalize_seen;
  g_tool_finalize_data = tool_data;
}

ToolResult g_result = {sizeof(ToolResult), &ToolInitialize, &ToolFinalize, &g_tool_data};

ToolResult* ToolConfigure(uint32_t version, const char* runtime_version, uint32_t priority,
                          void* client_id) {
  World& w = g_world;
  ++w.configure_seen;
  w.configure_version = version;
  w.runtime_version = runtime_version ? runtime_version : "<null>";
  w.priority = priority;
  std::memcpy(w.client_id_at_entry, client_id, version >= 10000 ? 24 : 16);
  // Name the client at the offset of the version's layout (rocprofiler_abi.md 3.3), or, in
  // wrong_client_id mode, like a tool built against the other version's header.
  const bool seven = (version >= 10000) != (Mode() == "wrong_client_id");
  if (seven) {
    static_cast<ClientId7*>(client_id)->name = "fake-sdk-test";
  } else {
    static_cast<ClientId6*>(client_id)->name = "fake-sdk-test";
  }
  return &g_result;
}

bool BindRoctx(const std::string& path, bool legacy, Roctx* r, std::string* error) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    *error = std::string("dlopen ") + path + ": " + dlerror();
    return false;
  }
  Bind(h, "roctxRangePushA", &r->RangePushA);
  Bind(h, "roctxRangePop", &r->RangePop);
  Bind(h, "roctxMarkA", &r->MarkA);
  Bind(h, "roctxRangeStartA", &r->RangeStartA);
  Bind(h, "roctxRangeStop", &r->RangeStop);
  Bind(h, "fake_roctx_sdk_state", &r->sdk_state);
  if (!legacy) {
    Bind(h, "roctxGetThreadId", &r->GetThreadId);
    Bind(h, "roctxProfilerPause", &r->ProfilerPause);
    Bind(h, "roctxProfilerResume", &r->ProfilerResume);
    Bind(h, "roctxNameHipDevice", &r->NameHipDevice);
    Bind(h, "roctxNameHipStream", &r->NameHipStream);
  }
  if (!r->RangePushA || !r->RangePop || !r->MarkA || !r->sdk_state) {
    *error = "missing roctx symbols in " + path;
    return false;
  }
  return true;
}

const World& W() {
  static const bool once = [] {
    World& w = g_world;
    Api& a = w.api;
    const std::string path = Env("FAKE_SDK_PATH");
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      w.error = std::string("dlopen ") + path + ": " + dlerror();
      return false;
    }
    Bind(h, "rocprofiler_get_version", &a.get_version);
    Bind(h, "rocprofiler_get_version_triplet", &a.get_version_triplet);
    Bind(h, "rocprofiler_is_initialized", &a.is_initialized);
    Bind(h, "rocprofiler_is_finalized", &a.is_finalized);
    Bind(h, "rocprofiler_force_configure", &a.force_configure);
    Bind(h, "rocprofiler_create_context", &a.create_context);
    Bind(h, "rocprofiler_configure_callback_tracing_service", &a.configure_callback);
    Bind(h, "rocprofiler_start_context", &a.start_context);
    Bind(h, "rocprofiler_stop_context", &a.stop_context);
    Bind(h, "rocprofiler_context_is_active", &a.context_is_active);
    Bind(h, "rocprofiler_context_is_valid", &a.context_is_valid);
    Bind(h, "rocprofiler_get_timestamp", &a.get_timestamp);
    Bind(h, "rocprofiler_get_thread_id", &a.get_thread_id);
    Bind(h, "rocprofiler_get_status_name", &a.status_name);
    Bind(h, "rocprofiler_get_status_string", &a.status_string);
    a.configure_symbol = dlsym(h, "rocprofiler_configure");
    Bind(h, "fake_sdk_marker", &a.marker);
    Bind(h, "fake_sdk_marker_raw", &a.marker_raw);
    Bind(h, "fake_sdk_context_active", &a.context_active);
    Bind(h, "fake_sdk_configured_kinds", &a.configured_kinds);
    Bind(h, "fake_sdk_client_id_corrupted", &a.client_id_corrupted);
    Bind(h, "fake_sdk_configure_calls", &a.configure_calls);
    Bind(h, "fake_sdk_initialize_calls", &a.initialize_calls);
    Bind(h, "fake_sdk_tool_finalize_calls", &a.tool_finalize_calls);
    Bind(h, "fake_sdk_client_finalize_calls", &a.client_finalize_calls);
    Bind(h, "fake_sdk_client_name", &a.client_name);
    Bind(h, "fake_sdk_finalize", &a.finalize);
    for (void* p :
         {(void*)a.get_version, (void*)a.get_version_triplet, (void*)a.is_initialized,
          (void*)a.is_finalized, (void*)a.force_configure, (void*)a.create_context,
          (void*)a.configure_callback, (void*)a.start_context, (void*)a.stop_context,
          (void*)a.context_is_active, (void*)a.context_is_valid, (void*)a.get_timestamp,
          (void*)a.get_thread_id, (void*)a.status_name, (void*)a.status_string, (void*)a.marker,
          (void*)a.marker_raw, (void*)a.context_active, (void*)a.configured_kinds,
          (void*)a.client_id_corrupted, (void*)a.configure_calls, (void*)a.initialize_calls,
          (void*)a.tool_finalize_calls, (void*)a.client_finalize_calls, (void*)a.client_name,
          (void*)a.finalize}) {
      if (p == nullptr) {
        w.error = "a fake SDK symbol is missing";
        return false;
      }
    }

    if (Mode() == "early_roctx") {  // a roctx call before the tool is configured
      if (!BindRoctx(Env("FAKE_ROCTX_PATH"), false, &w.roctx, &w.error)) return false;
      w.roctx.MarkA("too early");
      w.early_roctx_state = w.roctx.sdk_state();
    }

    // Before configuring: setup calls are locked.
    a.is_initialized(&w.pre_is_init);
    w.pre_create_handle = 0;
    w.pre_create_status = a.create_context(&w.pre_create_handle);
    w.pre_configure_status =
        a.configure_callback(1000, kMarkerCore, nullptr, 0, Callback(), nullptr);

    w.force_status = a.force_configure(&ToolConfigure);

    a.is_initialized(&w.post_is_init);
    uint64_t late = 0;
    w.post_create_status = a.create_context(&late);
    w.post_configure_status =
        a.configure_callback(w.ctx, kMarkerName + 2, nullptr, 0, Callback(), nullptr);
    w.second_force = a.force_configure(&ToolConfigure);

    if (Mode() != "early_roctx") {
      if (!BindRoctx(Env("FAKE_ROCTX_PATH"), false, &w.roctx, &w.error)) return false;
    }
    if (!BindRoctx(Env("FAKE_ROCTX_LEGACY_PATH"), true, &w.legacy, &w.error)) return false;
    TakeSeen();  // nothing replayed yet; start clean
    return true;
  }();
  g_world.loaded = once;
  return g_world;
}

#define REQUIRE_WORLD()                    \
  const World& w = W();                    \
  ASSERT_TRUE(w.loaded) << w.error;        \
  const Api& a = w.api;                    \
  (void)a

#define REQUIRE_CONFIGURED()                                                     \
  REQUIRE_WORLD();                                                               \
  if (Mode() == "locked") GTEST_SKIP() << "the SDK is owned by someone else";    \
  ASSERT_EQ(w.force_status, 0)

// ---------------------------------------------------------------------------------------------

TEST(FakeSdk, ExportsTheApiButNotRocprofilerConfigure) {
  REQUIRE_WORLD();
  EXPECT_EQ(a.configure_symbol, nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "rocprofiler_configure"), nullptr);
}

TEST(FakeSdk, VersionFromEnvironment) {
  REQUIRE_WORLD();
  const uint32_t v = EnvVersion();
  uint32_t major = 99, minor = 99, patch = 99;
  EXPECT_EQ(a.get_version(&major, &minor, &patch), 0);
  EXPECT_EQ(major, v / 10000);
  EXPECT_EQ(minor, (v / 100) % 100);
  EXPECT_EQ(patch, v % 100);
  uint32_t triplet[3] = {99, 99, 99};
  if (Is7()) {
    EXPECT_EQ(a.get_version_triplet(triplet), 0);
    EXPECT_EQ(triplet[0], major);
    EXPECT_EQ(triplet[1], minor);
    EXPECT_EQ(triplet[2], patch);
  } else {
    EXPECT_NE(a.get_version_triplet(triplet), 0) << "no triplet before 7.0";
  }
}

TEST(FakeSdk, LockedByAnotherOwner) {
  REQUIRE_WORLD();
  if (Mode() != "locked") GTEST_SKIP() << "only with FAKE_ROCPROFILER_LOCKED=1";
  EXPECT_EQ(w.pre_is_init, 1);
  EXPECT_EQ(w.force_status, Locked());
  EXPECT_EQ(w.configure_seen, 0);
  EXPECT_EQ(a.configure_calls(), 0);
  EXPECT_EQ(a.initialize_calls(), 0);
  EXPECT_EQ(w.post_create_status, Locked());
  EXPECT_EQ(a.context_active(), 0);
}

TEST(FakeSdk, ConfigureArgumentsAndClientIdLayout) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.configure_seen, 1);
  EXPECT_EQ(a.configure_calls(), 1);
  EXPECT_EQ(w.configure_version, EnvVersion());
  EXPECT_EQ(w.runtime_version, "fake-rocprofiler-sdk");
  EXPECT_EQ(w.priority, 0u);
  const unsigned char* id = w.client_id_at_entry;
  if (Is7()) {
    EXPECT_EQ(At<uint64_t>(id, 0), 24u) << "7.x client_id.size";
    EXPECT_EQ(At<uint64_t>(id, 8), 0u) << "7.x client_id.name";
    EXPECT_EQ(At<uint32_t>(id, 16), 0u) << "7.x client_id.handle";
  } else {
    EXPECT_EQ(At<uint64_t>(id, 0), 0u) << "6.x client_id.name";
    EXPECT_EQ(At<uint32_t>(id, 8), 0u) << "6.x client_id.handle";
  }
  char name[64] = {};
  a.client_name(name, sizeof(name));
  if (Mode() == "wrong_client_id") {
    EXPECT_EQ(a.client_id_corrupted(), 1) << "name written at the other layout's offset";
    EXPECT_STREQ(name, "");
  } else {
    EXPECT_EQ(a.client_id_corrupted(), 0);
    EXPECT_STREQ(name, "fake-sdk-test");
  }
}

TEST(FakeSdk, InitializeRunsSynchronouslyWithInitStatusMinusOne) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.pre_is_init, 0);
  EXPECT_EQ(w.initialize_seen, 1);
  EXPECT_EQ(a.initialize_calls(), 1);
  EXPECT_EQ(w.init_is_init, -1);
  EXPECT_EQ(w.post_is_init, 1);
  EXPECT_EQ(w.tool_data_at_init, &g_tool_data);
  EXPECT_NE(w.fini, nullptr);
  EXPECT_EQ(w.create_status, 0);
  EXPECT_EQ(w.ctx, 1000u);
  EXPECT_EQ(w.start_status, 0);
  EXPECT_STREQ(getenv("ROCPROFILER_REGISTER_FORCE_LOAD"), "1");
}

TEST(FakeSdk, ConfigurationLockedCodePerVersion) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.second_force, Locked());
  EXPECT_EQ(w.nested_force, Locked()) << "force_configure from inside initialize";
  EXPECT_STREQ(a.status_name(Locked()), "ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED");
}

TEST(FakeSdk, SetupCallsOutsideInitializeAreRejected) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.pre_create_status, Locked());
  EXPECT_EQ(w.pre_create_handle, NoneHandle()) << "create_context writes NONE first";
  EXPECT_EQ(w.pre_configure_status, Locked());
  EXPECT_EQ(w.post_create_status, Locked());
  EXPECT_EQ(w.post_configure_status, Locked());
}

TEST(FakeSdk, ServiceStatusCodes) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.cfg_core, 0);
  EXPECT_EQ(w.cfg_control, 0);
  EXPECT_EQ(w.cfg_name, 0);
  EXPECT_EQ(w.cfg_code_object, 0);
  EXPECT_EQ(w.cfg_core_again, AlreadyConfigured());
  EXPECT_STREQ(a.status_name(AlreadyConfigured()),
               "ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED");
  EXPECT_EQ(w.cfg_none, 4) << "kind NONE";
  EXPECT_EQ(w.cfg_kind99, 4);
  EXPECT_EQ(w.cfg_bad_ctx, 2);
  EXPECT_EQ(w.cfg_bad_op, 5);
}

TEST(FakeSdk, ContextIdNotZeroOnlyFrom63) {
  REQUIRE_CONFIGURED();
  if (EnvVersion() >= 500) {
    EXPECT_EQ(w.create_nonzero_status, 13);
    EXPECT_EQ(w.create_nonzero_out, 42u) << "rejected before touching the id";
    EXPECT_STREQ(a.status_name(13), "ROCPROFILER_STATUS_ERROR_CONTEXT_ID_NOT_ZERO");
  } else {
    EXPECT_EQ(w.create_nonzero_status, 0) << "6.2 has no CONTEXT_ID_NOT_ZERO";
    EXPECT_EQ(w.create_nonzero_out, 1001u);
    EXPECT_STREQ(a.status_name(13), "ROCPROFILER_STATUS_ERROR_BUFFER_BUSY");
  }
}

TEST(FakeSdk, MarkerCoreRangeKindOnlyOn70) {
  REQUIRE_CONFIGURED();
  int kinds[8] = {};
  const int n = a.configured_kinds(kinds, 8);
  if (Is7()) {
    EXPECT_EQ(w.cfg_range, 0);
    ASSERT_EQ(n, 5);
    EXPECT_EQ(kinds[4], kMarkerRange);
  } else {
    EXPECT_EQ(w.cfg_range, 4);
    ASSERT_EQ(n, 4);
  }
  EXPECT_EQ(kinds[0], kMarkerCore);
  EXPECT_EQ(kinds[1], kMarkerControl);
  EXPECT_EQ(kinds[2], kMarkerName);
  EXPECT_EQ(kinds[3], kCodeObject);
}

TEST(FakeSdk, StatusNamesAndStrings) {
  REQUIRE_WORLD();
  EXPECT_STREQ(a.status_name(0), "ROCPROFILER_STATUS_SUCCESS");
  EXPECT_STREQ(a.status_name(2), "ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND");
  EXPECT_STREQ(a.status_name(4), "ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND");
  EXPECT_STREQ(a.status_name(InvalidArgument()), "ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT");
  EXPECT_STREQ(a.status_string(0), "Success");
  EXPECT_NE(a.status_string(Locked()), nullptr);
  EXPECT_EQ(a.status_name(-1), nullptr);
  EXPECT_EQ(a.status_name(999), nullptr);
  EXPECT_EQ(a.status_string(999), nullptr);
  if (EnvVersion() < 500) {
    EXPECT_STREQ(a.status_name(37), "ROCPROFILER_STATUS_ERROR_EXCEEDS_HW_LIMIT");
    EXPECT_EQ(a.status_name(38), nullptr);
  } else {
    EXPECT_STREQ(a.status_name(40), "ROCPROFILER_STATUS_ERROR_PERMISSION_DENIED");
  }
}

TEST(FakeSdk, RecordLayoutAndPayloadOffsets) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  const char* msg = "push-msg";
  EXPECT_EQ(a.marker(kMarkerCore, 1, kEnter, msg, 0, 0), 1);
  EXPECT_EQ(a.marker(kMarkerCore, 1, kExit, msg, 0, 3), 1);
  const auto seen = TakeSeen();
  ASSERT_EQ(seen.size(), 2u);
  for (const Seen& s : seen) {
    EXPECT_EQ(s.context_id, w.ctx);
    EXPECT_EQ(s.thread_id, Gettid());
    EXPECT_EQ(s.external, 0u);
    EXPECT_EQ(s.ancestor, 0u);
    EXPECT_EQ(s.kind, kMarkerCore);
    EXPECT_EQ(s.op, 1);
    EXPECT_EQ(s.cb_data, &g_cb_data_tag);
    ASSERT_TRUE(s.has_payload);
    EXPECT_EQ(At<uint64_t>(s.payload, 0), 32u) << "payload size";
    EXPECT_EQ(At<const char*>(s.payload, 8), msg) << "message @8 is the caller's pointer";
    EXPECT_EQ(s.message, "push-msg");
  }
  EXPECT_EQ(seen[0].phase, kEnter);
  EXPECT_EQ(seen[1].phase, kExit);
  EXPECT_EQ(At<int32_t>(seen[0].payload, 24), 0) << "retval zero at ENTER";
  EXPECT_EQ(At<int32_t>(seen[1].payload, 24), 3) << "int32 retval @24 at EXIT";
}

TEST(FakeSdk, PayloadPerOperation) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  int stream_obj = 0;
  a.marker(kMarkerCore, 3, kExit, "start", 0, int64_t{1} << 40);  // RangeStartA -> u64 id
  a.marker(kMarkerCore, 4, kExit, nullptr, 77, 0);                 // RangeStop(id)
  a.marker(kMarkerCore, 2, kExit, nullptr, 0, -1);                 // RangePop underflow
  a.marker(kMarkerCore, 0, kExit, "mark", 0, 5);                   // MarkA: void
  a.marker(kMarkerName, 2, kExit, "gpu0", 3, 0);                   // NameHipDevice
  a.marker(kMarkerName, 3, kExit, "s", reinterpret_cast<uintptr_t>(&stream_obj), 0);
  EXPECT_EQ(a.marker(kMarkerControl, 0, kExit, nullptr, 9, 0), 0) << "Pause filtered out";
  EXPECT_EQ(a.marker(kMarkerControl, 1, kExit, nullptr, 9, 0), 1) << "Resume subscribed";
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[0].message, "start");
  EXPECT_EQ(At<uint64_t>(s[0].payload, 24), uint64_t{1} << 40);
  EXPECT_EQ(At<uint64_t>(s[1].payload, 8), 77u);
  EXPECT_EQ(At<uint64_t>(s[1].payload, 24), 0u);
  EXPECT_EQ(At<uint64_t>(s[2].payload, 24), 0x00000000FFFFFFFFull) << "int32 -1 in a u64 union";
  EXPECT_EQ(s[3].message, "mark");
  EXPECT_EQ(At<uint64_t>(s[3].payload, 24), 0u) << "void retval zeroed";
  EXPECT_EQ(s[4].message, "gpu0");
  EXPECT_EQ(At<int32_t>(s[4].payload, 16), 3);
  EXPECT_EQ(s[5].message, "s");
  EXPECT_EQ(At<const void*>(s[5].payload, 16), &stream_obj);
  EXPECT_EQ(s[6].kind, kMarkerControl);
  EXPECT_EQ(s[6].op, 1);
  EXPECT_EQ(At<uint64_t>(s[6].payload, 8), 9u);
}

TEST(FakeSdk, EnterExitShareCorrelationAndUserData) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  a.marker(kMarkerCore, 1, kEnter, "outer", 0, 0);
  a.marker(kMarkerCore, 0, kEnter, "inner", 0, 0);
  a.marker(kMarkerCore, 0, kExit, "inner", 0, 0);
  a.marker(kMarkerCore, 1, kExit, "outer", 0, 0);
  a.marker(kMarkerCore, 1, kEnter, "next", 0, 0);
  a.marker(kMarkerCore, 1, kExit, "next", 0, 0);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].internal, s[3].internal);
  EXPECT_EQ(s[1].internal, s[2].internal);
  EXPECT_EQ(s[4].internal, s[5].internal);
  EXPECT_NE(s[0].internal, s[1].internal);
  EXPECT_NE(s[0].internal, s[4].internal);
  EXPECT_NE(s[0].internal, 0u);
  for (int enter : {0, 1, 4}) {
    const int exit = enter == 0 ? 3 : enter == 1 ? 2 : 5;
    EXPECT_EQ(s[enter].user_data_at_entry, 0u) << "fresh slot at ENTER";
    EXPECT_EQ(s[exit].user_data, s[enter].user_data) << "same slot at EXIT";
    EXPECT_EQ(s[exit].user_data_at_entry, 0x5EED000000000000ull | s[enter].internal);
  }
}

TEST(FakeSdk, CorrelationIsPerThread) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  uint64_t other_tid = 0;
  a.marker(kMarkerCore, 1, kEnter, "main", 0, 0);
  std::thread t([&] {
    other_tid = Gettid();
    a.marker(kMarkerCore, 1, kEnter, "worker", 0, 0);
    a.marker(kMarkerCore, 1, kExit, "worker", 0, 0);
  });
  t.join();
  a.marker(kMarkerCore, 1, kExit, "main", 0, 0);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[1].thread_id, other_tid);
  EXPECT_EQ(s[1].internal, s[2].internal);
  EXPECT_EQ(s[0].internal, s[3].internal) << "the worker's pair does not disturb main's";
  EXPECT_NE(s[0].internal, s[1].internal);
  EXPECT_EQ(s[3].thread_id, Gettid());
  uint64_t tid = 0;
  EXPECT_EQ(a.get_thread_id(&tid), 0);
  EXPECT_EQ(tid, Gettid());
}

TEST(FakeSdk, StartStopGatesDelivery) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  int active = -1, valid = -1;
  EXPECT_EQ(a.context_is_active(w.ctx, &active), 0);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(a.context_is_valid(w.ctx, &valid), 0);
  EXPECT_EQ(valid, 1);
  EXPECT_EQ(a.context_is_active(w.ctx + 777, &active), 2);
  EXPECT_EQ(active, 0);

  EXPECT_EQ(a.stop_context(w.ctx), 0);
  EXPECT_EQ(a.context_is_active(w.ctx, &active), 0);
  EXPECT_EQ(active, 0);
  EXPECT_EQ(a.context_active(), 0);
  EXPECT_EQ(a.marker(kMarkerCore, 0, kEnter, "stopped", 0, 0), 0);
  EXPECT_EQ(a.marker(kMarkerCore, 0, kExit, "stopped", 0, 0), 0);
  EXPECT_TRUE(TakeSeen().empty());

  EXPECT_EQ(a.start_context(w.ctx), 0);
  EXPECT_EQ(a.context_active(), 1);
  EXPECT_EQ(a.marker(kMarkerCore, 0, kEnter, "started", 0, 0), 1);
  EXPECT_EQ(a.marker(kMarkerCore, 0, kExit, "started", 0, 0), 1);
  EXPECT_EQ(TakeSeen().size(), 2u);
  EXPECT_EQ(a.start_context(w.ctx + 777), 2);
  EXPECT_EQ(a.marker(5 /* HIP_RUNTIME_API, not subscribed */, 0, 0, nullptr, 0, 0), 0);
}

TEST(FakeSdk, RawRecordsPassThroughByValue) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  unsigned char bytes[64];
  for (size_t i = 0; i < sizeof(bytes); ++i) bytes[i] = static_cast<unsigned char>(0xC0 + i);
  const size_t size = Is7() ? 64 : 56;
  const size_t kind_off = Is7() ? 40 : 32;
  const int32_t kind = 12345, op = -7, phase = 3;
  std::memcpy(bytes + kind_off, &kind, 4);
  std::memcpy(bytes + kind_off + 4, &op, 4);
  std::memcpy(bytes + kind_off + 8, &phase, 4);
  EXPECT_EQ(a.marker_raw(kCodeObject, bytes, size + 8), 0) << "wrong size: dropped";
  EXPECT_EQ(a.marker_raw(kCodeObject, bytes, Is7() ? 56 : 64), 0) << "other layout: dropped";
  EXPECT_EQ(a.marker_raw(kCodeObject, bytes, size), 1);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].context_id, At<uint64_t>(bytes, 0));
  EXPECT_EQ(s[0].thread_id, At<uint64_t>(bytes, 8));
  EXPECT_EQ(s[0].internal, At<uint64_t>(bytes, 16));
  EXPECT_EQ(s[0].external, At<uint64_t>(bytes, 24));
  if (Is7()) {
    EXPECT_EQ(s[0].ancestor, At<uint64_t>(bytes, 32));
  }
  EXPECT_EQ(s[0].kind, kind);
  EXPECT_EQ(s[0].op, op);
  EXPECT_EQ(s[0].phase, phase);
  EXPECT_EQ(s[0].user_data_at_entry, 0u);
  EXPECT_EQ(s[0].cb_data, &g_raw_tag);
}

TEST(FakeSdk, RoctxForwardsThroughTheSdk) {
  REQUIRE_CONFIGURED();
  const Roctx& r = w.roctx;
  ASSERT_NE(r.RangePushA, nullptr);
  TakeSeen();
  if (Mode() == "early_roctx") {
    // The first roctx call came before force_configure: no tool was indicated then, and roctx
    // never re-registers, so nothing reaches the tool afterwards either.
    EXPECT_EQ(w.early_roctx_state, 0);
    EXPECT_EQ(r.sdk_state(), 0);
    r.RangePushA("late");
    r.RangePop();
    EXPECT_TRUE(TakeSeen().empty());
    return;
  }
  EXPECT_EQ(r.sdk_state(), -1) << "no roctx call yet";
  const int level = r.RangePushA("fwd");
  EXPECT_EQ(r.sdk_state(), 1);
  EXPECT_EQ(r.RangePop(), level);
  const uint64_t id = r.RangeStartA("range");
  r.RangeStop(id);
  uint64_t tid = 0;
  EXPECT_EQ(r.GetThreadId(&tid), 0);
  EXPECT_EQ(r.NameHipDevice("dev", 2), 0);
  EXPECT_EQ(r.ProfilerPause(0), 0);   // filtered: kind 8 subscribed for Resume only
  EXPECT_EQ(r.ProfilerResume(0), 0);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 14u);
  struct Want {
    int kind, op;
  } want[] = {{7, 1}, {7, 2}, {7, 3}, {7, 4}, {7, 5}, {9, 2}, {8, 1}};
  for (size_t i = 0; i < 7; ++i) {
    const Seen& enter = s[2 * i];
    const Seen& exit = s[2 * i + 1];
    EXPECT_EQ(enter.kind, want[i].kind) << i;
    EXPECT_EQ(enter.op, want[i].op) << i;
    EXPECT_EQ(enter.phase, kEnter) << i;
    EXPECT_EQ(exit.kind, want[i].kind) << i;
    EXPECT_EQ(exit.op, want[i].op) << i;
    EXPECT_EQ(exit.phase, kExit) << i;
    EXPECT_EQ(enter.internal, exit.internal) << i;
    EXPECT_EQ(enter.thread_id, Gettid()) << i;
  }
  EXPECT_EQ(s[0].message, "fwd");
  EXPECT_EQ(At<int32_t>(s[1].payload, 24), level);
  EXPECT_EQ(At<int32_t>(s[3].payload, 24), level) << "Pop's retval";
  EXPECT_EQ(s[4].message, "range");
  EXPECT_EQ(At<uint64_t>(s[5].payload, 24), id);
  EXPECT_EQ(At<uint64_t>(s[6].payload, 8), id) << "RangeStop's id";
  EXPECT_EQ(At<uint64_t*>(s[8].payload, 8), &tid) << "GetThreadId's u64* tid";
  EXPECT_EQ(s[10].message, "dev");
  EXPECT_EQ(At<int32_t>(s[11].payload, 16), 2);
}

TEST(FakeSdk, LegacyRoctxNeverForwards) {
  REQUIRE_CONFIGURED();
  const Roctx& l = w.legacy;
  TakeSeen();
  l.RangePushA("legacy");
  l.RangePop();
  l.MarkA("legacy");
  EXPECT_TRUE(TakeSeen().empty());
  EXPECT_EQ(l.sdk_state(), -1);
}

TEST(FakeSdk, TimestampsAreClockBoottime) {
  REQUIRE_WORLD();
  struct timespec t0, t1;
  clock_gettime(CLOCK_BOOTTIME, &t0);
  uint64_t ts = 0;
  EXPECT_EQ(a.get_timestamp(&ts), 0);
  clock_gettime(CLOCK_BOOTTIME, &t1);
  const uint64_t lo = t0.tv_sec * 1000000000ull + t0.tv_nsec;
  const uint64_t hi = t1.tv_sec * 1000000000ull + t1.tv_nsec;
  EXPECT_GE(ts, lo);
  EXPECT_LE(ts, hi);
}

// Last: finalization ends the configured state for the rest of the process.
TEST(FakeSdkZ, ClientFinalizeRunsToolFinalizeOnce) {
  REQUIRE_CONFIGURED();
  ASSERT_NE(w.fini, nullptr);
  if (Is7()) {
    ClientId7 id{sizeof(ClientId7), "fake-sdk-test", 0};
    reinterpret_cast<void (*)(ClientId7)>(w.fini)(id);
  } else {
    ClientId6 id{"fake-sdk-test", 0};
    reinterpret_cast<void (*)(ClientId6)>(w.fini)(id);
  }
  EXPECT_EQ(a.client_finalize_calls(), 1);
  EXPECT_EQ(a.client_id_corrupted(), Mode() == "wrong_client_id" ? 1 : 0)
      << "the by-value client_id arrived intact";
  EXPECT_EQ(g_tool_finalize_seen, 1);
  EXPECT_EQ(g_tool_finalize_data, &g_tool_data);
  EXPECT_EQ(a.tool_finalize_calls(), 1);
  int fini = -1;
  EXPECT_EQ(a.is_finalized(&fini), 0);
  EXPECT_EQ(fini, 1);
  EXPECT_EQ(a.context_active(), 0);
  EXPECT_EQ(a.start_context(w.ctx), Locked()) << "no start after finalization";
  EXPECT_EQ(a.stop_context(w.ctx), 0);
  TakeSeen();
  EXPECT_EQ(a.marker(kMarkerCore, 0, 0, "after", 0, 0), 0);
  a.finalize();
  EXPECT_EQ(g_tool_finalize_seen, 1) << "finalize runs once";
}

}  // namespace
