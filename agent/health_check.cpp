#include "agent/health_check.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ker::agent {

namespace {

using Clock = std::chrono::steady_clock;

std::string firstLine(const std::string& out) {
  std::string line = out.substr(0, out.find('\n'));
  return line.size() > 200 ? line.substr(0, 200) + "…" : line;
}

}  // namespace

CheckResult runHealthCheck(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env,
                           std::chrono::milliseconds timeout) {
  if (argv.empty()) {
    return {false, "health check has no command"};
  }
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return {false, std::string("health check: pipe: ") + std::strerror(errno)};
  }
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<std::string> envStrings;
  for (char** e = environ; *e != nullptr; ++e) {
    envStrings.emplace_back(*e);
  }
  for (const auto& [k, v] : env) {
    envStrings.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& e : envStrings) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return {false, std::string("health check: fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      ::dup2(devnull, STDIN_FILENO);
    }
    // The agent blocks SIGTERM and SIGINT in all its threads; the check must not inherit that.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(out[1]);
  const auto deadline = Clock::now() + timeout;
  std::string output;
  bool timedOut = false;
  char buf[512];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timedOut = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      continue;  // re-checks the deadline
    }
    ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n <= 0) {
      break;  // every writer closed: the command (and its children) are done with the pipe
    }
    if (output.size() < 4096) {
      output.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(out[0]);
  int status = 0;
  if (timedOut) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return {false, "health check timed out after " + std::to_string(timeout.count()) + "ms"};
  }
  // The pipe closed; the process exits at once (or has), so this wait is short. Bounded anyway.
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return {false, "health check timed out after " + std::to_string(timeout.count()) + "ms"};
    }
    ::usleep(1000);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return {true, {}};
  }
  std::string why = WIFEXITED(status)
                        ? "health check exited with " + std::to_string(WEXITSTATUS(status))
                        : "health check killed by signal " + std::to_string(WTERMSIG(status));
  const std::string line = firstLine(output);
  return {false, line.empty() ? why : why + ": " + line};
}

}  // namespace ker::agent
