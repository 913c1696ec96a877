// Stopping a run from outside it: Ctrl-C in the Python module, or a C++
// program's own signal handler. Without a request nothing changes; a run
// checks one atomic flag between nodes and between loop steps (a relaxed
// load, no measurable cost).
#pragma once

#include <atomic>
#include <stdexcept>

namespace adgraph {

// Thrown by Session::run (and run_into) when request_interrupt() was
// called during the run: the run stops before its next node, or before
// the next step of the loop it is in, and its buffers are released as
// after any failed run (the session stays usable). A node that is
// running when the request comes finishes first. Not an adgraph::Error:
// it is not a mistake in the graph, and code that turns errors into
// outcomes lets it pass. The Python module raises KeyboardInterrupt for it.
class Interrupted final : public std::runtime_error {
 public:
  Interrupted();
};

// Asks every run of this process to stop at its next check (see
// Interrupted). Async-signal-safe (a lock-free atomic store), so a SIGINT
// handler may call it. The request stays until a run takes it (by
// throwing Interrupted) or take_interrupt_request() clears it.
void request_interrupt() noexcept;

// Whether a request is pending; clears it. For a signal handler's owner
// that must hand an unclaimed interrupt back (the Python module, when a
// run ended before any check saw it).
bool take_interrupt_request() noexcept;

namespace detail {

extern std::atomic<bool> interrupt_requested;

// Throws Interrupted if this call takes the pending request.
void take_interrupt_or_return();

// Throws Interrupted, taking the request, when one is pending. Called by
// the executor between nodes and by loops between steps.
inline void check_interrupt() {
  if (interrupt_requested.load(std::memory_order_relaxed)) [[unlikely]]
    take_interrupt_or_return();
}

}  // namespace detail
}  // namespace adgraph
