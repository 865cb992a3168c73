#pragma once

namespace ker {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it creates afterwards;
// call first thing in main, so no worker thread is interrupted by them.
void blockTerminationSignals();
// Waits until SIGINT or SIGTERM arrives (after blockTerminationSignals) and returns it.
int waitForTerminationSignal();

}  // namespace ker
