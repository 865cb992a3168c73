#include "agent/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ker::agent {

namespace {

using Clock = std::chrono::steady_clock;

void killGroup(pid_t pid, int* status) {
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, status, 0);
}

}  // namespace

std::string CommandResult::describe(const std::string& what,
                                    std::chrono::milliseconds timeout) const {
  if (!startError.empty()) {
    return what + ": " + startError;
  }
  if (timedOut) {
    return what + " timed out after " + std::to_string(timeout.count()) + "ms";
  }
  if (exited) {
    return what + " exited with " + std::to_string(exitCode);
  }
  return what + " killed by signal " + std::to_string(signal);
}

CommandResult runCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const CommandOptions& options) {
  CommandResult result;
  if (argv.empty()) {
    result.startError = "no command";
    return result;
  }
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    result.startError = std::string("pipe: ") + std::strerror(errno);
    return result;
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
  const bool mergeStderr = options.stderrToOutput;

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    result.startError = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    if (mergeStderr) {
      ::dup2(out[1], STDERR_FILENO);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      ::dup2(devnull, STDIN_FILENO);
    }
    // The agent blocks SIGTERM and SIGINT in all its threads; the command must not inherit that.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(out[1]);
  const auto deadline = Clock::now() + options.timeout;
  char buf[4096];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      result.timedOut = true;
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
    const size_t room = options.maxOutput - std::min(options.maxOutput, result.output.size());
    const auto got = static_cast<size_t>(n);
    result.output.append(buf, std::min(room, got));
    result.truncated = result.truncated || got > room;
  }
  ::close(out[0]);
  int status = 0;
  if (result.timedOut) {
    killGroup(pid, &status);
    return result;
  }
  // The pipe closed; the process exits at once (or has), so this wait is short. Bounded anyway.
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      killGroup(pid, &status);
      result.timedOut = true;
      return result;
    }
    ::usleep(1000);
  }
  result.exited = WIFEXITED(status);
  result.exitCode = result.exited ? WEXITSTATUS(status) : 0;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result;
}

}  // namespace ker::agent
