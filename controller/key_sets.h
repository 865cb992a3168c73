#pragma once

#include <map>
#include <set>
#include <string>

namespace ker {

// Sets of names under keys, a key kept only while its set is not empty: the inverse indexes
// the informers' handlers keep (device -> claims listing it, claim -> devices naming it,
// pod -> claims holding for it), which grow and shrink with every event and must not keep an
// empty entry for each key ever seen. Not thread-safe: the owner's lock guards it.
class KeySets {
 public:
  void add(const std::string& key, const std::string& name) { sets_[key].insert(name); }
  // Takes `name` out of `key`'s set. True when that emptied the set, so the key is gone.
  bool remove(const std::string& key, const std::string& name) {
    auto it = sets_.find(key);
    if (it == sets_.end() || it->second.erase(name) == 0 || !it->second.empty()) {
      return false;
    }
    sets_.erase(it);
    return true;
  }
  // The names under `key`; empty when it has none.
  std::set<std::string> of(const std::string& key) const {
    auto it = sets_.find(key);
    return it == sets_.end() ? std::set<std::string>{} : it->second;
  }
  bool contains(const std::string& key) const { return sets_.count(key) != 0; }

 private:
  std::map<std::string, std::set<std::string>> sets_;
};

}  // namespace ker
