#include "test/soak/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ker::soak {

namespace {

// The soak blocks SIGINT and SIGTERM and ignores SIGPIPE; both survive exec, and a child with
// SIGTERM blocked could not be stopped gracefully, so children start with neither.
void resetSignalsInChild() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, nullptr);
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

}  // namespace

Process::Process(std::string binary, std::vector<std::string> args, std::string logFile)
    : binary_(std::move(binary)), args_(std::move(args)), logFile_(std::move(logFile)) {}

Process::~Process() {
  stop();
}

void Process::start(const std::map<std::string, std::string>& env) {
  if (running()) {
    throw std::logic_error(binary_ + " is already running");
  }
  std::vector<std::string> argStore{binary_};
  argStore.insert(argStore.end(), args_.begin(), args_.end());
  std::vector<std::string> envStore;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) {
      envStore.push_back(std::move(kv));
    }
  }
  for (const auto& [k, v] : env) {
    envStore.push_back(k + "=" + v);
  }
  // Everything the child touches is prepared here: between fork and exec only
  // async-signal-safe calls are allowed.
  auto argv = pointers(argStore);
  auto envp = pointers(envStore);
  int log = open(logFile_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    throw std::runtime_error("cannot open " + logFile_ + ": " + std::strerror(errno));
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {  // the soak died before prctl took effect
      _exit(127);
    }
    resetSignalsInChild();
    int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(log, 1);
    dup2(log, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(log);
  pid_ = pid;
  lastStatus_.reset();
}

bool Process::running() {
  if (pid_ <= 0) {
    return false;
  }
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    lastStatus_ = status;
    pid_ = -1;
    return false;
  }
  return true;
}

void Process::signal(int sig) const {
  if (pid_ > 0) {
    ::kill(pid_, sig);
  }
}

void Process::waitExit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Process::stop(std::chrono::milliseconds grace) {
  if (!running()) {
    return;
  }
  signal(SIGCONT);  // a paused child could not act on SIGTERM
  signal(SIGTERM);
  waitExit(grace);
  kill();
}

void Process::kill() {
  if (!running()) {
    return;
  }
  signal(SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  lastStatus_ = status;
  pid_ = -1;
}

std::string Process::logTail(size_t bytes) const {
  std::ifstream in(logFile_, std::ios::binary | std::ios::ate);
  if (!in) {
    return "(no log)";
  }
  const auto size = static_cast<size_t>(in.tellg());
  in.seekg(static_cast<std::streamoff>(size > bytes ? size - bytes : 0));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int runCommand(const std::vector<std::string>& argv, const std::string& logFile) {
  std::vector<std::string> store = argv;
  auto args = pointers(store);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &pipe);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) {
    return "exit " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return "status " + std::to_string(status);
}

}  // namespace ker::soak
