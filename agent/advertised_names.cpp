#include "agent/advertised_names.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/container_shares.h"

namespace ker::agent {

namespace {

constexpr const char* kFileName = "advertised-names.json";
constexpr const char* kKey = "extendedResourceNames";

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

AdvertisedNames::AdvertisedNames(std::string dir)
    : dir_(std::move(dir)), path_(dir_ + "/" + kFileName) {}

Status AdvertisedNames::load(std::set<std::string>& out) const {
  out.clear();
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? Status{} : Status::internal(failure("cannot open", path_));
  }
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno != EINTR) {
      const Status st = Status::internal(failure("cannot read", path_));
      ::close(fd);
      return st;
    }
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  auto garbled = [&](const std::string& why) {
    return Status::invalid(path_ + " is not the agent's record of advertised names: " + why);
  };
  if (doc.is_discarded()) {
    return garbled("not JSON");
  }
  const auto names = doc.is_object() ? doc.find(kKey) : doc.end();
  if (names == doc.end() || !names->is_array()) {
    return garbled(std::string("no array \"") + kKey + "\"");
  }
  std::set<std::string> read;
  for (const auto& name : *names) {
    // A name that is not an extended resource's (cpu, say) is never the agent's to remove.
    if (!name.is_string() || !isExtendedResourceName(name.get<std::string>())) {
      return garbled("not an extended resource name: " + name.dump());
    }
    read.insert(name.get<std::string>());
  }
  out = std::move(read);
  return {};
}

Status AdvertisedNames::store(const std::set<std::string>& names) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    return Status::internal("cannot create " + dir_ + ": " + ec.message());
  }
  const std::string text = nlohmann::json{{kKey, names}}.dump() + "\n";
  const std::string tmp = path_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::internal(failure("cannot create", tmp));
  }
  std::string error = writeSyncClose(fd, text, tmp);
  if (error.empty() && ::rename(tmp.c_str(), path_.c_str()) != 0) {
    error = failure("cannot rename " + tmp + " to", path_);
  }
  if (!error.empty()) {
    ::unlink(tmp.c_str());
    return Status::internal(error);
  }
  // The rename is durable once the folder is synced.
  const int dirFd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0 || ::fsync(dirFd) != 0) {
    const Status st = Status::internal(failure("cannot sync", dir_));
    if (dirFd >= 0) {
      ::close(dirFd);
    }
    return st;
  }
  ::close(dirFd);
  return {};
}

}  // namespace ker::agent
