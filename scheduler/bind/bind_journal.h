#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/api_client.h"
#include "model/objects.h"
#include "scheduler/cache/device_index.h"

namespace ker {

// What one bind attempt wrote, in order, so that a failed attempt can be put back. A write is
// entered when it is sent and settled by the API's answer: applied (the journal keeps the
// object as stored, newest resourceVersion included, for the undo to write over) or refused
// (dropped). A write that got no definite answer (transport error, timeout, 5xx) stays
// unconfirmed: it may still have been applied, and the undo reads the object back to see.
// At most one write is unconfirmed, the last: an attempt stops at its first failed step.
// Not thread-safe; one per attempt.
class BindJournal {
 public:
  explicit BindJournal(std::string podUid) : podUid_(std::move(podUid)) {}

  // A device write giving the device to the claim with UID claimUid, about to be sent.
  void deviceSent(const std::string& name, const std::string& claimUid);
  // A claim write binding the claim to the pod with these devices, about to be sent: `sent` is
  // the claim as written.
  void claimSent(const ExtendedResourceClaim& sent, std::vector<std::string> devices);
  // A rewrite of a claim an earlier call bound to the pod, about to be sent so that call's
  // undo conflicts. Unless refused, it counts as done (a lost reply may have landed): the undo
  // then leaves the claim bound, with all its devices, even those this attempt bound again.
  void reuseSent(const std::string& claimUid);
  // A write adding the pod to the holders of a shareable claim allocated to other pods, about
  // to be sent (`sent`, the claim as written). Its undo takes the pod out of the holders again,
  // and leaves the devices.
  void joinSent(const ExtendedResourceClaim& sent);

  // The write sent last was applied; `written` is the object as the API stored it.
  void applied(ExtendedResource written);
  void applied(ExtendedResourceClaim written);
  void reuseApplied();
  // The write sent last was refused (4xx): nothing was written.
  void refused();
  // A device bound back to a claim that lists it, entered only once applied. Were its reply
  // lost it would not be read back: landed or not, that write left nothing the claim does not
  // already say.
  void rebound(ExtendedResource written);

  // The devices the attempt is known to have written, oldest first.
  std::vector<ExtendedResource> devices() const;

  // Puts back what the attempt wrote, newest first: the claims to Pending (a joined claim
  // without the pod among its holders), then the devices to Available, except those a claim's
  // write put back frees already (freedByClaim: the claim's release frees its devices, as the
  // controller's does); writes that fail are logged and left. Claims go first so that every claim
  // kept is known before a device is freed: a claim that could not be put back keeps its devices
  // (it may be another call's now, one that rewrote it to bind the pod with it, and otherwise the
  // controller's repair releases the claim and its devices together), and so does a claim the
  // attempt reused. Restored devices go into the index. Returns the number of writes made.
  uint64_t undo(ApiClient& api, DeviceIndex& index, SystemTime now);

 private:
  bool heldThroughClaim(ApiClient& api, const ExtendedResource& device) const;

  enum class Kind { kDevice, kClaim, kReuse, kJoin };
  struct Entry {
    Kind kind;
    bool confirmed = false;  // applied; else sent without a definite answer
    // kDevice: the device's name. kClaim, kJoin: the claim's namespace and name.
    std::string ns;
    std::string name;
    // kDevice: the claim the device was given to. kReuse: the claim reused.
    std::string claimUid;
    std::vector<std::string> devices;  // kClaim: the devices it was bound with
    // kClaim, kJoin: the claim's status.bindRewrites as written. Another call that rewrote the
    // claim to bind the same pod (reuseClaim) counted it up, so a claim read back with another
    // count is that call's, not this one's.
    int64_t bindRewrites = 0;
    // Once confirmed, the object as the API stored it.
    std::optional<ExtendedResource> device;
    std::optional<ExtendedResourceClaim> claim;
  };

  Entry& add(Kind kind);  // a new entry, unconfirmed
  // Settles an unconfirmed last write by reading the object back: kept when the read shows it
  // applied, dropped otherwise.
  void readBack(ApiClient& api);

  const std::string podUid_;
  std::vector<Entry> entries_;
};

}  // namespace ker
