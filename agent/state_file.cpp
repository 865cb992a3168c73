#include "agent/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ker::agent {

namespace {

std::string failure(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Writes all of `text` to `fd`, syncs it and closes it; "" or what failed.
std::string writeSyncClose(int fd, const std::string& text, const std::string& path) {
  std::string error;
  for (size_t done = 0; done < text.size() && error.empty();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) {
      error = failure("cannot write", path);
    } else if (n > 0) {
      done += static_cast<size_t>(n);
    }
  }
  if (error.empty() && ::fsync(fd) != 0) {
    error = failure("cannot sync", path);
  }
  if (::close(fd) != 0 && error.empty()) {
    error = failure("cannot close", path);
  }
  return error;
}

}  // namespace

Status readWholeFile(const std::string& path, size_t maxBytes, std::optional<std::string>& out) {
  out.reset();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? Status{} : Status::internal(failure("cannot open", path));
  }
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno != EINTR) {
      const Status st = Status::internal(failure("cannot read", path));
      ::close(fd);
      return st;
    }
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    }
    if (text.size() > maxBytes) {
      ::close(fd);
      return Status::invalid(path + " is larger than " + std::to_string(maxBytes) + " bytes");
    }
  }
  ::close(fd);
  out = std::move(text);
  return {};
}

std::string stateFilePath(const std::string& dir, const std::string& name) {
  return dir + "/" + name;
}

Status writeStateFile(const std::string& dir, const std::string& name, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::internal("cannot create " + dir + ": " + ec.message());
  }
  const std::string path = stateFilePath(dir, name);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::internal(failure("cannot create", tmp));
  }
  std::string error = writeSyncClose(fd, text, tmp);
  if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = failure("cannot rename " + tmp + " to", path);
  }
  if (!error.empty()) {
    ::unlink(tmp.c_str());
    return Status::internal(error);
  }
  // The rename is durable once the folder is synced.
  const int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0 || ::fsync(dirFd) != 0) {
    const Status st = Status::internal(failure("cannot sync", dir));
    if (dirFd >= 0) {
      ::close(dirFd);
    }
    return st;
  }
  ::close(dirFd);
  return {};
}

}  // namespace ker::agent
