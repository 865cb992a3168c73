#include "test/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ker::testsupport {

namespace {

// The pids of the running children, for stopChildrenOnSignal.
std::mutex& childrenMu() {
  static std::mutex mu;
  return mu;
}

std::set<int>& children() {
  static std::set<int> pids;
  return pids;
}

// The soak and the bench block SIGINT and SIGTERM, the soak and the tests ignore SIGPIPE; both
// survive exec, and a child with SIGTERM blocked could not be stopped gracefully, so children
// start with neither.
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

ChildProcess::ChildProcess(std::string binary, std::vector<std::string> args, std::string logFile,
                           ChildProcessOptions options)
    : binary_(std::move(binary)),
      args_(std::move(args)),
      logFile_(std::move(logFile)),
      options_(options) {}

ChildProcess::~ChildProcess() {
  stop();
}

void ChildProcess::start(const std::map<std::string, std::string>& env) {
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
  const int log = open(logFile_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    throw std::runtime_error("cannot open " + logFile_ + ": " + std::strerror(errno));
  }
  // The child writes errno here when exec fails; a successful exec closes it unwritten, so
  // start() can throw like posix_spawn would.
  int execError[2];
  if (pipe2(execError, O_CLOEXEC) != 0) {
    close(log);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(log);
    close(execError[0]);
    close(execError[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(error));
  }
  if (pid == 0) {
    if (options_.dieWithParent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) {  // the parent died before prctl took effect
        _exit(127);
      }
    }
    resetSignalsInChild();
    const int in = open("/dev/null", O_RDONLY);
    if (in > 0) {
      dup2(in, 0);
      close(in);
    }
    dup2(log, 1);
    dup2(log, 2);
    execve(argv[0], argv.data(), envp.data());
    const int error = errno;
    [[maybe_unused]] const auto sent = write(execError[1], &error, sizeof error);
    _exit(127);
  }
  close(log);
  close(execError[1]);
  int error = 0;
  ssize_t got;
  while ((got = read(execError[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  close(execError[0]);
  pid_ = pid;
  lastStatus_.reset();
  {
    std::lock_guard lock(childrenMu());
    children().insert(pid_);
  }
  if (got > 0) {
    wait();
    throw std::runtime_error("cannot execute " + binary_ + ": " + std::strerror(error));
  }
}

bool ChildProcess::running() {
  if (pid_ <= 0) {
    return false;
  }
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    ended(status);
    return false;
  }
  return true;
}

void ChildProcess::wait() {
  if (pid_ <= 0) {
    return;
  }
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  ended(status);
}

void ChildProcess::ended(int status) {
  lastStatus_ = status;
  std::lock_guard lock(childrenMu());
  children().erase(pid_);
  pid_ = -1;
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0) {
    ::kill(pid_, sig);
  }
}

void ChildProcess::stop(std::chrono::milliseconds grace) {
  if (!running()) {
    return;
  }
  signal(SIGCONT);  // a stopped child could not act on SIGTERM
  signal(SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill();
}

void ChildProcess::kill() {
  if (!running()) {
    return;
  }
  signal(SIGKILL);
  wait();
}

std::string ChildProcess::logTail(size_t bytes) const {
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

void stopChildrenOnSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    sigwait(&set, &sig);
    std::lock_guard lock(childrenMu());
    for (int pid : children()) {
      ::kill(pid, SIGTERM);
    }
    for (int pid : children()) {
      int status;
      waitpid(pid, &status, 0);
    }
    std::_Exit(128 + sig);
  }).detach();
}

}  // namespace ker::testsupport
