#pragma once

namespace ker::testsupport {

// A TCP port on 127.0.0.1 that nothing listens on right now and that this process has not
// handed out before, for a child process to bind.
int freePort();

}  // namespace ker::testsupport
