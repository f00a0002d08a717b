// RegisterString's bounds, with the pool capped at 16 KiB (ROCTX_UTILS_STRING_POOL_BYTES=16k):
// per-string truncation with a visible marker, then pool exhaustion with a visible sentinel, one
// warning, exact counters, and every handle issued before still valid and still returned.
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace tsl::profiler {
namespace {

// Longer than any room a ~100-byte label can leave, so it is rejected too.
const std::string kAnother = "another_new_label_" + std::string(200, '!');

const char* Text(StringHandle h) { return reinterpret_cast<const char*>(h); }

TEST(StringPool, LongStringsAreCutTo4096BytesWithAMarker) {
  const std::string huge(200000, 'x');
  StringHandle h = RegisterString(nullptr, huge);
  const std::string got = Text(h);
  EXPECT_EQ(got.size(), 4096u);
  EXPECT_EQ(got.substr(0, 4), "xxxx");
  EXPECT_EQ(got.substr(got.size() - 14), "...[truncated]");
  EXPECT_EQ(RegisterString(nullptr, huge), h);  // same input, same handle
  EXPECT_STREQ(Text(RegisterString(nullptr, std::string(4096, 'y'))), std::string(4096, 'y').c_str());
  roctx_utils_counters c{sizeof(roctx_utils_counters)};
  roctx_utils_counters_get(&c);
  EXPECT_EQ(c.strings_truncated, 2u);
}

TEST(StringPool, ExhaustionReturnsASentinelOnceFullAndKeepsOldHandles) {
  roctx_utils_counters before{sizeof(roctx_utils_counters)};
  roctx_utils_counters_get(&before);
  StringHandle first = RegisterString(nullptr, "kept_label");
  std::vector<StringHandle> handles;
  ::testing::internal::CaptureStderr();
  StringHandle sentinel = nullptr;
  int issued = 0;
  for (int i = 0; i < 1000 && sentinel == nullptr; ++i) {
    StringHandle h = RegisterString(nullptr, "label_" + std::to_string(i) + std::string(90, '.'));
    if (std::strncmp(Text(h), "label_", 6) != 0) {
      sentinel = h;
    } else {
      handles.push_back(h);
      ++issued;
    }
  }
  RegisterString(nullptr, kAnother);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(sentinel, nullptr) << "the pool never filled";
  EXPECT_STREQ(Text(sentinel), "<roctx_utils: annotation string pool exhausted>");
  EXPECT_EQ(RegisterString(nullptr, kAnother), sentinel);
  // Strings interned before the cap keep their handles and text.
  EXPECT_EQ(RegisterString(nullptr, "kept_label"), first);
  EXPECT_STREQ(Text(first), "kept_label");
  EXPECT_EQ(RegisterString(nullptr, "label_0" + std::string(90, '.')), handles.front());
  roctx_utils_counters after{sizeof(roctx_utils_counters)};
  roctx_utils_counters_get(&after);
  EXPECT_LE(after.string_pool_bytes, 16u * 1024);
  EXPECT_EQ(after.strings_interned - before.strings_interned, 1u + issued);
  EXPECT_EQ(after.strings_rejected - before.strings_rejected, 3u);  // sentinel x1 + "another" x2
  EXPECT_NE(err.find("pool is full"), std::string::npos) << err;
  EXPECT_NE(err.find("ROCTX_UTILS_STRING_POOL_BYTES"), std::string::npos) << err;
  EXPECT_EQ(err.find("pool is full", err.find("pool is full") + 1), std::string::npos) << err;
}

}  // namespace
}  // namespace tsl::profiler
