#pragma once

namespace ker {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it creates afterwards;
// call first thing in main, so no worker thread is interrupted by them.
void blockTerminationSignals();
// A peer that hangs up mid-reply makes a write fail with EPIPE instead of killing the process
// (TLS writes go through write(2), which raises SIGPIPE by default).
void ignoreBrokenPipes();
// Waits until SIGINT or SIGTERM arrives (after blockTerminationSignals) and returns it.
int waitForTerminationSignal();

}  // namespace ker
