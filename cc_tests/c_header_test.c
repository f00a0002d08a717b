/* roctx_utils.h from plain C11: the header compiles as C (its layout static asserts included)
 * and the struct_size contract works from C. Not googletest: exit status 0 is the pass. */
#include <stdio.h>
#include <string.h>

#include "roctx_utils/roctx_utils.h"

static int failures = 0;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

int main(void) {
  roctx_utils_counters counters;
  memset(&counters, 0, sizeof(counters));
  CHECK(roctx_utils_counters_get(&counters) == ROCTX_UTILS_INVALID_ARGUMENT);
  counters.struct_size = sizeof(counters);
  CHECK(roctx_utils_counters_get(&counters) == ROCTX_UTILS_OK);
  CHECK(counters.struct_size == sizeof(counters));
  CHECK(counters.panics_caught == 0);

  roctx_utils_session_options options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.mode = ROCTX_UTILS_CAPTURE_IN_PROCESS;
  CHECK(roctx_utils_session_start(&options) == ROCTX_UTILS_OK);
  roctx_utils_mark("from_c");
  roctx_utils_snapshot* snapshot = NULL;
  CHECK(roctx_utils_session_stop(&snapshot) == ROCTX_UTILS_OK);
  CHECK(roctx_utils_snapshot_event_count(snapshot) == 1);
  roctx_utils_event event;
  memset(&event, 0, sizeof(event));
  event.struct_size = sizeof(event);
  CHECK(roctx_utils_snapshot_event(snapshot, 0, &event) == ROCTX_UTILS_OK);
  CHECK(event.kind == ROCTX_UTILS_EVENT_MARK);
  CHECK(event.label_len == 6 && memcmp(event.label, "from_c", 6) == 0);
  roctx_utils_capture_stats stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  CHECK(roctx_utils_snapshot_stats(snapshot, &stats) == ROCTX_UTILS_OK);
  CHECK(stats.recorded == 1);
  roctx_utils_snapshot_free(snapshot);

  if (failures == 0) printf("c_header_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
