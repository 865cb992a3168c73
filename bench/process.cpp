#include "bench/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ker::bench {

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
    pid_ = -1;
    return false;
  }
  return true;
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
    pid_ = -1;
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
