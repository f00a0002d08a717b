// Stand-in for Abseil's absl/log/log.h: LOG(severity) << ... writes one line to stderr.
#ifndef ROCTX_UTILS_STAND_IN_ABSL_LOG_LOG_H_
#define ROCTX_UTILS_STAND_IN_ABSL_LOG_LOG_H_

#include <iostream>
#include <sstream>

namespace absl::stand_in {

class LogLine {
 public:
  explicit LogLine(const char* severity) { line_ << severity << ": "; }
  ~LogLine() { std::cerr << line_.str() << '\n'; }
  std::ostream& stream() { return line_; }

 private:
  std::ostringstream line_;
};

}  // namespace absl::stand_in

#define LOG(severity) ::absl::stand_in::LogLine(#severity).stream()

#endif  // ROCTX_UTILS_STAND_IN_ABSL_LOG_LOG_H_
