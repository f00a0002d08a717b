// Issue 29: a run stopped by SIGINT, SIGTERM or a scheduler's time limit still writes what it
// captured, then ends as it would have without us. Each case is a forked child that sets its
// environment, records ranges in a loop (the library starts with the child's first range), says
// when it is under way, and is then signalled by the parent, which checks how it ended and what
// it left in ROCTX_UTILS_XSPACE_OUT (and, for the roofline report, at its path).
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cc_tests/capture_test_util.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace {

using capture_test::Contains;
using capture_test::ReadFile;
using capture_test::TmpDir;

// Every regular file under `dir`, recursively (hidden ones too: a temporary left behind shows).
void Files(const std::string& dir, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) Files(path, out);
    if (S_ISREG(st.st_mode)) out->push_back(path);
  }
  closedir(d);
}

std::vector<std::string> XspaceFiles(const std::string& dir) {
  std::vector<std::string> all, xspaces;
  Files(dir, &all);
  for (const auto& f : all) {
    if (f.size() > 10 && f.compare(f.size() - 10, 10, ".xplane.pb") == 0) xspaces.push_back(f);
  }
  return xspaces;
}

// Set by a handler and by the sigwait() thread, read by the stepping loop: a lock-free atomic is
// both async-signal-safe and race-free across threads (a volatile sig_atomic_t is only the first).
std::atomic<int> g_host_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);
void HostHandler(int sig) { g_host_signal.store(sig); }

struct Child {
  pid_t pid = -1;
  int ready_fd = -1;
};

// Forks a child that sets `env`, runs `before` (a host's own signal setup, before the library
// starts), then records steps until told to stop: "step_<n>" ranges, one every millisecond;
// `after_first` runs after the first (the library has started, with its threads). After 20
// steps it writes one byte to the parent. It ends by exit(0) once the host handler saw a signal
// (then one last range after it), else only by a signal.
Child Start(const std::vector<std::pair<std::string, std::string>>& env, const std::function<void()>& before = [] {},
            const std::function<void()>& after_first = [] {}) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(60);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    before();
    for (int i = 0;; ++i) {
      const std::string label = "step_" + std::to_string(i);
      tsl::profiler::RangePush(nullptr, label.c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      tsl::profiler::RangePop(nullptr);
      if (i == 0) after_first();
      if (i == 20) {
        char byte = 1;
        if (write(fds[1], &byte, 1) != 1) _exit(90);
      }
      if (g_host_signal.load() != 0) {
        tsl::profiler::RangePush(nullptr, "after_the_host_handler");
        tsl::profiler::RangePop(nullptr);
        std::exit(0);  // the host carries on to a normal exit: the exit hooks write
      }
    }
  }
  close(fds[1]);
  return {pid, fds[0]};
}

bool WaitReady(const Child& c) {
  char byte = 0;
  return c.pid > 0 && read(c.ready_fd, &byte, 1) == 1;
}

// How the child ended: (exited?, exit code or signal); waits at most `limit`.
std::pair<bool, int> Ended(const Child& c, std::chrono::milliseconds limit = std::chrono::milliseconds(20000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(c.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &status, 0);
      return {false, -1};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(c.ready_fd);
  if (WIFEXITED(status)) return {true, WEXITSTATUS(status)};
  if (WIFSIGNALED(status)) return {false, WTERMSIG(status)};
  return {false, -1};
}

std::vector<std::pair<std::string, std::string>> Env(const std::string& dir) {
  return {{"ROCTX_UTILS_XSPACE_OUT", dir}, {"ROCTX_UTILS_CAPTURE", "self"}};
}

// What a signal-time file must be: one XSpace, marked, holding the steps before the signal; no
// temporary left beside it.
void ExpectCutShort(const std::string& dir, const std::string& mark) {
  std::vector<std::string> all;
  Files(dir, &all);
  const std::vector<std::string> xspaces = XspaceFiles(dir);
  ASSERT_EQ(xspaces.size(), 1u) << "files: " << all.size();
  EXPECT_EQ(all.size(), 1u) << "a temporary or a second file was left: " << all.back();
  const std::string bytes = ReadFile(xspaces[0]);
  EXPECT_TRUE(Contains(bytes, "step_0"));
  EXPECT_TRUE(Contains(bytes, "step_20"));
  EXPECT_TRUE(Contains(bytes, mark)) << "not marked as cut short";
}

// Starts a child with `env`, signals it `times` times at once when it is under way, and
// expects it to end by `sig` within `limit`, leaving one file marked `mark`.
void SignalAndExpectCutShort(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& env, int sig,
                             const std::string& mark, int times = 1,
                             std::chrono::milliseconds limit = std::chrono::milliseconds(20000)) {
  const Child c = Start(env);
  ASSERT_TRUE(WaitReady(c));
  for (int i = 0; i < times; ++i) kill(c.pid, sig);
  EXPECT_EQ(Ended(c, limit), std::make_pair(false, sig));
  ExpectCutShort(dir, mark);
}

TEST(Signals, SigtermWritesWhatWasCapturedAndEndsByTheSignal) {
  const std::string dir = TmpDir("sigterm");
  SignalAndExpectCutShort(dir, Env(dir), SIGTERM, "cut short by SIGTERM");
}

TEST(Signals, SigintAndSighupToo) {
  for (int sig : {SIGINT, SIGHUP}) {
    const std::string dir = TmpDir(sig == SIGINT ? "sigint" : "sighup");
    SignalAndExpectCutShort(dir, Env(dir), sig, sig == SIGINT ? "cut short by SIGINT" : "cut short by SIGHUP");
  }
}

// A host that handles SIGINT itself (Python's KeyboardInterrupt, a trainer's checkpoint-and-exit):
// we write first, then its handler runs; it carries on to a normal exit, whose complete file
// replaces the snapshot (one file, with the range recorded after the handler, and no mark).
TEST(Signals, TheHostsOwnHandlerStillRunsAndItsExitWritesTheCompleteFile) {
  const std::string dir = TmpDir("host_handler");
  const Child c = Start(Env(dir), [] { signal(SIGINT, HostHandler); });
  ASSERT_TRUE(WaitReady(c));
  kill(c.pid, SIGINT);
  EXPECT_EQ(Ended(c), std::make_pair(true, 0)) << "the host's handler did not run";
  const std::vector<std::string> xspaces = XspaceFiles(dir);
  ASSERT_EQ(xspaces.size(), 1u);
  const std::string bytes = ReadFile(xspaces[0]);
  EXPECT_TRUE(Contains(bytes, "after_the_host_handler"));
  EXPECT_FALSE(Contains(bytes, "cut short")) << "the exit's complete file replaces the snapshot";
}

// A signal the process ignores stays ignored (nohup): the run goes on.
TEST(Signals, AnIgnoredSignalStaysIgnored) {
  const std::string dir = TmpDir("ignored");
  const Child c = Start(Env(dir), [] { signal(SIGHUP, SIG_IGN); });
  ASSERT_TRUE(WaitReady(c));
  kill(c.pid, SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(waitpid(c.pid, nullptr, WNOHANG), 0) << "SIGHUP ended a process that ignores it";
  EXPECT_TRUE(XspaceFiles(dir).empty());
  kill(c.pid, SIGTERM);
  EXPECT_EQ(Ended(c), std::make_pair(false, SIGTERM));
  ExpectCutShort(dir, "cut short by SIGTERM");
}

TEST(Signals, SignalsOffInstallsNothing) {
  const std::string dir = TmpDir("signals_off");
  auto env = Env(dir);
  env.push_back({"ROCTX_UTILS_SIGNALS", "0"});
  const Child c = Start(env);
  ASSERT_TRUE(WaitReady(c));
  kill(c.pid, SIGTERM);
  EXPECT_EQ(Ended(c), std::make_pair(false, SIGTERM));
  EXPECT_TRUE(XspaceFiles(dir).empty());
}

// Slurm at its time limit: SIGTERM, then SIGKILL after a grace period (2 s here). The write is
// done well within it: the process ends by the SIGTERM, not the SIGKILL.
TEST(Signals, SlurmsSigtermThenSigkillAfterTwoSeconds) {
  const std::string dir = TmpDir("slurm");
  // Past the grace period Ended() sends the SIGKILL (and the test fails).
  SignalAndExpectCutShort(dir, Env(dir), SIGTERM, "cut short by SIGTERM", 1, std::chrono::milliseconds(2000));
}

// The same signal twice at once (`timeout` or a terminal's Ctrl-C signals the whole process
// group: a command under `roctx record` gets it directly and passed on) is one signal: the write
// is not cut off by its own duplicate. (A second one a second or more into the write ends the
// process at once.)
TEST(Signals, TheSameSignalTwiceAtOnceIsWrittenForOnce) {
  const std::string dir = TmpDir("twice");
  SignalAndExpectCutShort(dir, Env(dir), SIGTERM, "cut short by SIGTERM", 2);
}

// Issue 40: a host that blocks SIGTERM in its threads and takes it with sigwait(), the POSIX way
// for threaded programs, after the library started its threads. Ours block every asynchronous
// signal, so SIGTERM waits for the host's sigwait() (before: the kernel gave it to a thread of
// ours, whose handler ended the process). The host then exits normally: one complete file.
TEST(Signals, AHostsSigwaitGetsSigtermAfterOurThreadsStarted) {
  const std::string dir = TmpDir("sigwait");
  const Child c = Start(Env(dir), [] {}, [] {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);  // this thread and the one it starts
    std::thread([term] {
      int sig = 0;
      if (sigwait(&term, &sig) == 0) g_host_signal.store(sig);
    }).detach();
  });
  ASSERT_TRUE(WaitReady(c));
  kill(c.pid, SIGTERM);
  EXPECT_EQ(Ended(c), std::make_pair(true, 0)) << "SIGTERM did not reach the host's sigwait()";
  const std::vector<std::string> xspaces = XspaceFiles(dir);
  ASSERT_EQ(xspaces.size(), 1u);
  const std::string bytes = ReadFile(xspaces[0]);
  EXPECT_TRUE(Contains(bytes, "after_the_host_handler"));
  EXPECT_FALSE(Contains(bytes, "cut short"));
}

// roctx_utils_flush() from a signal handler (issue 40). While the library starts (the first
// call, with its one-time lock held by the interrupted thread) it deadlocked for good: now it
// never starts the library and never writes itself. Ten children, each signalled every 50 us
// through its first call (until it returns: after start-up each flush is a whole snapshot),
// then a few more, all end.
void FlushingHandler(int) { roctx_utils_flush(); }

TEST(Signals, FlushFromAHandlerDuringStartUpNeverHangs) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A handler that interrupted the sanitizer's allocator holding its lock stalls its flush the
  // whole 10 s (our writer needs that lock): three children keep the test within its time.
  constexpr int kRuns = 3;
#else
  constexpr int kRuns = 10;
#endif
  for (int run = 0; run < kRuns; ++run) {
    const std::string dir = TmpDir("flush_in_handler_" + std::to_string(run));
    fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(60);
      for (const auto& [k, v] : Env(dir)) setenv(k.c_str(), v.c_str(), 1);
      signal(SIGUSR2, FlushingHandler);
      const pthread_t main_thread = pthread_self();
      std::atomic<bool> started{false};
      std::thread spammer([&] {
        while (!started.load()) {
          pthread_kill(main_thread, SIGUSR2);
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        for (int i = 0; i < 5; ++i) pthread_kill(main_thread, SIGUSR2);
      });
      tsl::profiler::RangePush(nullptr, "start_up");  // the first call: start-up
      started.store(true);
      tsl::profiler::RangePop(nullptr);
      spammer.join();
      for (int i = 0; i < 20; ++i) {
        tsl::profiler::RangePush(nullptr, "after");
        tsl::profiler::RangePop(nullptr);
      }
      _exit(0);
    }
    Child c{pid, -1};
    EXPECT_EQ(Ended(c, std::chrono::milliseconds(30000)), std::make_pair(true, 0)) << "run " << run;
  }
}

// After start-up: a host's SIGTERM handler that flushes and then leaves (_exit) used to write in
// signal context and hang (13 minutes seen, the watchdog busy): now the flush asks our thread and
// waits, and the process ends with the host's status.
void FlushThenExitSeven(int) {
  roctx_utils_flush();
  _exit(7);
}

TEST(Signals, AHostHandlerThatFlushesThenExitsEnds) {
  const std::string dir = TmpDir("flush_then_exit");
  const Child c = Start(Env(dir), [] { signal(SIGTERM, FlushThenExitSeven); });
  ASSERT_TRUE(WaitReady(c));
  kill(c.pid, SIGTERM);
  EXPECT_EQ(Ended(c, std::chrono::milliseconds(25000)), std::make_pair(true, 7));
  const std::vector<std::string> xspaces = XspaceFiles(dir);
  ASSERT_EQ(xspaces.size(), 1u);
  EXPECT_TRUE(Contains(ReadFile(xspaces[0]), "step_20"));
}

// A handler the host installs after start-up (Python's signal.signal in a trainer) replaced ours,
// and its _exit skipped every write: within a second ours is put in front again, so the write
// comes first and the host's handler still runs (issue 40).
void ExitFive(int) { _exit(5); }

TEST(Signals, AHandlerInstalledAfterStartUpIsPutBehindOurs) {
  const std::string dir = TmpDir("late_handler");
  const Child c = Start(Env(dir), [] {}, [] { signal(SIGTERM, ExitFive); });
  ASSERT_TRUE(WaitReady(c));
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));  // REARM_EVERY is 1 s
  kill(c.pid, SIGTERM);
  EXPECT_EQ(Ended(c), std::make_pair(true, 5)) << "the host's handler did not run";
  ExpectCutShort(dir, "cut short by SIGTERM");
}

// ROCTX_UTILS_FLUSH_EVERY: a rolling snapshot, so a SIGKILL (no handler runs) loses at most the
// last period. One file per process, replaced whole.
TEST(Signals, APeriodicSnapshotSurvivesSigkill) {
  const std::string dir = TmpDir("periodic");
  auto env = Env(dir);
  env.push_back({"ROCTX_UTILS_FLUSH_EVERY", "1"});
  const Child c = Start(env);
  ASSERT_TRUE(WaitReady(c));
  std::this_thread::sleep_for(std::chrono::milliseconds(2600));
  kill(c.pid, SIGKILL);
  EXPECT_EQ(Ended(c), std::make_pair(false, SIGKILL));
  ExpectCutShort(dir, "snapshot while the process ran (ROCTX_UTILS_FLUSH_EVERY)");
}

// SIGUSR1 writes now and the run goes on; roctx_utils_flush() does the same from code.
TEST(Signals, Sigusr1AndTheFlushCallWriteNow) {
  const std::string dir = TmpDir("usr1");
  const Child c = Start(Env(dir));
  ASSERT_TRUE(WaitReady(c));
  kill(c.pid, SIGUSR1);
  std::vector<std::string> xspaces;
  for (int i = 0; i < 400 && xspaces.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    xspaces = XspaceFiles(dir);
  }
  ASSERT_EQ(xspaces.size(), 1u);
  EXPECT_EQ(waitpid(c.pid, nullptr, WNOHANG), 0) << "SIGUSR1 ended the run";
  EXPECT_TRUE(Contains(ReadFile(xspaces[0]), "snapshot on request"));
  kill(c.pid, SIGTERM);
  EXPECT_EQ(Ended(c), std::make_pair(false, SIGTERM));
  ExpectCutShort(dir, "cut short by SIGTERM");  // the same file, replaced

  const std::string dir2 = TmpDir("flush_call");
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : Env(dir2)) setenv(k.c_str(), v.c_str(), 1);
    tsl::profiler::RangePush(nullptr, "step_0");
    tsl::profiler::RangePop(nullptr);
    const int first = roctx_utils_flush();
    const bool written = XspaceFiles(dir2).size() == 1;
    _exit(first == ROCTX_UTILS_OK && written ? 0 : 1);  // _exit: no exit write after it
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::vector<std::string> flushed = XspaceFiles(dir2);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_TRUE(Contains(ReadFile(flushed[0]), "snapshot on request"));

  // With ROCTX_UTILS_SIGNALS=0 (no handler) the call still writes; before the library started
  // it writes nothing and does not start it.
  const std::string dir3 = TmpDir("flush_call_signals_off");
  fflush(nullptr);
  const pid_t pid3 = fork();
  if (pid3 == 0) {
    for (const auto& [k, v] : Env(dir3)) setenv(k.c_str(), v.c_str(), 1);
    setenv("ROCTX_UTILS_SIGNALS", "0", 1);
    const int before_start = roctx_utils_flush();
    tsl::profiler::RangePush(nullptr, "step_0");
    tsl::profiler::RangePop(nullptr);
    const int after_start = roctx_utils_flush();
    _exit(before_start == ROCTX_UTILS_NOT_RUNNING && after_start == ROCTX_UTILS_OK ? 0 : 10 + before_start);
  }
  ASSERT_EQ(waitpid(pid3, &status, 0), pid3);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << WEXITSTATUS(status);
  EXPECT_EQ(XspaceFiles(dir3).size(), 1u);
}

}  // namespace
