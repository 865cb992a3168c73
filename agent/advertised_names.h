#pragma once

#include <set>
#include <string>

#include "common/status.h"

namespace ker::agent {

// The extended resource names the agent has advertised on its Node, kept in a file of the node
// (<dir>/advertised-names.json) so that an agent that restarts still knows which names are its
// to remove: a device plugin's never are, so a name the agent does not know stays.
class AdvertisedNames {
 public:
  explicit AdvertisedNames(std::string dir);

  // The names the file holds into `out`: none when there is no file (nothing advertised yet).
  // An unreadable or garbled file leaves `out` empty and says why: the agent wrote it whole
  // (store), so such a file is not its record and nothing in it is trusted.
  Status load(std::set<std::string>& out) const;
  // Replaces the file with `names`, atomically (a temporary file synced, then renamed over it),
  // creating the folder when missing: a crash leaves the old record or the new, never a mix.
  Status store(const std::set<std::string>& names) const;

  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

}  // namespace ker::agent
