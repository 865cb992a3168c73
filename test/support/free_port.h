#pragma once

namespace ker::testsupport {

// A TCP port on 127.0.0.1 that nothing listens on right now, for a child process to bind.
int freePort();

}  // namespace ker::testsupport
