#include "bench/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ker::bench {

namespace {

std::mutex& childrenMu() {
  static std::mutex mu;
  return mu;
}

std::set<int>& children() {
  static std::set<int> pids;
  return pids;
}

}  // namespace

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
      kill(pid, SIGTERM);
    }
    for (int pid : children()) {
      int status;
      waitpid(pid, &status, 0);
    }
    std::_Exit(128 + sig);
  }).detach();
}

Process::Process(const std::string& binary, const std::vector<std::string>& args,
                 const std::string& logFile)
    : logFile_(logFile) {
  std::vector<std::string> store{binary};
  store.insert(store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : store) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    throw std::runtime_error("cannot start " + binary + ": error " + std::to_string(rc));
  }
  std::lock_guard lock(childrenMu());
  children().insert(pid_);
}

Process::~Process() {
  stop();
}

bool Process::running() {
  if (pid_ <= 0) {
    return false;
  }
  int status;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    forget();
    return false;
  }
  return true;
}

void Process::forget() {
  std::lock_guard lock(childrenMu());
  children().erase(pid_);
  pid_ = -1;
}

void Process::stop(std::chrono::milliseconds grace) {
  if (!running()) {
    return;
  }
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (running()) {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
    forget();
  }
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

Memory memoryOf(int pid) {
  Memory m;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    // Lines read "VmHWM:	  123456 kB".
    auto value = [&] { return std::stod(line.substr(line.find(':') + 1)) * 1024; };
    if (line.rfind("VmRSS:", 0) == 0) {
      m.rss = value();
    } else if (line.rfind("VmHWM:", 0) == 0) {
      m.peak = value();
    }
  }
  return m;
}

double cpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces: state is
  // field 3, utime and stime are fields 14 and 15.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) {
    return 0;
  }
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) {
      ticks += std::stod(field);
    }
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    throw std::runtime_error("socket() failed");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) {
    throw std::runtime_error("no free port on 127.0.0.1");
  }
  return ntohs(addr.sin_port);
}

}  // namespace ker::bench
