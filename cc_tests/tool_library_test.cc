// libroctx_utils_tool.so as rocprofiler-sdk loads it into a stock HIP process: the fake SDK plays
// the real one's tool discovery (ROCP_TOOL_LIBRARIES and its parsing quirk, configure ->
// initialize -> finalize in priority order, per-version failure handling) for the record layout
// FAKE_ROCPROFILER_VERSION selects; stock_hip_host (plain C, HIP and roctx only) is the process.
// Each case runs the host as a child with its own environment and reads what was written. The
// rows themselves are checked by XProf in scripts/test.sh (run_record); here, that the right
// names reached the file.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern char** environ;

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string Absolute(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  std::string out = real ? real : path;
  free(real);
  return out;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct HostRun {
  int exit_code = -1;  // -1 when killed
  int signal = 0;
  std::string err;
};

// Runs stock_hip_host with the test's environment minus every roctx_utils / SDK variable, plus
// `env`; stderr is captured.
HostRun RunHost(const std::map<std::string, std::string>& env, const std::string& dir,
            const char* arg = nullptr) {
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string var(*e);
    if (var.rfind("ROCTX_UTILS_", 0) == 0 || var.rfind("ROCP", 0) == 0 ||
        var.rfind("GGML_", 0) == 0 || var.rfind("XLA_ROCM", 0) == 0) {
      continue;
    }
    vars.push_back(var);
  }
  vars.push_back("FAKE_ROCPROFILER_TRACE_TOOLS=1");
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  const std::string host = Absolute(Env("STOCK_HOST_PATH"));
  const std::string err_path = dir + "/stderr.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* err = std::freopen(err_path.c_str(), "w", stderr);
    (void)err;
    if (chdir(dir.c_str()) != 0) _exit(126);
    char* argv[] = {const_cast<char*>(host.c_str()), const_cast<char*>(arg), nullptr};
    execve(host.c_str(), argv, envp.data());
    _exit(127);
  }
  HostRun run;
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  run.err = Slurp(err_path);
  return run;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = Env("TEST_TMPDIR") + "/" + name;
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

// The .xplane.pb files under <logdir>/plugins/profile/<run>/.
std::vector<std::string> XSpaces(const std::string& logdir) {
  std::vector<std::string> out;
  const std::string profile = logdir + "/plugins/profile";
  DIR* runs = opendir(profile.c_str());
  if (!runs) return out;
  while (dirent* run = readdir(runs)) {
    if (run->d_name[0] == '.') continue;
    const std::string rundir = profile + "/" + run->d_name;
    if (DIR* files = opendir(rundir.c_str())) {
      while (dirent* f = readdir(files)) {
        const std::string name = f->d_name;
        if (name.size() > 10 && name.substr(name.size() - 10) == ".xplane.pb") {
          out.push_back(rundir + "/" + name);
        }
      }
      closedir(files);
    }
  }
  closedir(runs);
  return out;
}

// Lines "fake rocprofiler-sdk: <step> <priority> <origin>..." reduced to "<step> <priority>".
std::vector<std::string> ToolSteps(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    const std::string prefix = "fake rocprofiler-sdk: ";
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream words(line.substr(prefix.size()));
    std::string step, priority;
    words >> step >> priority;
    if (step == "configure" || step == "initialize" || step == "finalize") {
      out.push_back(step + " " + priority);
    }
  }
  return out;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

class ToolLibrary : public ::testing::Test {
 protected:
  std::string tool = Absolute(Env("TOOL_PATH"));
  std::string other = Absolute(Env("OTHER_TOOL_PATH"));
  std::string sdk = Absolute(Env("FAKE_SDK_PATH"));

  std::map<std::string, std::string> Base(const std::string& dir) {
    return {
        {"ROCPROFILER_REGISTER_LIBRARY", sdk},
        {"ROCTX_UTILS_XSPACE_OUT", dir + "/logs"},
        {"ROCTX_UTILS_RUN_NAME", "run1"},
        {"GGML_ROOFLINE_OUT", dir + "/roofline.json"},
    };
  }

  // One XSpace with every name the host's work must leave, kernels demangled as c++filt does.
  void ExpectFullCapture(const std::string& dir) {
    const auto files = XSpaces(dir + "/logs");
    ASSERT_EQ(files.size(), 1u) << "log directory " << dir << "/logs";
    const std::string xspace = Slurp(files[0]);
    for (const char* name :
         {"step 0", "forward 0", "backward 0", "step 1", "forward 1", "backward 2", "done 2",
          "void gemm<0>(float const*, float*, int)", "void gemm<2>(float const*, float*, int)",
          "void reduce<1>(float*)", "MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "/host:CPU", "/ROCTX",
          "/device:GPU:0"}) {
      EXPECT_NE(xspace.find(name), std::string::npos) << "no " << name << " in " << files[0];
    }
    EXPECT_EQ(xspace.find("_Z4gemmILi0EEvPKfPfi"), std::string::npos) << "a mangled kernel name";
    const std::string report = Slurp(dir + "/roofline.json");
    EXPECT_NE(report.find('{'), std::string::npos) << "no roofline report at " << dir;
  }
};

TEST_F(ToolLibrary, AloneInTheListCapturesRangesKernelsAndCopiesAndWritesAtFinalize) {
  const std::string dir = FreshDir("alone");
  auto env = Base(dir);
  env["ROCP_TOOL_LIBRARIES"] = tool;  // one path, no ':'
  const HostRun run = RunHost(env, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Joined(ToolSteps(run.err)), "configure 0, initialize 0, finalize 0") << run.err;
  ExpectFullCapture(dir);
}

TEST_F(ToolLibrary, TheFirstRoctxCallStartsDiscoveryAndIsCaptured) {
  const std::string dir = FreshDir("roctx_first");
  auto env = Base(dir);
  env["ROCP_TOOL_LIBRARIES"] = tool;
  const HostRun run = RunHost(env, dir, "roctx-first");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectFullCapture(dir);
  const auto files = XSpaces(dir + "/logs");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(Slurp(files[0]).find("start"), std::string::npos) << "the call that started discovery";
}

TEST_F(ToolLibrary, LivesWithAnotherToolInPriorityOrder) {
  const std::string dir = FreshDir("two_tools");
  auto env = Base(dir);
  env["ROCP_TOOL_LIBRARIES"] = other + ":" + tool + ":";  // the quirk: end the list with ':'
  env["OTHER_TOOL_OUT"] = dir + "/other.txt";
  const HostRun run = RunHost(env, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Joined(ToolSteps(run.err)),
            "configure 0, configure 1, initialize 0, initialize 1, finalize 0, finalize 1")
      << run.err;
  ExpectFullCapture(dir);
  // 3 threads x 2 steps x 6 roctx calls (enter and exit each), plus 3 marks: the other tool saw
  // every marker too.
  const std::string other_out = Slurp(dir + "/other.txt");
  EXPECT_NE(other_out.find("priority=0 "), std::string::npos) << other_out;
  EXPECT_EQ(other_out.find("markers=0\n"), std::string::npos) << other_out;
}

TEST_F(ToolLibrary, AListNotEndedByAColonDropsItsLastLibrary) {
  // registration.cpp keeps only pieces a ':' ends: "other:ours" loads the other tool alone.
  // `roctx record` always ends the list with ':'.
  const std::string dir = FreshDir("quirk");
  auto env = Base(dir);
  env["ROCP_TOOL_LIBRARIES"] = other + ":" + tool;
  env["OTHER_TOOL_OUT"] = dir + "/other.txt";
  const HostRun run = RunHost(env, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Joined(ToolSteps(run.err)), "configure 0, initialize 0, finalize 0") << run.err;
  EXPECT_TRUE(XSpaces(dir + "/logs").empty());
}

TEST_F(ToolLibrary, DeclinesWithOneWarningWhenThereIsNothingToWrite) {
  const std::string dir = FreshDir("nothing");
  std::map<std::string, std::string> env = {{"ROCPROFILER_REGISTER_LIBRARY", sdk},
                                            {"ROCP_TOOL_LIBRARIES", tool}};
  const HostRun run = RunHost(env, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Joined(ToolSteps(run.err)), "configure 0") << run.err;
  EXPECT_NE(run.err.find("nothing would be written, so the tool declines"), std::string::npos)
      << run.err;
}

TEST_F(ToolLibrary, CaptureOffDeclines) {
  const std::string dir = FreshDir("off");
  auto env = Base(dir);
  env["ROCP_TOOL_LIBRARIES"] = tool;
  env["ROCTX_UTILS_CAPTURE"] = "off";
  const HostRun run = RunHost(env, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Joined(ToolSteps(run.err)), "configure 0") << run.err;
  EXPECT_TRUE(XSpaces(dir + "/logs").empty());
}

TEST_F(ToolLibrary, KernelsOffStillWritesRanges) {
  const std::string dir = FreshDir("kernels_off");
  auto env = Base(dir);
  env.erase("GGML_ROOFLINE_OUT");
  env["ROCP_TOOL_LIBRARIES"] = tool;
  env["ROCTX_UTILS_KERNELS"] = "0";
  const HostRun run = RunHost(env, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto files = XSpaces(dir + "/logs");
  ASSERT_EQ(files.size(), 1u) << run.err;
  const std::string xspace = Slurp(files[0]);
  EXPECT_NE(xspace.find("forward 1"), std::string::npos);
  EXPECT_EQ(xspace.find("gemm<1>"), std::string::npos) << "kernels were traced with KERNELS=0";
}

TEST_F(ToolLibrary, AListedLibraryThatDoesNotExistIsFatalIn7AndSkippedIn6) {
  // What `roctx record` guards against by checking its library before the command starts.
  const std::string dir = FreshDir("missing");
  auto env = Base(dir);
  env["ROCP_TOOL_LIBRARIES"] = dir + "/libnothing.so";
  const HostRun run = RunHost(env, dir);
  if (std::atoi(Env("FAKE_ROCPROFILER_VERSION").c_str()) >= 10000) {
    EXPECT_EQ(run.signal, SIGABRT) << run.err;
  } else {
    EXPECT_EQ(run.exit_code, 0) << run.err;
  }
}

}  // namespace
